//! The sliding windows' store: each key's windows together, in start order, changed in place.
//!
//! A key's windows are one `Windows` (`super::windows`): their starts (every window is `D`
//! long, so start order is end order too) and where each window's value lies in the key's one
//! byte buffer. A value is laid out as [`crate::state`] says (the window time, then the
//! aggregate state), the layout every store writes in snapshots.
//! A record reads and changes only its key's windows (`super::rule`): one hash probe for the
//! key, then a short contiguous run of windows, whose fixed-width states are folded in place.
//!
//! - **Transactions.** [`SlidingStore::begin`] opens an undo log (`super::undo`): a key's
//!   windows are saved from the record's `t - D` on when a record first changes them, and a
//!   key new to the store is noted. A rollback puts the saved windows back and forgets the new
//!   keys, so the store's snapshot is what it was before the call.
//! - **Expiry.** Store time is the largest window end put; a window ending before
//!   `store time - retention + 1` is expired. Commits sweep the expired windows out once store
//!   time has moved half a retention since the last sweep (as the session store drops a
//!   segment at a time); until then they are stored but never read, and a snapshot leaves them
//!   out and counts them as expired, as the session store does.
//! - **Due windows** (`final` mode). Every window not emitted yet has an entry in a queue by
//!   end (`super::due`), from which [`SlidingStore::take_due`] takes the windows that close, in
//!   (end, start, key) order. A rollback rebuilds the queue from the windows.

use std::collections::HashMap;

use crate::store::key_schema::{KeyedSession, Session};
use crate::store::key_table::{KeyId, KeyTable};
use crate::store::metrics::Counters;
use crate::store::snapshot_format::{self, Header, Table};
use crate::store::window_store::{retention_mismatch, WindowStore};
use crate::store::StoreMetrics;
use smallvec::SmallVec;

use super::due::Due;
use super::undo::Journal;
use super::windows::Windows;
use crate::{Error, Result, SessionStore};

/// The key id of a key the store does not hold ([`SlidingStore::key_ids`]).
pub(super) const NO_KEY: KeyId = KeyId::MAX;

/// The latest windows of a key that a read ahead brings in ([`SlidingStore::read_ahead`]): a
/// record in time order reads about twice the windows that a window holds records.
const TAIL_WINDOWS: usize = 32;

/// Stores holding fewer windows than this are not read ahead ([`SlidingStore::reads_ahead`]):
/// they stay mostly in the cache, where the reads ahead cost more than they save.
const READ_AHEAD_MIN_WINDOWS: u64 = 1 << 20;

/// Keys whose due windows are looked up after one read ahead ([`SlidingStore::take_due`]).
const READ_AHEAD_KEYS: usize = 16;

/// The sliding windows of every key (see the module doc).
#[derive(Debug)]
pub struct SlidingStore {
    /// The time difference: a window starting at `s` ends at `s + d`.
    d: i64,
    retention: i64,
    keys: KeyTable,
    /// Each key's windows, by key id (empty for a free id).
    by_key: Vec<Windows>,
    store_time: Option<i64>,
    /// Windows stored, expired ones not swept yet included.
    windows: u64,
    counters: Counters,
    /// Store time at the last sweep of expired windows.
    swept_at: Option<i64>,
    /// Whether the due queue is kept (`final` mode).
    tracks_due: bool,
    /// The windows ending at or after `due_from` (`final` mode: the processor's
    /// `emitted_below`), by end.
    due: Due,
    due_from: i64,
    /// The undo log, kept from call to call; `in_transaction` says whether it is open.
    journal: Journal,
    in_transaction: bool,
    /// The number of the open (or last) transaction.
    transaction: u64,
    bytes_written: u64,
    bytes_journaled: u64,
}

impl SlidingStore {
    /// An empty store of windows `d` long, kept `retention` ticks past store time; `tracks_due`
    /// keeps the queue of due windows (`final` mode).
    pub fn new(d: i64, retention: i64, tracks_due: bool) -> Result<Self> {
        if retention < 1 || d < 0 {
            return Err(Error::invalid(
                "retention",
                format!("must be positive (got {retention})"),
            ));
        }
        Ok(Self {
            d,
            retention,
            keys: KeyTable::default(),
            by_key: Vec::new(),
            store_time: None,
            windows: 0,
            counters: Counters::default(),
            swept_at: None,
            tracks_due,
            due: Due::new(retention),
            due_from: i64::MIN,
            journal: Journal::default(),
            in_transaction: false,
            transaction: 0,
            bytes_written: 0,
            bytes_journaled: 0,
        })
    }

