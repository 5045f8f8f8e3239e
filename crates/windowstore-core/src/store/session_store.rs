//! The segmented session store: observed store time, expiry, and the KIP-94 operations.
//!
//! Store time is the largest session end ever put. A session with
//! `end < store_time - retention + 1` is expired: every read skips it, a put of it is refused and
//! counted, and its segment is dropped as soon as the whole segment is expired.

mod rewrite;

use super::edits::Edits;
use super::journal::{decode_inverse, Journal, Undo};
use super::key_schema::{KeyedSession, Session, SessionBounds};
use super::keys::{KeyId, KeyTable};
use super::metrics::{Counters, StoreMetrics};
use super::segment::{Entry, Segment};
use super::segments::Segments;
use crate::{Error, Result};

/// What a [`SessionStore::put`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// A new session was stored.
    Inserted,
    /// An existing session's value was replaced.
    Updated,
    /// The session had expired: nothing was stored (counted as `expired_puts`).
    Expired,
}

/// Stores holding fewer sessions than this are not read ahead ([`SessionStore::reads_ahead`]):
/// they stay mostly in the cache, where the reads ahead cost more than they save.
const READ_AHEAD_MIN_SESSIONS: u64 = 1 << 20;

/// A spare journal holding more than this is dropped rather than kept for the next call.
const MAX_SPARE_JOURNAL_BYTES: usize = 64 << 20;

/// What a caller will read of a key's sessions (`SessionStore::warm`): those of
/// [`SessionStore::find_sessions`] with `earliest_end` and `latest_start`, and the values of
/// those ending at or after `values_from`, with the value of the latest ending before it (in
/// each segment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    /// The lookup's earliest end.
    pub earliest_end: i64,
    /// The lookup's latest start.
    pub latest_start: i64,
    /// The earliest end of the sessions whose values are read.
    pub values_from: i64,
}

/// A segmented store of session aggregates keyed by `(key bytes, end, start)` (KIP-94).
#[derive(Debug)]
pub struct SessionStore {
    retention: i64,
    segments: Segments,
    keys: KeyTable,
    store_time: Option<i64>,
    sessions: u64,
    counters: Counters,
    /// The undo log of the open transaction, if any.
    journal: Option<Box<Journal>>,
    /// The first segment that expired in the open transaction, with its id, whole: its
    /// sessions still hold their keys, so that a rollback puts it back as it was, and only a
    /// commit releases the keys and recycles its memory. Journaling each expired session
    /// copies every expired value (a sliding stream expires two windows a record). Only the
    /// first is held: a call that spans many segments of event time expires many and starts
    /// as many, and those are better journaled and recycled at once for the new ones (held,
    /// they kept their keys and their memory from the rest of the call, 10% slower).
    expired: Option<(i64, Segment)>,
    /// Value bytes written by puts and in-place edits, and bytes journaled for undo, since the
    /// store was made (not snapshotted): the cost of the writes, for tests of growth.
    bytes_written: u64,
    bytes_journaled: u64,
    /// The last transaction's journal, emptied, so that the next one reuses its buffers (a
    /// call's journal holds megabytes; allocating them afresh faulted in new pages each call).
    spare: Option<Box<Journal>>,
}

impl SessionStore {
    /// An empty store keeping sessions for `retention` ticks past store time, in segments of
    /// `segment_interval` ticks (default `max(retention / 2, 1)`).
    pub fn new(retention: i64, segment_interval: Option<i64>) -> Result<Self> {
        if retention <= 0 {
            return Err(Error::invalid(
                "retention",
                format!("must be > 0, got {retention}"),
            ));
        }
        let interval = segment_interval.unwrap_or((retention / 2).max(1));
        if interval <= 0 {
            return Err(Error::invalid(
                "segment_interval",
                format!("must be > 0, got {interval}"),
            ));
        }
        Ok(Self {
            retention,
            segments: Segments::new(interval),
            keys: KeyTable::default(),
            store_time: None,
            sessions: 0,
            counters: Counters::default(),
            journal: None,
            expired: None,
            spare: None,
            bytes_written: 0,
            bytes_journaled: 0,
        })
    }

    /// Opens a transaction: from now on every change is journaled until [`Self::commit`] or
    /// [`Self::rollback`]. An open transaction is replaced (its changes become permanent).
    pub fn begin(&mut self) {
        self.settle_expired();
        let mut journal = self.spare.take().unwrap_or_default();
        journal.reopen(self.store_time, self.sessions, self.counters);
        self.journal = Some(journal);
    }

    /// Makes the open transaction's changes permanent.
    pub fn commit(&mut self) {
        let journal = self.journal.take();
        self.keep_spare(journal);
        self.settle_expired();
    }

