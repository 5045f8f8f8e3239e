//! The segmented session store: observed store time, expiry, and the KIP-94 operations.
//!
//! Store time is the largest session end ever put. A session with
//! `end < store_time - retention + 1` is expired: every read skips it, a put of it is refused and
//! counted, and its segment is dropped as soon as the whole segment is expired.
//!
//! This file holds the store itself, its transaction (begin, commit, rollback), store time and
//! expiry, and its metrics; `writes` holds puts, amends and removes, `reads` the lookups and
//! scans, `restore` what a snapshot reads and how a restore refills the store, and `rewrite`
//! the one-pass rewrite of a key's values.

mod reads;
mod restore;
mod rewrite;
mod writes;

use super::edits::Edits;
use super::journal::{decode_inverse, Journal, Undo};
use super::key_table::{KeyId, KeyTable};
use super::metrics::{Counters, StoreMetrics};
use super::segment::Segment;
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
    pub(super) keys: KeyTable,
    store_time: Option<i64>,
    sessions: u64,
    counters: Counters,
    /// The undo log of the open transaction, if any.
    journal: Option<Box<Journal>>,
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
            spare: None,
            bytes_written: 0,
            bytes_journaled: 0,
        })
    }

    /// Opens a transaction: from now on every change is journaled until [`Self::commit`] or
    /// [`Self::rollback`]. An open transaction is replaced (its changes become permanent).
    pub fn begin(&mut self) {
        let mut journal = self.spare.take().unwrap_or_default();
        journal.reopen(self.store_time, self.sessions, self.counters);
        self.journal = Some(journal);
    }

    /// Makes the open transaction's changes permanent.
    pub fn commit(&mut self) {
        let journal = self.journal.take();
        self.keep_spare(journal);
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
        // Store time first, so that what comes back is live again (expired segments come
        // back session by session from the journal).
        self.store_time = journal.store_time;
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

    /// Counters and sizes of the store.
    pub fn metrics(&self) -> StoreMetrics {
        let value_bytes: usize = self.segments.iter().map(|(_, s)| s.value_bytes()).sum();
        let segment_bytes: usize = self
            .segments
            .iter()
            .map(|(_, s)| s.heap_bytes())
            .sum::<usize>()
            + self.segments.spare_heap_bytes();
        let journaled = self.bytes_journaled
            + self
                .journal
                .as_ref()
                .map_or(0, |j| j.recorded_bytes() as u64);
        self.counters.metrics(
            &self.keys,
            (self.sessions, self.segments.len() as u64),
            (value_bytes, segment_bytes),
            (self.bytes_written, journaled),
        )
    }

    /// Advances store time to `end` if it is later, dropping the segments that expire.
    fn observe(&mut self, end: i64) {
        if self.store_time.is_some_and(|t| t >= end) {
            return;
        }
        self.store_time = Some(end);
        for segment in self.segments.expire(self.min_live_end()) {
            let n = segment.len() as u64;
            self.sessions -= n;
            self.counters.expired_sessions += n;
            if let Some(journal) = self.journal.as_deref_mut() {
                for (key, e) in segment.iter() {
                    journal.replaced(self.keys.bytes(key), e.start, e.end, segment.value(e));
                }
            }
            self.release_expired(segment);
        }
    }
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