    /// The time difference.
    #[inline]
    pub fn d(&self) -> i64 {
        self.d
    }

    /// The smallest window end still visible: `store_time - retention + 1`.
    #[inline]
    pub fn min_live_end(&self) -> i64 {
        self.store_time
            .map_or(i64::MIN, |t| t.saturating_sub(self.retention - 1))
    }

    /// The id and windows of `key`, if it has any.
    #[inline]
    pub(super) fn windows(&self, key: &[u8]) -> Option<(KeyId, &Windows)> {
        let id = self.keys.get(key)?;
        Some((id, &self.by_key[id as usize]))
    }

    /// The windows of `key` (`id` if the caller looked it up), to change from start `from` on:
    /// saved for undo as far back as that, and those ending before `drop_below` (expired, and
    /// emitted in `final` mode) dropped; a key new to the store is added. Returns the key's id
    /// and how many windows were dropped from the front.
    pub(super) fn windows_mut(
        &mut self,
        key: &[u8],
        id: Option<KeyId>,
        from: i64,
        drop_below: i64,
    ) -> Result<(KeyId, usize)> {
        let Some(id) = id else {
            let id = self.keys.acquire(key)?;
            if self.by_key.len() <= id as usize {
                self.by_key.resize_with(id as usize + 1, Windows::default);
            }
            self.by_key[id as usize] = Windows {
                // Nothing to save: a rollback forgets the key.
                saved_in: self.transaction,
                saved_from: i64::MIN,
                ..Windows::default()
            };
            if self.in_transaction {
                self.journal.new_key(id);
            }
            return Ok((id, 0));
        };
        let first_kept = drop_below.min(self.min_live_end()).saturating_sub(self.d);
        let w = &mut self.by_key[id as usize];
        if self.in_transaction {
            self.journal.save_from(self.transaction, id, w, from);
        }
        // Few windows expire at a time: counted from the front.
        let dropped = w.slots.iter().take_while(|s| s.start < first_kept).count();
        if dropped > 0 {
            if self.in_transaction {
                self.journal.save_front(id, w, dropped);
            }
            w.drop_before(first_kept);
            self.windows -= dropped as u64;
            self.counters.expired_sessions += dropped as u64;
        }
        Ok((id, dropped))
    }

    /// The id of each key of `keys` in the store, [`NO_KEY`] for a key it does not hold, in
    /// `ids`. The lookups are independent of one another, so their cache misses overlap.
    pub(super) fn key_ids(&self, keys: &arrow_row::Rows, ids: &mut Vec<KeyId>) {
        ids.clear();
        ids.extend(
            keys.iter()
                .map(|k| self.keys.get(k.as_ref()).unwrap_or(NO_KEY)),
        );
    }

    /// The number of the open transaction (of the last one, outside transactions).
    #[inline]
    pub(super) fn transaction(&self) -> u64 {
        self.transaction
    }

    /// The bytes of key `id`.
    pub(super) fn key_bytes(&self, id: KeyId) -> &[u8] {
        self.keys.bytes(id)
    }

    /// The windows of key `id` (from [`Self::key_ids`]).
    #[inline]
    pub(super) fn windows_of(&self, id: KeyId) -> &Windows {
        &self.by_key[id as usize]
    }

    /// Whether the store is large enough to read ahead: at least [`READ_AHEAD_MIN_WINDOWS`]
    /// windows, about 100 MB, several times the cache.
    #[inline]
    pub(super) fn reads_ahead(&self) -> bool {
        self.windows >= READ_AHEAD_MIN_WINDOWS
    }

    /// Reads the latest windows of the keys `ids` ([`NO_KEY`]: none), stage by stage across
    /// the keys (the lists, then their ends, then the values), so that the cache misses of
    /// different keys overlap; returns a number made of what it read, which means nothing: the
    /// caller hands it to [`std::hint::black_box`].
    pub(super) fn read_ahead(&self, ids: &[KeyId]) -> u64 {
        let mut tails: SmallVec<[&Windows; 32]> = SmallVec::new();
        let mut sum = 0u64;
        for &id in ids.iter().filter(|&&id| id != NO_KEY) {
            let w = &self.by_key[id as usize];
            // The first window too: a record drops the expired ones from the front.
            let first = w.slots.first().map_or(0, |s| s.start);
            sum = sum.wrapping_add(first as u64);
            tails.push(w);
        }
        // Four slots to a cache line.
        for w in &tails {
            let from = w.slots.len().saturating_sub(TAIL_WINDOWS);
            for s in w.slots[from..].iter().step_by(4) {
                sum = sum.wrapping_add(s.start as u64);
            }
        }
        for w in &tails {
            let from = w.slots.len().saturating_sub(TAIL_WINDOWS);
            if let (Some(first), Some(last)) = (w.slots.get(from), w.slots.last()) {
                let (lo, hi) = (
                    first.at.min(last.at) as usize,
                    (last.at + last.len) as usize,
                );
                for b in w.bytes[lo..hi.max(lo)].iter().step_by(64) {
                    sum = sum.wrapping_add(u64::from(*b));
                }
            }
        }
        sum
    }