    /// Makes the expiry of the segments held by the closing transaction final: their keys are
    /// released and their memory kept for new segments.
    fn settle_expired(&mut self) {
        if let Some((_, segment)) = self.expired.take() {
            self.release_expired(segment);
        }
    }

    /// Releases the keys of an expired segment's sessions and keeps its memory.
    fn release_expired(&mut self, segment: Segment) {
        for (id, _) in segment.iter() {
            self.keys.release(id);
        }
        self.segments.recycle(segment);
    }

    fn keep_spare(&mut self, journal: Option<Box<Journal>>) {
        if let Some(j) = &journal {
            self.bytes_journaled += j.recorded_bytes() as u64;
        }
        self.spare = journal.filter(|j| j.retained_bytes() <= MAX_SPARE_JOURNAL_BYTES);
    }

    /// Undoes every change since [`Self::begin`]: the sessions, their values, store time and
    /// the counters are as they were then (see `store::journal`). A no-op without a transaction.
    pub fn rollback(&mut self) -> Result<()> {
        let Some(journal) = self.journal.take() else {
            return Ok(());
        };
        // Store time first, so that what comes back is live again; then the segment held
        // whole since it expired, as it was then: no later change touched it (it was gone),
        // and the entries older than its expiry undo what the call did to it before. Other
        // expired segments come back session by session from the journal.
        self.store_time = journal.store_time;
        if let Some((id, segment)) = self.expired.take() {
            self.segments.reinstate(id, segment);
        }
        for (entry, key, old) in journal.newest_first() {
            match entry.undo {
                Undo::Remove => {
                    self.remove(key, entry.start, entry.end);
                }
                Undo::Put => {
                    self.insert((key, None), entry.start, entry.end, old, None)?;
                }
                Undo::Amend { to } => {
                    let mut inverse = Edits::default();
                    decode_inverse(old, &mut inverse);
                    let id = self.keys.get(key).ok_or_else(|| {
                        Error::Internal("rollback: an amended session's key is gone".into())
                    })?;
                    if self
                        .move_edited(id, to, (entry.start, entry.end), &inverse, None)?
                        .is_none()
                    {
                        return Err(Error::Internal(
                            "rollback: an amended session is gone".into(),
                        ));
                    }
                }
            }
        }
        self.store_time = journal.store_time;
        self.sessions = journal.sessions;
        self.counters = journal.counters;
        self.keep_spare(Some(journal));
        Ok(())
    }

    /// Retention in ticks.
    pub fn retention(&self) -> i64 {
        self.retention
    }

    /// Segment interval in ticks.
    pub fn segment_interval(&self) -> i64 {
        self.segments.interval()
    }

    /// The largest session end ever put, or `None` before the first put.
    pub fn store_time(&self) -> Option<i64> {
        self.store_time
    }

    /// The smallest session end still visible: `store_time - retention + 1`.
    #[inline]
    pub fn min_live_end(&self) -> i64 {
        match self.store_time {
            // retention >= 1, so the subtrahend is >= 0 and saturates only at i64::MIN.
            Some(t) => t.saturating_sub(self.retention - 1),
            None => i64::MIN,
        }
    }

    /// Stores `value` for the session `[start, end]` of `key`, replacing any value it had.
    ///
    /// Advances store time to `end` and drops segments that expire with it. A session that is
    /// already expired is not stored: the put is counted and [`PutOutcome::Expired`] returned.
    pub fn put(&mut self, key: &[u8], start: i64, end: i64, value: &[u8]) -> Result<PutOutcome> {
        check_window(start, end)?;
        self.observe(end);
        self.put_live(key, None, start, end, value)
    }

    /// [`Self::put`] without moving store time, for a caller that applies many puts as one
    /// step and moves store time once at the end ([`Self::advance_time`]), so that no segment
    /// expires in between. A session already expired at the current store time is refused
    /// and counted, as `put` refuses it. `id`: the key's id, if the caller has it
    /// ([`Self::key_id`]), which spares a lookup.
    pub(crate) fn put_held(
        &mut self,
        (key, id): (&[u8], Option<KeyId>),
        start: i64,
        end: i64,
        value: &[u8],
    ) -> Result<PutOutcome> {
        check_window(start, end)?;
        self.put_live(key, id, start, end, value)
    }

    /// The id under which the store holds `key`, if it holds a session of it. The id names
    /// the key while any session of it stays stored (puts before removes keep it).
    pub(crate) fn key_id(&self, key: &[u8]) -> Option<KeyId> {
        self.keys.get(key)
    }

