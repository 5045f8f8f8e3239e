//! The `updates` changelog of a sliding call, coalesced as it is made: one row per window
//! changed while open, with its value at its last logged change, in the order of those last
//! changes (docs/semantics.md section 6), as `emit::Changelog` gives it, without a copy of the
//! key and the state per change.
//!
//! A record logs about as many changes as a window holds records, most of them to windows it
//! or the key's earlier records of the call logged already. Each key's logged windows of the
//! call are listed beside it (`Windows::log_list`), so that a change finds its window's entry
//! in a short list; the rows read the windows' values once, at the end of the call. A window
//! whose value changes later without being logged (a closed window that a later record joins
//! silently) has its logged value copied first (`freeze`).

use smallvec::SmallVec;

use super::store::SlidingStore;
use super::windows::Windows;
use crate::emit::Rows;
use crate::store::key_table::KeyId;
use crate::{Error, Result};

/// A window logged in the call: its key and start, window time, when it was last logged, and
/// its value then if it changed since without being logged (a range of `frozen`).
#[derive(Debug, Clone, Copy)]
struct Entry {
    id: KeyId,
    start: i64,
    time: i64,
    order: u64,
    frozen: Option<(usize, usize)>,
}

/// The call's `updates` changelog (see the module doc).
#[derive(Debug, Default)]
pub(super) struct Log {
    entries: Vec<Entry>,
    /// Per key logged in the call, its entries: (window start, entry index).
    lists: Vec<SmallVec<[(i64, u32); 8]>>,
    frozen: Vec<u8>,
    next: u64,
}

impl Log {
    /// Logs window `start` of key `id` (whose windows are `w`) with window time `time`, in
    /// transaction `call`.
    pub fn note(&mut self, w: &mut Windows, call: u64, id: KeyId, start: i64, time: i64) {
        let order = self.next;
        self.next += 1;
        if w.log_call != call {
            w.log_call = call;
            w.log_list = self.lists.len() as u32;
            self.lists.push(SmallVec::new());
        }
        let list = &mut self.lists[w.log_list as usize];
        if let Some(&(_, e)) = list.iter().find(|(s, _)| *s == start) {
            let entry = &mut self.entries[e as usize];
            (entry.time, entry.order) = (time, order);
            return;
        }
        list.push((start, self.entries.len() as u32));
        self.entries.push(Entry {
            id,
            start,
            time,
            order,
            frozen: None,
        });
    }

    /// Before window `i` of `w` changes without being logged in transaction `call`: keeps its
    /// logged value, if the call logged it.
    pub fn freeze(&mut self, w: &Windows, call: u64, i: usize) {
        if w.log_call != call {
            return;
        }
        let start = w.slots[i].start;
        let list = &self.lists[w.log_list as usize];
        let Some(&(_, e)) = list.iter().find(|(s, _)| *s == start) else {
            return;
        };
        let entry = &mut self.entries[e as usize];
        if entry.frozen.is_none() {
            let at = self.frozen.len();
            self.frozen.extend_from_slice(w.value(i));
            entry.frozen = Some((at, self.frozen.len()));
        }
    }

    /// The call's rows, in the order of each window's last logged change.
    pub fn rows(&mut self, store: &SlidingStore) -> Result<Rows> {
        self.entries.sort_unstable_by_key(|e| e.order);
        let mut rows = Rows::default();
        for e in &self.entries {
            let value = match e.frozen {
                Some((from, to)) => &self.frozen[from..to],
                None => store.value_of(e.id, e.start).ok_or_else(|| {
                    Error::Internal(format!("a logged window starting at {} is gone", e.start))
                })?,
            };
            let window = (e.start, e.start + store.d(), e.time);
            rows.push(
                store.key_bytes(e.id),
                window,
                &value[8.min(value.len())..],
                false,
            );
        }
        Ok(rows)
    }
}