    /// The windows of key `id`, after [`Self::windows_mut`].
    #[inline]
    pub(super) fn by_id(&mut self, id: KeyId) -> &mut Windows {
        &mut self.by_key[id as usize]
    }

    /// Counts `n` windows rewritten in place by a record.
    #[inline]
    pub(super) fn count_rewrites(&mut self, n: usize, bytes: usize) {
        self.counters.puts += n as u64;
        self.bytes_written += bytes as u64;
    }

    /// Puts window `start` of key `id` (after [`Self::windows_mut`]) with `value`; returns
    /// whether it is new. `emitted_below`: in `final` mode, the windows ending below it have
    /// been emitted, and a window put there never will be.
    pub(super) fn put(
        &mut self,
        id: KeyId,
        start: i64,
        value: &[u8],
        emitted_below: i64,
    ) -> Result<bool> {
        let end = start + self.d;
        if end < self.min_live_end() {
            // Unreachable: retention covers every window a non-late record can reach.
            return Err(Error::Internal(format!(
                "window [{start}, {end}] expired in the store although a record reached it"
            )));
        }
        let w = &mut self.by_key[id as usize];
        let new = w.put(start, value)?;
        self.counters.puts += 1;
        self.bytes_written += value.len() as u64;
        self.windows += u64::from(new);
        self.store_time = self.store_time.max(Some(end));
        if new && self.tracks_due && end >= emitted_below {
            self.due.push(end, id);
        }
        Ok(new)
    }

    /// Drops the expired windows of every key if store time has moved half a retention since
    /// the last sweep (outside transactions: see the module doc).
    fn sweep_if_due(&mut self) {
        let Some(now) = self.store_time.filter(|_| !self.in_transaction) else {
            return;
        };
        if self
            .swept_at
            .is_some_and(|at| now.saturating_sub(at) < (self.retention / 2).max(1))
        {
            return;
        }
        self.swept_at = Some(now);
        let first_live_start = self.min_live_end().saturating_sub(self.d);
        for id in 0..self.by_key.len() {
            let w = &mut self.by_key[id];
            if w.slots.first().is_none_or(|s| s.start >= first_live_start) {
                continue;
            }
            let n = w.drop_before(first_live_start) as u64;
            self.windows -= n;
            self.counters.expired_sessions += n;
            if w.slots.is_empty() {
                // The key goes, and its buffers with it.
                *w = Windows::default();
                self.keys.release(id as KeyId);
            }
        }
    }

    /// Expired windows still stored.
    fn expired_stored(&self) -> u64 {
        let first_live_start = self.min_live_end().saturating_sub(self.d);
        self.by_key
            .iter()
            .map(|w| w.first_from(first_live_start) as u64)
            .sum()
    }

    /// The live windows of key `id` whose end lies in `[from, to]`, as keyed windows.
    fn keyed(&self, id: KeyId, from: i64, to: i64) -> impl Iterator<Item = KeyedSession<'_>> {
        self.keyed_stored(id, from.max(self.min_live_end()), to)
    }

    /// The live keys' ids.
    fn live_ids(&self) -> impl Iterator<Item = KeyId> + '_ {
        (0..self.by_key.len() as KeyId).filter(|&id| !self.by_key[id as usize].slots.is_empty())
    }

    /// Every live window, ordered by key, then end, then start (what a snapshot holds).
    pub fn entries(&self) -> Vec<KeyedSession<'_>> {
        self.keys
            .sorted()
            .into_iter()
            .flat_map(|id| self.keyed(id, i64::MIN, i64::MAX))
            .collect()
    }

    fn end_transaction(&mut self) {
        self.in_transaction = false;
        self.bytes_journaled += self.journal.saved_bytes() as u64;
    }

    /// Reads the window lists and key bytes of the next [`READ_AHEAD_KEYS`] keys of `due`
    /// (sorted by key) together, so that their cache misses overlap; returns a number that
    /// means nothing, for [`std::hint::black_box`], and how many entries of `due` those keys
    /// have.
    fn read_lists_ahead(&self, due: &[(i64, KeyId)]) -> (u64, usize) {
        let (mut sum, mut keys, mut last) = (0u64, 0, NO_KEY);
        for (n, &(_, id)) in due.iter().enumerate() {
            if id == last {
                continue;
            }
            if keys == READ_AHEAD_KEYS {
                return (sum, n);
            }
            (keys, last) = (keys + 1, id);
            let w = &self.by_key[id as usize];
            let middle = w.slots.get(w.slots.len() / 3).map_or(0, |s| s.start);
            let key = self.keys.bytes(id).first().copied().unwrap_or(0);
            sum = sum.wrapping_add(middle as u64).wrapping_add(u64::from(key));
        }
        (sum, due.len())
    }

    /// Rebuilds the due queue from the windows ending at or after `due_from`.
    fn rebuild_due(&mut self) {
        self.due.clear();
        if !self.tracks_due {
            return;
        }
        let first = self.due_from.saturating_sub(self.d);
        for (id, w) in self.by_key.iter().enumerate() {
            for s in &w.slots[w.first_from(first)..] {
                self.due.push(s.start + self.d, id as KeyId);
            }
        }
    }
}