    /// Advances store time to `t` if it is later, dropping the segments that expire with it
    /// (after [`Self::put_held`]).
    pub(crate) fn advance_time(&mut self, t: i64) {
        self.observe(t);
    }

    /// Sets the `puts` and `removes` counters: a caller that applied many changes as one step
    /// counts them as the changes one by one would have.
    pub(crate) fn set_change_counts(&mut self, puts: u64, removes: u64) {
        self.counters.puts = puts;
        self.counters.removes = removes;
    }

    /// The put of a session whose end is at or before store time; `id` is the key's, if the
    /// caller has it.
    fn put_live(
        &mut self,
        key: &[u8],
        id: Option<KeyId>,
        start: i64,
        end: i64,
        value: &[u8],
    ) -> Result<PutOutcome> {
        if end < self.min_live_end() {
            self.counters.expired_puts += 1;
            return Ok(PutOutcome::Expired);
        }
        // The journal leaves the store for the insert, which records the old value from the
        // same lookup that finds the place to put.
        let mut journal = self.journal.take();
        let inserted = self.insert((key, id), start, end, value, journal.as_deref_mut());
        self.journal = journal;
        self.bytes_written += value.len() as u64;
        let inserted = inserted?;
        self.counters.puts += 1;
        if inserted {
            self.sessions += 1;
            Ok(PutOutcome::Inserted)
        } else {
            Ok(PutOutcome::Updated)
        }
    }

    /// Edits the value of the live session `from` (`(start, end)`) of `key` in place with
    /// `edits` and moves it to window `to`: what `put(key, to, edited value)` followed by
    /// `remove(key, from)` (if `to != from`) does, counters included, at the cost of the bytes
    /// the edits change rather than of the whole value (a large value is never copied, see
    /// `store::segment`). The journal records only the edit's inverse.
    ///
    /// Returns `None`, having changed nothing, if `from` is not stored and live, another session
    /// is stored under `to`, or `edits` do not fit the value; the caller then takes the long way.
    pub fn amend(
        &mut self,
        key: &[u8],
        from: (i64, i64),
        to: (i64, i64),
        edits: &Edits,
    ) -> Result<Option<PutOutcome>> {
        self.amend_moving(key, from, to, edits, true)
    }

    /// [`Self::amend`] without moving store time (see [`Self::put_held`]).
    pub(crate) fn amend_held(
        &mut self,
        key: &[u8],
        from: (i64, i64),
        to: (i64, i64),
        edits: &Edits,
    ) -> Result<Option<PutOutcome>> {
        self.amend_moving(key, from, to, edits, false)
    }

    fn amend_moving(
        &mut self,
        key: &[u8],
        from: (i64, i64),
        to: (i64, i64),
        edits: &Edits,
        move_time: bool,
    ) -> Result<Option<PutOutcome>> {
        check_window(to.0, to.1)?;
        let Some(id) = self.keys.get(key) else {
            return Ok(None);
        };
        if from.1 < self.min_live_end() {
            return Ok(None);
        }
        let Some(value) = value_in(&self.segments, id, from.0, from.1) else {
            return Ok(None);
        };
        if edits.check(value.len()).is_err()
            || (to != from && value_in(&self.segments, id, to.0, to.1).is_some())
        {
            return Ok(None);
        }
        if move_time {
            self.observe(to.1);
        }
        if to.1 < self.min_live_end() {
            self.counters.expired_puts += 1;
            return Ok(Some(PutOutcome::Expired));
        }
        let mut journal = self.journal.take();
        let moved = self.move_edited(
            id,
            from,
            to,
            edits,
            journal.as_deref_mut().map(|j| (j, key)),
        );
        self.journal = journal;
        let Some(written) = moved? else {
            // Expiry took `from` (its end is live, so this cannot happen): the long way.
            return Ok(None);
        };
        self.bytes_written += written as u64;
        self.keys.note_end(id, to.1);
        self.counters.puts += 1;
        if to == from {
            return Ok(Some(PutOutcome::Updated));
        }
        self.counters.removes += 1;
        Ok(Some(PutOutcome::Inserted))
    }

