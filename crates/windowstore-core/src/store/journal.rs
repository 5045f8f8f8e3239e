//! An undo log of a store's changes, so that a processor's call is all or nothing.
//!
//! A processor changes the store in place while it works through a call's records (each record
//! must see what the records before it did), and a call can still fail after that (a `collect`
//! under `fail` overflows, an output column cannot be built). While a journal is open, every
//! change records its inverse here: a new session is removed again, a replaced or removed
//! session (also one dropped by expiry) is put back with its old value. The first segment that
//! expires in a transaction is not copied here: the store keeps it whole until the transaction
//! ends, and a rollback puts it back first. Rolling back replays the inverses newest first and
//! restores store time and the counters, which leaves the store's contents, and so its snapshot
//! bytes, exactly as they were when the journal was opened.
//!
//! A session edited in place ([`super::SessionStore::amend`]: a record appended to a session)
//! records only the inverse of the edit: the old bytes of the ranges it spliced and the window
//! it had, so its cost does not grow with the session's value.
//!
//! Keys, old values and inverse splices are copied into one byte arena, so an entry costs no
//! allocation; a key is copied once for a run of entries of the same key (a sliding record
//! changes a dozen windows of its key).
//!
//! Each opened journal takes a transaction number never used before, so that a segment can
//! tell which of its values were written, fully journaled, in the open transaction and need no
//! second copy here ([`super::segment::Segment::rewrite`]).

use super::edits::Edits;
use super::metrics::Counters;

/// What undoing one change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Undo {
    /// The session was new: remove it.
    Remove,
    /// The session was stored with the old value (it was replaced, removed or expired): put it
    /// back.
    Put,
    /// The session was edited in place and moved from window `(start, end)` to `to`: apply the
    /// inverse splices (the value given with it, see [`Journal::amended`]) and move it back.
    Amend {
        /// The window it was moved to.
        to: (i64, i64),
    },
}

/// One change's inverse, as [`Journal::newest_first`] gives it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub undo: Undo,
    pub start: i64,
    pub end: i64,
}

/// One change's inverse as recorded (40 bytes: a call journals up to a million of them, and
/// its journal is kept for the next call only while it is small). Its key lies at
/// `key_at..key_end` of the arena; its old value (for an amend, the window it moved to and the
/// inverse splices) from the end of the previous record's value or of its own key, whichever
/// is later, to `value_end`. The top two bits of `value_end` tell the kind of undo.
#[derive(Debug, Clone, Copy)]
struct Recorded {
    start: i64,
    end: i64,
    key_at: usize,
    key_end: usize,
    value_end: u64,
}

const TAG_SHIFT: u32 = 62;
const OFFSET_MASK: u64 = (1 << TAG_SHIFT) - 1;
const REMOVE: u64 = 0;
const PUT: u64 = 1;
const AMEND: u64 = 2;

/// The store's scalar state when the journal was opened, and the inverses since.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    pub store_time: Option<i64>,
    pub sessions: u64,
    pub counters: Counters,
    entries: Vec<Recorded>,
    arena: Vec<u8>,
    /// Scratch for the inverse of an amend.
    inverse: Edits,
}

impl Journal {
    /// Empties the journal for a new transaction of a store at `store_time` holding
    /// `sessions`, with `counters`, keeping its buffers.
    pub fn reopen(&mut self, store_time: Option<i64>, sessions: u64, counters: Counters) {
        self.store_time = store_time;
        self.sessions = sessions;
        self.counters = counters;
        self.entries.clear();
        self.arena.clear();
    }

    /// The bytes the journal has recorded in the open transaction (keys, old values, inverse
    /// splices): what undo costs, for tests of growth.
    pub fn recorded_bytes(&self) -> usize {
        self.arena.len()
    }

    /// The bytes the journal's buffers hold on to.
    pub fn retained_bytes(&self) -> usize {
        self.arena.capacity() + self.entries.capacity() * std::mem::size_of::<Recorded>()
    }

    /// Records that session `[start, end]` of `key` was created.
    #[inline]
    pub fn created(&mut self, key: &[u8], start: i64, end: i64) {
        self.push(REMOVE, key, (start, end), &[]);
    }

