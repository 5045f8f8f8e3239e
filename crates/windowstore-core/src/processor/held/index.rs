//! Which held rows each key has: a list per key, found by the store's key id, and the journal
//! of the running call's changes to the lists.
//!
//! The lists live beside the store's key table ([`KeyTable`]) and share its ids and reference
//! counts: a key with held rows counts one reference more, so its id names it for as long as
//! it has any, and a row is held or found without hashing its key again. The store hands out
//! ids; the index only takes and lets go of its one reference per key.
//!
//! A rollback runs before the store's own, while the key table is as the call left it: the
//! store changes nothing after the call's takes (they come last), so the ids the journal names
//! still name their keys, except a key a take emptied that the store had forgotten already (its
//! sessions expired in the call): the take's reference was its last, and the rollback interns
//! it again by its bytes. The store's rollback then finds every key it puts back by its bytes.

use std::ops::Range;

use smallvec::SmallVec;

use crate::store::key_table::{KeyId, KeyTable};
use crate::Result;

/// A held row as its key's list has it: event time in ticks, then arrival number.
pub(super) type Entry = (i64, i64);

/// How to undo one change to the lists. Within a call every push comes before every take.
#[derive(Debug)]
enum Undo {
    /// Row `seq` was pushed onto key `id`; `first`: the key had no rows, and the index took its
    /// reference.
    Pushed { id: KeyId, seq: i64, first: bool },
    /// A take removed rows `from..to` of the journal's taken rows from key `id`; `emptied`: it
    /// took them all and let go of the key's reference, and the key's bytes are at this range
    /// of the journal's key bytes.
    Took {
        id: KeyId,
        from: usize,
        to: usize,
        emptied: Option<Range<usize>>,
    },
}

/// The held rows of each key, in no particular order, by key id, and the journal of the
/// running call's changes. A key's list keeps its buffer when the key leaves, for the next key
/// named by its id.
#[derive(Debug, Default)]
pub(super) struct Index {
    by_key: Vec<SmallVec<[Entry; 2]>>,
    undo: Vec<Undo>,
    /// The rows the running call took, for [`Undo::Took`].
    took: Vec<Entry>,
    /// The bytes of the keys the running call emptied, for [`Undo::Took`].
    took_keys: Vec<u8>,
}

impl Index {
    /// The held rows of key `id`.
    pub fn rows(&self, id: KeyId) -> &[Entry] {
        self.by_key.get(id as usize).map_or(&[], |rows| rows)
    }

    /// Holds `entry` under the live key `id` of `keys`.
    pub fn push(&mut self, keys: &mut KeyTable, id: KeyId, entry: Entry) {
        let at = id as usize;
        if at >= self.by_key.len() {
            self.by_key.resize_with(at + 1, SmallVec::new);
        }
        let rows = &mut self.by_key[at];
        let first = rows.is_empty();
        if first {
            keys.retain(id);
        }
        rows.push(entry);
        self.undo.push(Undo::Pushed {
            id,
            seq: entry.1,
            first,
        });
    }

    /// Takes out of key `id`'s rows those `taken` says; lets go of the key once none is left.
    pub fn take(&mut self, keys: &mut KeyTable, id: KeyId, mut taken: impl FnMut(Entry) -> bool) {
        let Some(rows) = self.by_key.get_mut(id as usize).filter(|r| !r.is_empty()) else {
            return;
        };
        let from = self.took.len();
        let mut kept = 0;
        for i in 0..rows.len() {
            let e = rows[i];
            if taken(e) {
                self.took.push(e);
            } else {
                rows[kept] = e;
                kept += 1;
            }
        }
        rows.truncate(kept);
        let emptied = (kept == 0).then(|| {
            let at = self.took_keys.len();
            self.took_keys.extend_from_slice(keys.bytes(id));
            keys.release(id);
            at..self.took_keys.len()
        });
        let to = self.took.len();
        self.undo.push(Undo::Took {
            id,
            from,
            to,
            emptied,
        });
    }

    /// Forgets the journal: the changes stay.
    pub fn commit(&mut self) {
        self.undo.clear();
        self.took.clear();
        self.took_keys.clear();
    }

    /// Undoes the journal's changes, newest first, before the store's rollback: references go
    /// back to `keys`.
    pub fn rollback(&mut self, keys: &mut KeyTable) -> Result<()> {
        // A key interned again under another id than it had (never, with the table's free
        // list handing out the id freed last; kept exact whatever it does).
        let mut moved: Vec<(KeyId, KeyId)> = Vec::new();
        while let Some(change) = self.undo.pop() {
            match change {
                Undo::Pushed { id, seq, first } => {
                    let id = moved
                        .iter()
                        .find(|&&(from, _)| from == id)
                        .map_or(id, |&(_, to)| to);
                    let rows = &mut self.by_key[id as usize];
                    if let Some(at) = rows.iter().rposition(|e| e.1 == seq) {
                        rows.swap_remove(at);
                    }
                    if first {
                        keys.release(id);
                    }
                }
                Undo::Took {
                    id,
                    from,
                    to,
                    emptied,
                } => {
                    let id = match emptied {
                        Some(bytes) => {
                            let again = keys.acquire(&self.took_keys[bytes])?;
                            if again != id {
                                moved.push((id, again));
                            }
                            if again as usize >= self.by_key.len() {
                                self.by_key.resize_with(again as usize + 1, SmallVec::new);
                            }
                            again
                        }
                        None => id,
                    };
                    self.by_key[id as usize].extend_from_slice(&self.took[from..to]);
                }
            }
        }
        self.took.clear();
        self.took_keys.clear();
        Ok(())
    }
}