    /// Applies `edits` to session `from` of key `id` and moves it to window `to` (within its
    /// segment, or to another one), journaling the inverse; returns the bytes written, `None`
    /// if `from` is not there.
    fn move_edited(
        &mut self,
        id: KeyId,
        from: (i64, i64),
        to: (i64, i64),
        edits: &Edits,
        journal: Option<(&mut Journal, &[u8])>,
    ) -> Result<Option<usize>> {
        let record = |old: &[u8]| {
            if let Some((journal, key)) = journal {
                journal.amended(key, from, to, edits, old);
            }
        };
        if self.segments.segment_id(from.1) == self.segments.segment_id(to.1) {
            let Some(segment) = self.segments.get_mut(from.1) else {
                return Ok(None);
            };
            return segment.amend(id, from, to, edits, record);
        }
        let Some(mut value) = self
            .segments
            .get_mut(from.1)
            .and_then(|s| s.detach(id, from.0, from.1))
        else {
            return Ok(None);
        };
        self.segments.drop_if_empty(from.1);
        record(&value);
        let mut written = edits.apply(&mut value);
        if value.len() < super::segment::BIG_VALUE_BYTES {
            written += value.len();
        }
        self.segments
            .get_or_create(to.1)
            .attach(id, to.0, to.1, value)?;
        Ok(Some(written))
    }

    /// Puts the session into its segment and the key table, recording in `journal` (if any)
    /// what undoes it; no time or counter moves.
    fn insert(
        &mut self,
        (key, id): (&[u8], Option<KeyId>),
        start: i64,
        end: i64,
        value: &[u8],
        mut journal: Option<&mut Journal>,
    ) -> Result<bool> {
        debug_assert!(id.is_none_or(|id| self.keys.bytes(id) == key));
        let segment = self.segments.get_or_create(end);
        let inserted = match id.or_else(|| self.keys.get(key)) {
            Some(id) => {
                let seen = |old: Option<&[u8]>| {
                    if let Some(journal) = journal.as_deref_mut() {
                        match old {
                            Some(old) => journal.held(key, start, end, old),
                            None => journal.created(key, start, end),
                        }
                    }
                };
                let inserted = segment.put_seen(id, start, end, value, seen)?;
                if inserted {
                    self.keys.retain(id);
                    self.keys.note_end(id, end);
                }
                inserted
            }
            None => {
                if let Some(journal) = journal {
                    journal.created(key, start, end);
                }
                let id = self.keys.acquire(key)?;
                if let Err(e) = segment.put(id, start, end, value) {
                    self.keys.release(id);
                    self.segments.drop_if_empty(end);
                    return Err(e);
                }
                self.keys.note_end(id, end);
                true
            }
        };
        Ok(inserted)
    }

    /// Removes the session `[start, end]` of `key`; returns whether it was there.
    ///
    /// A missing or expired session is a no-op. Removing never moves store time.
    pub fn remove(&mut self, key: &[u8], start: i64, end: i64) -> bool {
        match self.keys.get(key) {
            Some(id) => self.remove_as(id, key, start, end),
            None => false,
        }
    }

    /// [`Self::remove`] of a key the store holds under `id` ([`Self::key_id`]).
    pub(crate) fn remove_as(&mut self, id: KeyId, key: &[u8], start: i64, end: i64) -> bool {
        debug_assert_eq!(self.keys.bytes(id), key);
        if end < self.min_live_end() {
            return false;
        }
        let Some(segment) = self.segments.get_mut(end) else {
            return false;
        };
        let mut journal = self.journal.as_deref_mut();
        let seen = |old: &[u8]| {
            if let Some(journal) = journal.as_deref_mut() {
                journal.held(key, start, end, old);
            }
        };
        if !segment.remove_seen(id, start, end, seen) {
            return false;
        }
        self.keys.release(id);
        self.segments.drop_if_empty(end);
        self.sessions -= 1;
        self.counters.removes += 1;
        true
    }

    /// The value of exactly the session `[start, end]` of `key`, if it is stored and live.
    pub fn fetch_session(&self, key: &[u8], start: i64, end: i64) -> Option<&[u8]> {
        if end < self.min_live_end() {
            return None;
        }
        value_in(&self.segments, self.keys.get(key)?, start, end)
    }

    /// Every live session of `key` with `end >= earliest_end` and `start <= latest_start`,
    /// ordered by end, then start. `.rev()` gives Kafka's `backwardFindSessions` order.
    #[inline]
    pub fn find_sessions(
        &self,
        key: &[u8],
        earliest_end: i64,
        latest_start: i64,
    ) -> impl DoubleEndedIterator<Item = Session<'_>> + '_ {
        self.keys
            .get(key)
            .into_iter()
            .flat_map(move |id| self.find_sessions_of(id, earliest_end, latest_start))
    }

    /// [`Self::find_sessions`] of the key the store holds under `id` ([`Self::key_id`]).
    pub(crate) fn find_sessions_of(
        &self,
        id: KeyId,
        earliest_end: i64,
        latest_start: i64,
    ) -> impl DoubleEndedIterator<Item = Session<'_>> + '_ {
        let bounds = SessionBounds::find(earliest_end, latest_start).live_from(self.min_live_end());
        self.scan_key(id, bounds)
    }

