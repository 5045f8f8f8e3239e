//! The `updates` changelog of a sliding call, coalesced as it is made: one row per window
//! changed while open, with its value at its last logged change, in the order of those last
//! changes (docs/semantics.md section 6), as `emit::Changelog` gives it, without a copy of the
//! key and the state per change.
//!
//! A record logs about as many changes as a window holds records, most of them to windows it
//! or the key's earlier records of the call logged already. A logged change only marks its
//! window with the change's number (`Windows::logged`, beside the windows the record has just
//! read); the rows read the marked windows' values once, at the end of the call, in the order
//! of the marks. A window whose value changes later without being logged (a closed window that
//! a later record joins silently) has its logged value copied first (`freeze`).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::store::SlidingStore;
use super::windows::Windows;
use crate::emit::Rows;
use crate::state;
use crate::store::key_table::KeyId;
use crate::{Error, Result};

/// The call's `updates` changelog (see the module doc).
#[derive(Debug, Default)]
pub(super) struct Log {
    /// The keys logged in the call.
    keys: Vec<KeyId>,
    /// The logged values of windows changed since without being logged, by when they were
    /// last logged.
    frozen: HashMap<u64, (usize, usize)>,
    frozen_bytes: Vec<u8>,
    /// When the next change is logged (from 1).
    next: u64,
}

impl Log {
    /// Logs window `i` of key `id` (whose windows are `w`), in transaction `call`.
    pub fn note(&mut self, w: &mut Windows, call: u64, id: KeyId, i: usize) {
        if w.log_call != call {
            w.log_call = call;
            w.logged.clear();
            w.logged.resize(w.slots.len(), 0);
            self.keys.push(id);
        }
        self.next += 1;
        w.logged[i] = self.next;
    }

    /// Before window `i` of `w` changes without being logged in transaction `call`: keeps its
    /// logged value, if the call logged it.
    pub fn freeze(&mut self, w: &Windows, call: u64, i: usize) {
        if w.log_call != call || w.logged[i] == 0 {
            return;
        }
        if let Entry::Vacant(slot) = self.frozen.entry(w.logged[i]) {
            let from = self.frozen_bytes.len();
            self.frozen_bytes.extend_from_slice(w.value(i));
            slot.insert((from, self.frozen_bytes.len()));
        }
    }

    /// The call's rows, in the order of each window's last logged change.
    pub fn rows(&mut self, store: &SlidingStore, call: u64) -> Result<Rows> {
        let mut logged: Vec<(u64, KeyId, usize)> = Vec::new();
        for &id in &self.keys {
            let w = store.windows_of(id);
            if w.log_call != call || w.logged.len() != w.slots.len() {
                return Err(Error::Internal("a key's logged windows are gone".into()));
            }
            logged.extend(
                w.logged
                    .iter()
                    .enumerate()
                    .filter(|(_, &order)| order != 0)
                    .map(|(i, &order)| (order, id, i)),
            );
        }
        logged.sort_unstable_by_key(|&(order, _, _)| order);
        let mut rows = Rows::default();
        for (order, id, i) in logged {
            let w = store.windows_of(id);
            let value = match self.frozen.get(&order) {
                Some(&(from, to)) => &self.frozen_bytes[from..to],
                None => w.value(i),
            };
            let (time, agg_state) = state::split(value);
            let start = w.slots[i].start;
            rows.push(
                store.key_bytes(id),
                (start, start + store.d(), time),
                agg_state,
                false,
            );
        }
        Ok(rows)
    }
}
