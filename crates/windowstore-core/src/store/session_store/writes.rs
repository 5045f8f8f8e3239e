//! Writes to the store: puts, in-place amends and removes, each journaled under an open
//! transaction.

use super::{value_in, PutOutcome, SessionStore};
use crate::store::edits::Edits;
use crate::store::journal::Journal;
use crate::store::key_table::KeyId;
use crate::store::segment::BIG_VALUE_BYTES;
use crate::{Error, Result};

impl SessionStore {
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
    pub(crate) fn put_keeping_time(
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
    /// (after [`Self::put_keeping_time`]).
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

    /// [`Self::amend`], moving store time only if `move_time` (without, see
    /// [`Self::put_keeping_time`]).
    pub(crate) fn amend_moving(
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
    pub(super) fn move_edited(
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
        if value.len() < BIG_VALUE_BYTES {
            written += value.len();
        }
        self.segments
            .get_or_create(to.1)
            .attach(id, to.0, to.1, value)?;
        Ok(Some(written))
    }

    /// Puts the session into its segment and the key table, recording in `journal` (if any)
    /// what undoes it; no time or counter moves.
    pub(super) fn insert(
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
                            Some(old) => journal.replaced(key, start, end, old),
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
                journal.replaced(key, start, end, old);
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