    /// Whether the store is large enough to read ahead ([`Self::warm`]): at least
    /// [`READ_AHEAD_MIN_SESSIONS`] sessions, about 100 MB, several times the cache. Session
    /// windows at 10M events over 100k users hold about 0.1M and ran 20% slower read ahead;
    /// sliding windows at 4M records over 100k keys hold about 6M and ran 1.14x faster.
    pub(crate) fn reads_ahead(&self) -> bool {
        self.sessions >= READ_AHEAD_MIN_SESSIONS
    }

    /// Reads, for each lookup of `lookups`, the memory that [`Self::find_sessions`] with its
    /// bounds would read and its caller would use (see [`Reads`]), and returns a number made of
    /// it that means nothing: the caller hands it to [`std::hint::black_box`]. The point is the
    /// reads themselves, which bring that memory into the cache before the lookups proper.
    ///
    /// A lookup in a large store is a chain of cache misses (the key table, then each
    /// segment's hash table, then the session list, then the values), and a chain waits for
    /// each miss in turn. Here the reads go in stages, each stage over every lookup before the
    /// next stage, so that the misses of different keys, independent of one another, overlap.
    pub(crate) fn warm(&self, lookups: &[(&[u8], Reads)]) -> u64 {
        let live = self.min_live_end();
        let ids: Vec<Option<KeyId>> = lookups.iter().map(|l| self.keys.get(l.0)).collect();
        let mut lists: Vec<(&Segment, &[Entry], SessionBounds, i64)> =
            Vec::with_capacity(lookups.len() * 2);
        for (&(_, reads), id) in lookups.iter().zip(&ids) {
            let Some(id) = *id else { continue };
            let bounds =
                SessionBounds::find(reads.earliest_end, reads.latest_start).live_from(live);
            let latest_end = bounds.latest_end.min(self.keys.max_end(id));
            for segment in self.segments.search(bounds.earliest_end, latest_end) {
                lists.push((segment, segment.sessions_of(id), bounds, reads.values_from));
            }
        }
        // The lists first, a read of each end of each (a list spans a few cache lines), so
        // that the values' addresses are at hand when the next stage reads them.
        let mut sum = 0u64;
        for (_, list, _, _) in &lists {
            if let (Some(first), Some(last)) = (list.first(), list.last()) {
                sum = sum.wrapping_add((first.end ^ last.end) as u64);
            }
        }
        for (segment, list, bounds, values_from) in lists {
            let mut found = list.iter().filter(|e| bounds.contains(e.start, e.end));
            let mut before = None;
            for e in found.by_ref() {
                if e.end >= values_from {
                    sum = sum.wrapping_add(first_byte(segment.value(e)).into());
                    break;
                }
                before = Some(e);
            }
            for e in before.into_iter().chain(found) {
                sum = sum.wrapping_add(first_byte(segment.value(e)).into());
            }
        }
        sum
    }

    /// [`Self::find_sessions`] in reverse order: by end, then start, descending.
    pub fn backward_find_sessions(
        &self,
        key: &[u8],
        earliest_end: i64,
        latest_start: i64,
    ) -> impl Iterator<Item = Session<'_>> + '_ {
        self.find_sessions(key, earliest_end, latest_start).rev()
    }

    /// Every live session of `key`, ordered by end, then start.
    pub fn fetch(&self, key: &[u8]) -> impl DoubleEndedIterator<Item = Session<'_>> + '_ {
        self.find_sessions(key, i64::MIN, i64::MAX)
    }