    /// Records that session `[start, end]` of `key` was stored with `old` before it was
    /// replaced or removed.
    #[inline]
    pub fn replaced(&mut self, key: &[u8], start: i64, end: i64, old: &[u8]) {
        self.push(PUT, key, (start, end), old);
    }

    /// Records that session `from` of `key` was moved to `to` with `edits` applied, given its
    /// value `old` before the edit: only the spliced ranges of `old` are kept.
    pub fn amended(
        &mut self,
        key: &[u8],
        from: (i64, i64),
        to: (i64, i64),
        edits: &Edits,
        old: &[u8],
    ) {
        let key = self.key(key);
        self.arena.extend_from_slice(&to.0.to_le_bytes());
        self.arena.extend_from_slice(&to.1.to_le_bytes());
        self.inverse.clear();
        edits.inverse_of(old, &mut self.inverse);
        for (at, len, bytes) in self.inverse.iter() {
            // Values are below 4 GiB (the segment's limit), so their offsets fit u32.
            for word in [at, len, bytes.len()] {
                self.arena.extend_from_slice(&(word as u32).to_le_bytes());
            }
            self.arena.extend_from_slice(bytes);
        }
        self.record(AMEND, from, key);
    }

    /// Where `key` lies in the arena: the previous record's key if it is the same (a sliding
    /// record changes a dozen windows of its key), else a copy at the end.
    fn key(&mut self, key: &[u8]) -> (usize, usize) {
        match self.entries.last() {
            Some(last) if &self.arena[last.key_at..last.key_end] == key => {
                (last.key_at, last.key_end)
            }
            _ => {
                let at = self.arena.len();
                self.arena.extend_from_slice(key);
                (at, self.arena.len())
            }
        }
    }

    fn push(&mut self, tag: u64, key: &[u8], window: (i64, i64), value: &[u8]) {
        let key = self.key(key);
        self.arena.extend_from_slice(value);
        self.record(tag, window, key);
    }

    /// Records an inverse whose value ends at the arena's end.
    fn record(&mut self, tag: u64, (start, end): (i64, i64), (key_at, key_end): (usize, usize)) {
        self.entries.push(Recorded {
            start,
            end,
            key_at,
            key_end,
            value_end: (self.arena.len() as u64) | (tag << TAG_SHIFT),
        });
    }

    /// The inverses, newest first, with their key and old value (for an amend, the inverse
    /// splices).
    pub fn newest_first(&self) -> impl Iterator<Item = (Entry, &[u8], &[u8])> + '_ {
        (0..self.entries.len()).rev().map(|i| {
            let e = self.entries[i];
            let previous_end = match i {
                0 => 0,
                _ => (self.entries[i - 1].value_end & OFFSET_MASK) as usize,
            };
            let value_at = previous_end.max(e.key_end);
            let mut value = &self.arena[value_at..(e.value_end & OFFSET_MASK) as usize];
            let undo = match e.value_end >> TAG_SHIFT {
                REMOVE => Undo::Remove,
                PUT => Undo::Put,
                _ => {
                    let (to, splices) = value.split_at(16);
                    value = splices;
                    let word =
                        |at: usize| i64::from_le_bytes(to[at..at + 8].try_into().expect("8 bytes"));
                    Undo::Amend {
                        to: (word(0), word(8)),
                    }
                }
            };
            let entry = Entry {
                undo,
                start: e.start,
                end: e.end,
            };
            (entry, &self.arena[e.key_at..e.key_end], value)
        })
    }
}

/// The inverse splices that [`Journal::amended`] encoded, into `out`.
pub(crate) fn decode_inverse(mut bytes: &[u8], out: &mut Edits) {
    out.clear();
    let word = |b: &mut &[u8]| {
        let (w, rest) = b.split_at(4);
        *b = rest;
        u32::from_le_bytes(w.try_into().expect("4 bytes")) as usize
    };
    while !bytes.is_empty() {
        let (at, len, n) = (word(&mut bytes), word(&mut bytes), word(&mut bytes));
        let (old, rest) = bytes.split_at(n);
        out.push(at, len, old);
        bytes = rest;
    }
}