impl WindowStore for SlidingStore {
    fn retention(&self) -> i64 {
        self.retention
    }

    fn restore_from(&mut self, store: SessionStore) -> Result<()> {
        if store.retention() != self.retention {
            return Err(retention_mismatch());
        }
        let mut counters = store.counters();
        counters.expired_sessions += store.expired_stored();
        self.store_time = store.store_time();
        self.counters = counters;
        self.swept_at = self.store_time;
        for e in store.entries() {
            let (id, _) = self.windows_mut(e.key, self.keys.get(e.key), i64::MIN, i64::MIN)?;
            let s = e.session;
            if s.end.checked_sub(s.start) != Some(self.d) {
                // The processor's checks name it (`WindowKind::check_stored`).
                return Err(Error::invalid(
                    "snapshot",
                    format!(
                        "window [{}, {}] is not the time difference long",
                        s.start, s.end
                    ),
                ));
            }
            self.windows += u64::from(self.by_key[id as usize].put(s.start, s.value)?);
        }
        // The processor's `emitted_below` is not known here: every window is queued, and
        // `take_due` drops those below it.
        self.due_from = i64::MIN;
        self.rebuild_due();
        Ok(())
    }

    fn begin(&mut self) {
        self.transaction += 1;
        self.in_transaction = true;
        let j = &mut self.journal;
        j.reopen();
        j.store_time = self.store_time;
        j.windows = self.windows;
        j.counters = self.counters;
        j.due_from = self.due_from;
    }

    fn commit(&mut self) {
        self.end_transaction();
        self.sweep_if_due();
    }

    fn rollback(&mut self) -> Result<()> {
        if !self.in_transaction {
            return Ok(());
        }
        for id in self.journal.rollback(&mut self.by_key) {
            self.keys.release(id);
        }
        let j = &self.journal;
        self.store_time = j.store_time;
        self.windows = j.windows;
        self.counters = j.counters;
        self.due_from = j.due_from;
        self.end_transaction();
        self.rebuild_due();
        Ok(())
    }

    fn metrics(&self) -> StoreMetrics {
        let value_bytes: usize = self.by_key.iter().map(Windows::live_bytes).sum();
        let heap: usize = self.by_key.iter().map(Windows::heap_bytes).sum::<usize>()
            + self.by_key.capacity() * std::mem::size_of::<Windows>()
            + self.due.heap_bytes();
        self.counters.metrics(
            &self.keys,
            (self.windows, 0),
            (value_bytes, heap),
            (self.bytes_written, self.bytes_journaled),
        )
    }

    fn keys(&self) -> &KeyTable {
        &self.keys
    }

    fn keys_mut(&mut self) -> &mut KeyTable {
        &mut self.keys
    }