    /// Every live session of the keys in `[key_from, key_to]` (byte order, both inclusive),
    /// ordered by key, then end, then start. An inverted range is empty.
    pub fn fetch_range(&self, key_from: &[u8], key_to: &[u8]) -> Vec<KeyedSession<'_>> {
        if key_from > key_to {
            return Vec::new();
        }
        let bounds = SessionBounds::find(i64::MIN, i64::MAX).live_from(self.min_live_end());
        self.sessions_of_keys(self.keys.range(key_from, key_to), bounds)
    }

    /// Every live session of every key with `earliest_end <= end <= latest_end`, ordered by
    /// end, then start, then key. Reads only the segments that can hold such an end.
    pub fn find_sessions_by_end(
        &self,
        earliest_end: i64,
        latest_end: i64,
    ) -> Vec<KeyedSession<'_>> {
        let bounds = SessionBounds::by_end(earliest_end, latest_end).live_from(self.min_live_end());
        self.scan_by_end(bounds)
    }

    /// Like [`Self::find_sessions_by_end`], but also returns sessions that are expired and not
    /// dropped yet. An engine uses it to emit closed sessions that expiry has made invisible.
    pub fn held_sessions_by_end(
        &self,
        earliest_end: i64,
        latest_end: i64,
    ) -> Vec<KeyedSession<'_>> {
        self.scan_by_end(SessionBounds::by_end(earliest_end, latest_end))
    }

    /// The smallest end at or after `earliest_end` of any held session, expired ones not
    /// dropped yet included (what [`Self::held_sessions_by_end`] would return first). Segments
    /// are ordered by end, so only the segments up to the first that holds such an end are
    /// read, and nothing is collected or sorted.
    pub fn earliest_held_end(&self, earliest_end: i64) -> Option<i64> {
        self.segments
            .search(earliest_end, i64::MAX)
            .find_map(|segment| segment.earliest_end_from(earliest_end))
    }

    /// Whether a put of a session ending at `end` would drop segments (and what they hold).
    pub fn put_would_drop_segments(&self, end: i64) -> bool {
        if self.store_time.is_some_and(|t| t >= end) {
            return false;
        }
        let min_live_end = end.saturating_sub(self.retention - 1);
        self.segments
            .iter()
            .next()
            .is_some_and(|(first, _)| first < self.segments.segment_id(min_live_end))
    }

    fn scan_by_end(&self, bounds: SessionBounds) -> Vec<KeyedSession<'_>> {
        // Room for every session of the segments read, at most: growing the vector as it
        // fills copied it over and over (a call's closing windows number in the 100,000s).
        let most: usize = self
            .segments
            .search(bounds.earliest_end, bounds.latest_end)
            .map(Segment::len)
            .sum();
        if !self.reads_ahead() {
            let mut found: Vec<KeyedSession<'_>> = Vec::with_capacity(most);
            for segment in self.segments.search(bounds.earliest_end, bounds.latest_end) {
                for (id, e) in segment.iter_by_end(bounds.earliest_end, bounds.latest_end) {
                    if bounds.contains(e.start, e.end) {
                        found.push(self.keyed(id, e, segment));
                    }
                }
            }
            sort_by_end(&mut found);
            return found;
        }
        let mut hits: Vec<(KeyId, &Entry, &Segment)> = Vec::with_capacity(most);
        for segment in self.segments.search(bounds.earliest_end, bounds.latest_end) {
            for (id, e) in segment.iter_by_end_ahead(bounds.earliest_end, bounds.latest_end) {
                if bounds.contains(e.start, e.end) {
                    hits.push((id, e, segment));
                }
            }
        }
        // Each hit's key bytes and value, read first in a pass of independent reads (see
        // `Self::warm`): the caller copies both, and their cache misses then overlap.
        let touched = hits.iter().fold(0u64, |sum, &(id, e, segment)| {
            sum ^ u64::from(first_byte(self.keys.bytes(id)) ^ first_byte(segment.value(e)))
        });
        std::hint::black_box(touched);
        let mut found: Vec<KeyedSession<'_>> = hits
            .into_iter()
            .map(|(id, e, segment)| self.keyed(id, e, segment))
            .collect();
        sort_by_end(&mut found);
        found
    }

    /// Every live session, ordered by key, then end, then start (what a snapshot holds).
    ///
    /// One pass over the segments and one sort of the sessions by (key rank, end, start),
    /// integers all: a lookup per key and segment cost several times more (a snapshot of a
    /// large store reads every session).
    pub fn entries(&self) -> Vec<KeyedSession<'_>> {
        let ranks = self.keys.ranks();
        let live = self.min_live_end();
        let mut found: Vec<(u32, KeyId, &Entry, &Segment)> =
            Vec::with_capacity(self.sessions as usize);
        for (_, segment) in self.segments.iter() {
            found.extend(
                segment
                    .iter()
                    .filter(|(_, e)| e.end >= live)
                    .map(|(id, e)| (ranks[id as usize], id, e, segment)),
            );
        }
        found.sort_unstable_by_key(|&(rank, _, e, _)| (rank, e.end, e.start));
        found
            .into_iter()
            .map(|(_, id, e, segment)| self.keyed(id, e, segment))
            .collect()
    }

    /// Entry `e` of key `id` in `segment`, with its key bytes and value.
    fn keyed<'s>(&'s self, id: KeyId, e: &Entry, segment: &'s Segment) -> KeyedSession<'s> {
        KeyedSession {
            key: self.keys.bytes(id),
            session: Session {
                start: e.start,
                end: e.end,
                value: segment.value(e),
            },
        }
    }

    /// Every live session, in no particular order: [`Self::entries`] without its two sorts,
    /// for a reader that visits each session once whatever the order (the checks of a
    /// restore).
    pub fn entries_unordered(&self) -> Vec<KeyedSession<'_>> {
        let live = self.min_live_end();
        let mut found = Vec::with_capacity(self.sessions as usize);
        for (_, segment) in self.segments.iter() {
            found.extend(
                segment
                    .iter()
                    .filter(|(_, e)| e.end >= live)
                    .map(|(id, e)| self.keyed(id, e, segment)),
            );
        }
        found
    }

    /// Sessions that have expired but are still held, in a segment not dropped yet because
    /// it also holds live ones. A snapshot leaves them out ([`Self::entries`]) and counts them
    /// as expired, the count the store reaches once their segment goes: so a store restored
    /// from a snapshot and the store it was taken from write the same snapshots from then on.
    pub(crate) fn expired_held(&self) -> u64 {
        let live = self.min_live_end();
        self.segments
            .search(i64::MIN, live.saturating_sub(1))
            .map(|segment| segment.iter().filter(|(_, e)| e.end < live).count() as u64)
            .sum()
    }

    /// The store's own counters (what a snapshot carries).
    pub(crate) fn counters(&self) -> Counters {
        self.counters
    }

    /// An empty store at `store_time` with `counters`, to be filled by [`Self::restore_session`].
    pub(crate) fn restored(
        retention: i64,
        segment_interval: i64,
        store_time: Option<i64>,
        counters: Counters,
    ) -> Result<Self> {
        let mut store = Self::new(retention, Some(segment_interval))?;
        store.store_time = store_time;
        store.counters = counters;
        Ok(store)
    }

    /// Makes room for what a snapshot's rows will put: `keys` more keys, and per segment (by
    /// a session end in it) its new keys and value bytes, so that no map or arena
    /// grows while the rows go in. Only segments that can hold a restored session (live, at
    /// or before store time) are made: any other row fails the restore.
    pub(crate) fn reserve_restored(&mut self, keys: usize, segments: &[(i64, usize, usize)]) {
        self.keys.reserve(keys);
        let live = self.min_live_end();
        for &(end, keys, bytes) in segments {
            if end >= live && self.store_time.is_some_and(|t| end <= t) {
                self.segments.get_or_create(end).reserve(keys, bytes);
            }
        }
    }

    /// The segment of a session ending at `end`, as an id.
    pub(crate) fn segment_id(&self, end: i64) -> i64 {
        self.segments.segment_id(end)
    }

    /// Puts a session read back from a snapshot: no counter moves, and a session the snapshot
    /// could not have held (after store time, expired, or twice) is refused with the reason.
    pub(crate) fn restore_session(
        &mut self,
        key: &[u8],
        start: i64,
        end: i64,
        value: &[u8],
    ) -> Result<(), String> {
        if start > end {
            return Err(format!("session [{start}, {end}] starts after it ends"));
        }
        if self.store_time.is_none_or(|t| end > t) {
            return Err(format!(
                "session [{start}, {end}] ends after the store time"
            ));
        }
        if end < self.min_live_end() {
            return Err(format!("session [{start}, {end}] is expired"));
        }
        let counters = self.counters;
        let outcome = self
            .put(key, start, end, value)
            .map_err(|e| e.to_string())?;
        self.counters = counters;
        match outcome {
            PutOutcome::Inserted => Ok(()),
            _ => Err(format!("session [{start}, {end}] appears twice")),
        }
    }

    /// Counters and sizes of the store.
    pub fn metrics(&self) -> StoreMetrics {
        let value_bytes: usize = self.segments.iter().map(|(_, s)| s.value_bytes()).sum();
        let segment_bytes: usize = self
            .segments
            .iter()
            .map(|(_, s)| s.heap_bytes())
            .sum::<usize>()
            + self.segments.spare_heap_bytes();
        StoreMetrics {
            live_sessions: self.sessions,
            live_keys: self.keys.len() as u64,
            segments: self.segments.len() as u64,
            key_bytes: self.keys.key_bytes() as u64,
            value_bytes: value_bytes as u64,
            bytes: (segment_bytes + self.keys.heap_bytes()) as u64,
            puts: self.counters.puts,
            removes: self.counters.removes,
            expired_puts: self.counters.expired_puts,
            expired_sessions: self.counters.expired_sessions,
            bytes_written: self.bytes_written,
            bytes_journaled: self.bytes_journaled
                + self
                    .journal
                    .as_ref()
                    .map_or(0, |j| j.recorded_bytes() as u64),
        }
    }

    /// The held sessions (live, or expired and not dropped yet: what [`Self::held_sessions_by_end`]
    /// reads) whose end is at least `earliest_end`, of the keys in `[from, to]` (byte order,
    /// both inclusive; `None`: every key), in no particular order. One key costs a hash probe
    /// per segment; a range of keys visits every key (the key table is hashed).
    pub fn held_sessions(
        &self,
        keys: Option<(&[u8], &[u8])>,
        earliest_end: i64,
    ) -> Vec<KeyedSession<'_>> {
        let bounds = SessionBounds::by_end(earliest_end, i64::MAX);
        let ids = match keys {
            None => return self.scan_by_end(bounds),
            Some((from, to)) if from == to => self.keys.get(from).into_iter().collect(),
            Some((from, to)) => self.keys.range(from, to),
        };
        self.sessions_of_keys(ids, bounds)
    }

    /// The sessions within `bounds` of the keys `ids`, in the order of `ids`, then end, then
    /// start.
    fn sessions_of_keys(&self, ids: Vec<KeyId>, bounds: SessionBounds) -> Vec<KeyedSession<'_>> {
        ids.into_iter()
            .flat_map(|id| {
                let key = self.keys.bytes(id);
                self.scan_key(id, bounds)
                    .map(move |session| KeyedSession { key, session })
            })
            .collect()
    }

    /// The sessions of key `id` within `bounds`, ordered by end, then start.
    fn scan_key(
        &self,
        id: KeyId,
        bounds: SessionBounds,
    ) -> impl DoubleEndedIterator<Item = Session<'_>> + '_ {
        // Segments past the key's largest end hold none of its sessions: skipping them spares
        // a hash probe per segment, and all of them when the key has nothing late enough.
        let latest_end = bounds.latest_end.min(self.keys.max_end(id));
        self.segments
            .search(bounds.earliest_end, latest_end)
            .flat_map(move |segment| {
                segment
                    .sessions_of(id)
                    .iter()
                    .filter(move |e| bounds.contains(e.start, e.end))
                    .map(move |e| Session {
                        start: e.start,
                        end: e.end,
                        value: segment.value(e),
                    })
            })
    }

    /// Advances store time to `end` if it is later, dropping the segments that expire.
    fn observe(&mut self, end: i64) {
        if self.store_time.is_some_and(|t| t >= end) {
            return;
        }
        self.store_time = Some(end);
        for (id, segment) in self.segments.expire(self.min_live_end()) {
            let n = segment.len() as u64;
            self.sessions -= n;
            self.counters.expired_sessions += n;
            match self.journal.as_deref_mut() {
                Some(_) if self.expired.is_none() => self.expired = Some((id, segment)),
                Some(journal) => {
                    for (key, e) in segment.iter() {
                        journal.held(self.keys.bytes(key), e.start, e.end, segment.value(e));
                    }
                    self.release_expired(segment);
                }
                None => self.release_expired(segment),
            }
        }
    }
}

