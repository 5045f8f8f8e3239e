//! The sliding store's undo log: what a transaction changed in each key's windows, saved on the
//! first change, so that a rollback puts every key back as it was.
//!
//! A record changes only windows starting at or after `t - D` (it joins those containing `t`
//! and puts new ones from there on), and drops expired windows from the front. So a key's
//! first change in a transaction saves its windows from the record's `t - D` on (a suffix);
//! a later change reaching further back saves again from there; dropped windows are saved as
//! they go. Saved windows are copied into two buffers kept from call to call, not one
//! allocation per key. A rollback applies the saves newest first: each replaces the key's
//! windows from its start on, or puts dropped windows back in front.

use std::ops::Range;

use super::windows::{Slot, Windows};
use crate::store::key_table::KeyId;
use crate::store::metrics::Counters;

/// What undoes one change of a transaction.
#[derive(Debug, Clone)]
enum Undo {
    /// Key `id`'s windows starting at or after `from` were `slots[saved]` of the journal.
    Suffix {
        id: KeyId,
        from: i64,
        saved: Range<usize>,
    },
    /// Windows `slots[saved]` of the journal were dropped from the front of key `id`'s.
    Front { id: KeyId, saved: Range<usize> },
    /// A key the transaction added to the store.
    NewKey(KeyId),
}

/// The undo log of the open transaction, and what the store was when it began.
#[derive(Debug, Default)]
pub(super) struct Journal {
    undo: Vec<Undo>,
    /// Saved windows, their `at` pointing into `bytes`.
    slots: Vec<Slot>,
    bytes: Vec<u8>,
    pub due_from: i64,
    pub store_time: Option<i64>,
    pub windows: u64,
    pub counters: Counters,
}

impl Journal {
    /// Empties the log for a new transaction, keeping its buffers.
    pub fn reopen(&mut self) {
        self.undo.clear();
        self.slots.clear();
        self.bytes.clear();
    }

    /// Bytes of window values saved so far.
    pub fn saved_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Notes that key `id` is new to the store.
    pub fn new_key(&mut self, id: KeyId) {
        self.undo.push(Undo::NewKey(id));
    }

    /// Saves key `id`'s windows starting at or after `from`, unless transaction `transaction`
    /// has saved them from there or earlier already.
    pub fn save_from(&mut self, transaction: u64, id: KeyId, w: &mut Windows, from: i64) {
        if w.saved_in == transaction && w.saved_from <= from {
            return;
        }
        w.saved_in = transaction;
        w.saved_from = from;
        let first = w.first_from(from);
        let saved = self.copy(w, first..w.slots.len());
        self.undo.push(Undo::Suffix { id, from, saved });
    }

    /// Saves key `id`'s first `n` windows, about to be dropped.
    pub fn save_front(&mut self, id: KeyId, w: &Windows, n: usize) {
        let saved = self.copy(w, 0..n);
        self.undo.push(Undo::Front { id, saved });
    }

    /// Copies windows `range` of `w`: their values in one piece, the span of the key's buffer
    /// they lie in (a record's windows are the key's latest, whose values lie side by side).
    fn copy(&mut self, w: &Windows, range: Range<usize>) -> Range<usize> {
        let first = self.slots.len();
        let saved = &w.slots[range];
        let lo = saved.iter().map(|s| s.at).min().unwrap_or(0);
        let hi = saved.iter().map(|s| s.at + s.len).max().unwrap_or(0);
        let base = self.bytes.len() as u32;
        self.bytes
            .extend_from_slice(&w.bytes[lo as usize..hi.max(lo) as usize]);
        self.slots.extend(saved.iter().map(|s| Slot {
            at: s.at - lo + base,
            ..*s
        }));
        first..self.slots.len()
    }

    /// Undoes every change, newest first, in `by_key`; returns the keys the transaction added,
    /// which the caller forgets.
    pub fn rollback(&self, by_key: &mut [Windows]) -> Vec<KeyId> {
        let mut new_keys = Vec::new();
        for undo in self.undo.iter().rev() {
            match undo {
                Undo::Suffix { id, from, saved } => {
                    let w = &mut by_key[*id as usize];
                    let first = w.first_from(*from);
                    w.truncate(first);
                    for slot in &self.slots[saved.clone()] {
                        w.push_back(slot.start, self.value(slot));
                    }
                }
                Undo::Front { id, saved } => {
                    let w = &mut by_key[*id as usize];
                    let back: Vec<(i64, &[u8])> = self.slots[saved.clone()]
                        .iter()
                        .map(|slot| (slot.start, self.value(slot)))
                        .collect();
                    w.push_front(&back);
                }
                Undo::NewKey(id) => {
                    by_key[*id as usize] = Windows::default();
                    new_keys.push(*id);
                }
            }
        }
        new_keys
    }

    fn value(&self, slot: &Slot) -> &[u8] {
        &self.bytes[slot.at as usize..(slot.at + slot.len) as usize]
    }
}