    fn stored_sessions_by_end(&self, earliest_end: i64, latest_end: i64) -> Vec<KeyedSession<'_>> {
        let mut found: Vec<KeyedSession<'_>> = self
            .live_ids()
            .flat_map(|id| self.keyed_stored(id, earliest_end, latest_end))
            .collect();
        sort_by_end(&mut found);
        found
    }

    fn take_due(&mut self, earliest_end: i64, latest_end: i64) -> Vec<KeyedSession<'_>> {
        if !self.tracks_due {
            return self.stored_sessions_by_end(earliest_end, latest_end);
        }
        let mut due = Vec::new();
        self.due.take(earliest_end, latest_end, &mut due);
        self.due_from = self.due_from.max(latest_end.saturating_add(1));
        // Key by key: a key's due windows lie side by side in its list, found with one search.
        due.sort_unstable_by_key(|&(end, id)| (id, end));
        let mut found: Vec<(i64, KeyId, usize)> = Vec::with_capacity(due.len());
        let (mut from, mut read_to) = (0, 0);
        while from < due.len() {
            let id = due[from].1;
            let to = from + due[from..].iter().take_while(|e| e.1 == id).count();
            if from >= read_to && self.reads_ahead() {
                let (sum, read) = self.read_lists_ahead(&due[from..]);
                std::hint::black_box(sum);
                read_to = from + read;
            }
            let w = &self.by_key[id as usize];
            let mut i = w.slots.partition_point(|s| s.start < due[from].0 - self.d);
            for &(end, _) in &due[from..to] {
                while w.slots.get(i).is_some_and(|s| s.start < end - self.d) {
                    i += 1;
                }
                debug_assert!(
                    w.slots.get(i).is_some_and(|s| s.start + self.d == end),
                    "a due window ending at {end} is gone"
                );
                if w.slots.get(i).is_some_and(|s| s.start + self.d == end) {
                    found.push((end, id, i));
                }
            }
            from = to;
        }
        // By end, then key bytes among windows of one end (and so of one start).
        found.sort_unstable_by_key(|&(end, _, _)| end);
        let mut from = 0;
        while from < found.len() {
            let end = found[from].0;
            let to = from + found[from..].iter().take_while(|e| e.0 == end).count();
            if to - from > 1 {
                found[from..to]
                    .sort_unstable_by(|a, b| self.keys.bytes(a.1).cmp(self.keys.bytes(b.1)));
            }
            from = to;
        }
        found
            .into_iter()
            .map(|(end, id, i)| KeyedSession {
                key: self.keys.bytes(id),
                session: Session {
                    start: end - self.d,
                    end,
                    value: self.by_key[id as usize].value(i),
                },
            })
            .collect()
    }

    fn earliest_stored_end(&self, earliest_end: i64) -> Option<i64> {
        if self.tracks_due {
            return self.due.earliest(earliest_end.max(self.due_from));
        }
        self.by_key
            .iter()
            .filter_map(|w| {
                let first = w.first_from(earliest_end.saturating_sub(self.d));
                w.slots.get(first).map(|s| s.start + self.d)
            })
            .min()
    }

    fn stored_sessions(
        &self,
        keys: Option<(&[u8], &[u8])>,
        earliest_end: i64,
    ) -> Vec<KeyedSession<'_>> {
        let ids: Vec<KeyId> = match keys {
            None => self.live_ids().collect(),
            Some((from, to)) if from == to => self.keys.get(from).into_iter().collect(),
            Some((from, to)) => self.keys.range(from, to),
        };
        ids.into_iter()
            .flat_map(|id| self.keyed_stored(id, earliest_end, i64::MAX))
            .collect()
    }

    fn entries_unordered(&self) -> Vec<KeyedSession<'_>> {
        self.live_ids()
            .flat_map(|id| self.keyed(id, i64::MIN, i64::MAX))
            .collect()
    }

    fn encode_tables(&self, extra: &HashMap<String, String>, tables: &[Table]) -> Result<Vec<u8>> {
        let mut counters = self.counters;
        counters.expired_sessions += self.expired_stored();
        let header = Header {
            retention: self.retention,
            segment_interval: (self.retention / 2).max(1),
            store_time: self.store_time,
            counters,
        };
        snapshot_format::encode_parts(&header, &self.entries(), extra, tables)
    }
}

impl SlidingStore {
    /// The stored windows of key `id` (expired ones not swept yet included) whose end lies in
    /// `[from, to]`.
    fn keyed_stored(
        &self,
        id: KeyId,
        from: i64,
        to: i64,
    ) -> impl Iterator<Item = KeyedSession<'_>> {
        let w = &self.by_key[id as usize];
        let first = w.first_from(from.saturating_sub(self.d));
        let key = self.keys.bytes(id);
        let d = self.d;
        w.slots[first..]
            .iter()
            .enumerate()
            .take_while(move |(_, s)| s.start + d <= to)
            .map(move |(i, s)| KeyedSession {
                key,
                session: Session {
                    start: s.start,
                    end: s.start + d,
                    value: w.value(first + i),
                },
            })
    }
}

/// Sorts windows by (end, start, key); windows of one end have one start.
fn sort_by_end(windows: &mut [KeyedSession<'_>]) {
    windows.sort_unstable_by(|a, b| (a.session.end, a.key).cmp(&(b.session.end, b.key)));
}