/// Sorts `sessions` by (end, start, key): by the two integers first, then the key bytes only
/// within a run of equal windows (rare: sessions of different keys seldom share both ends), so
/// that the sort's comparisons are of integers, with no call to compare bytes.
fn sort_by_end(sessions: &mut [KeyedSession<'_>]) {
    let window = |s: &KeyedSession<'_>| (s.session.end, s.session.start);
    sessions.sort_unstable_by_key(window);
    let mut from = 0;
    while from < sessions.len() {
        let w = window(&sessions[from]);
        let to = from
            + sessions[from..]
                .iter()
                .take_while(|s| window(s) == w)
                .count();
        if to - from > 1 {
            sessions[from..to].sort_unstable_by_key(|s| s.key);
        }
        from = to;
    }
}

/// The first byte of `bytes` (0 if empty): a read that brings them into the cache.
fn first_byte(bytes: &[u8]) -> u8 {
    bytes.first().copied().unwrap_or(0)
}

/// Refuses a window that starts after it ends.
fn check_window(start: i64, end: i64) -> Result<()> {
    if start > end {
        return Err(Error::invalid(
            "start",
            format!("session start {start} is after its end {end}"),
        ));
    }
    Ok(())
}

/// The value of exactly session `[start, end]` of key `id` in `segments`, expired or not.
fn value_in(segments: &Segments, id: KeyId, start: i64, end: i64) -> Option<&[u8]> {
    let segment = segments.get(end)?;
    let list = segment.sessions_of(id);
    let i = list
        .binary_search_by(|e| (e.end, e.start).cmp(&(end, start)))
        .ok()?;
    Some(segment.value(&list[i]))
}
