//! One segment: the sessions whose end falls in one time bucket, grouped by key.
//!
//! Each key's sessions are a short list sorted by `(end, start)`, so a lookup costs one hash
//! probe. Values live in one byte arena per segment, addressed by `(offset, len)`: no allocation
//! per session, and a same-size overwrite (the common case for fixed-width aggregates) happens
//! in place. Removed bytes become garbage that is compacted away once it outweighs the live bytes.
//!
//! A large value (at least [`BIG_VALUE_BYTES`]) lives in a buffer of its own instead: it can be
//! edited in place with a length change ([`Segment::amend`], amortized by the buffer's spare
//! capacity, as a `collect` list grows by one element per record) and moves to another segment
//! without a copy ([`Segment::detach`] / [`Segment::attach`]).
//!
//! [`Segment::rewrite`] replaces the values of a key's sessions in one pass over its list (a
//! sliding record updates every window of its key that contains it), in place when the length
//! stays. Under a journal the old bytes of every value rewritten go to the journal.
//!
//! The arena, the large values' buffers and compaction are in `arena`; the unit tests in
//! `tests`.

mod arena;

use hashbrown::HashMap;
use smallvec::SmallVec;

use super::edits::Edits;
use super::key_schema::SessionBounds;
use super::key_table::KeyId;
use crate::{Error, Result};

/// Garbage below this many bytes is never worth a compaction.
const MIN_COMPACTION_BYTES: usize = 4096;

/// Values of at least this many bytes are put in a buffer of their own rather than the arena.
pub const BIG_VALUE_BYTES: usize = 256;

/// The `len` of an entry whose value is a buffer of its own (`offset` indexes `bigs`).
const BIG: u16 = u16::MAX;

// An arena value's length fits an entry's `len` below `BIG`.
const _: () = assert!(BIG_VALUE_BYTES < BIG as usize);

/// A stored session: its window and where its value lies in the segment's arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Session end (inclusive).
    pub end: i64,
    /// Session start (inclusive).
    pub start: i64,
    offset: u32,
    len: u16,
}

impl Entry {
    /// The entry of session `[start, end]` whose value the segment stored at `(offset, len)`.
    fn new(start: i64, end: i64, (offset, len): (u32, u16)) -> Self {
        Self {
            end,
            start,
            offset,
            len,
        }
    }
}

/// The sessions of one key in one segment, sorted by `(end, start)`.
type Sessions = SmallVec<[Entry; 1]>;

/// One time bucket of the store.
#[derive(Debug, Default)]
pub struct Segment {
    by_key: HashMap<KeyId, Sessions>,
    arena: Vec<u8>,
    garbage: usize,
    sessions: usize,
    /// The buffers of large values; a free one is empty and listed in `free_bigs`.
    bigs: Vec<Vec<u8>>,
    free_bigs: Vec<u32>,
}

/// What [`Segment::rewrite`] did: sessions rewritten and value bytes written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// Sessions whose value was replaced.
    pub sessions: u64,
    /// Bytes of the new values.
    pub bytes: u64,
}

impl Segment {
    /// Stores `value` for session `[start, end]` of `key`; returns whether the session is new.
    pub fn put(&mut self, key: KeyId, start: i64, end: i64, value: &[u8]) -> Result<bool> {
        self.put_seen(key, start, end, value, |_| {})
    }

    /// [`Self::put`], first showing `seen` the session's stored value (`None`: it is new), so
    /// that a caller can journal it without a second lookup.
    pub fn put_seen(
        &mut self,
        key: KeyId,
        start: i64,
        end: i64,
        value: &[u8],
        seen: impl FnOnce(Option<&[u8]>),
    ) -> Result<bool> {
        if u32::try_from(value.len()).is_err() {
            return Err(Error::Capacity("a session value larger than 4 GiB".into()));
        }
        let list = self.by_key.entry(key).or_default();
        match list.binary_search_by(|e| (e.end, e.start).cmp(&(end, start))) {
            Ok(i) => {
                let old = list[i];
                seen(Some(self.value(&old)));
                if old.len == BIG {
                    let buf = &mut self.bigs[old.offset as usize];
                    buf.clear();
                    buf.extend_from_slice(value);
                    return Ok(false);
                }
                if old.len as usize == value.len() {
                    let at = old.offset as usize;
                    self.arena[at..at + value.len()].copy_from_slice(value);
                    return Ok(false);
                }
                let (offset, len) = self.store(value)?;
                // After the store: a compaction there kept the old value, still addressed.
                self.garbage += old.len as usize;
                let list = self.by_key.get_mut(&key).expect("list exists");
                list[i].offset = offset;
                list[i].len = len;
                self.compact_if_worth_it();
                Ok(false)
            }
            Err(i) => {
                seen(None);
                // The value first: one that cannot be stored (an arena past 4 GiB after a
                // compaction) must leave no entry, or the store would hold a session whose
                // key it has let go.
                let stored = self.store(value);
                let list = self.by_key.entry(key).or_default();
                let stored = match stored {
                    Ok(stored) => stored,
                    Err(e) => {
                        if list.is_empty() {
                            self.by_key.remove(&key);
                        }
                        return Err(e);
                    }
                };
                list.insert(i, Entry::new(start, end, stored));
                self.sessions += 1;
                Ok(true)
            }
        }
    }

    /// Edits the value of session `from` (`(start, end)`) of `key` in place and moves it to
    /// window `to` of the same segment, first showing `seen` its stored value; returns the
    /// bytes written (see [`Edits::apply`]), `None` if the session is not there. `edits` must fit the value ([`Edits::check`]); no session may be
    /// stored under `to` unless `to == from`.
    pub fn amend(
        &mut self,
        key: KeyId,
        from: (i64, i64),
        to: (i64, i64),
        edits: &Edits,
        seen: impl FnOnce(&[u8]),
    ) -> Result<Option<usize>> {
        let Some(list) = self.by_key.get(&key) else {
            return Ok(None);
        };
        let Ok(i) = list.binary_search_by(|e| (e.end, e.start).cmp(&(from.1, from.0))) else {
            return Ok(None);
        };
        let old = list[i];
        seen(self.value(&old));
        let written;
        let (offset, len) = if old.len == BIG {
            written = edits.apply(&mut self.bigs[old.offset as usize]);
            (old.offset, BIG)
        } else if edits.keeps_len() {
            let at = old.offset as usize;
            written = edits.apply_same_len(&mut self.arena[at..at + old.len as usize]);
            (old.offset, old.len)
        } else {
            let mut value = self.value(&old).to_vec();
            written = value.len() + edits.apply(&mut value);
            self.garbage += old.len as usize;
            self.store_owned(value)?
        };
        let list = self.by_key.get_mut(&key).expect("list exists");
        list[i].offset = offset;
        list[i].len = len;
        if to != from {
            let mut e = list.remove(i);
            (e.start, e.end) = to;
            let at = list.partition_point(|x| (x.end, x.start) < (to.1, to.0));
            list.insert(at, e);
        }
        // After the entry has its new place: compaction moves what the entries address.
        self.compact_if_worth_it();
        Ok(Some(written))
    }

    /// Removes session `[start, end]` of `key` and returns its value (a large value's own
    /// buffer, without a copy), to be [`Self::attach`]ed to another segment.
    pub fn detach(&mut self, key: KeyId, start: i64, end: i64) -> Option<Vec<u8>> {
        let list = self.by_key.get_mut(&key)?;
        let i = list
            .binary_search_by(|e| (e.end, e.start).cmp(&(end, start)))
            .ok()?;
        let old = list.remove(i);
        if list.is_empty() {
            self.by_key.remove(&key);
        }
        self.sessions -= 1;
        let value = if old.len == BIG {
            self.free_bigs.push(old.offset);
            std::mem::take(&mut self.bigs[old.offset as usize])
        } else {
            self.garbage += old.len as usize;
            self.value(&old).to_vec()
        };
        self.compact_if_worth_it();
        Some(value)
    }

    /// Stores `value` for the new session `[start, end]` of `key` (none may be stored there),
    /// keeping a large value's buffer.
    pub fn attach(&mut self, key: KeyId, start: i64, end: i64, value: Vec<u8>) -> Result<()> {
        let stored = self.store_owned(value)?;
        let list = self.by_key.entry(key).or_default();
        let at = list.partition_point(|x| (x.end, x.start) < (end, start));
        list.insert(at, Entry::new(start, end, stored));
        self.sessions += 1;
        Ok(())
    }

    /// Removes session `[start, end]` of `key`; returns whether it was there.
    pub fn remove(&mut self, key: KeyId, start: i64, end: i64) -> bool {
        self.remove_seen(key, start, end, |_| {})
    }

    /// [`Self::remove`], first showing `seen` the session's stored value, so that a caller
    /// can journal it without a second lookup.
    pub fn remove_seen(
        &mut self,
        key: KeyId,
        start: i64,
        end: i64,
        seen: impl FnOnce(&[u8]),
    ) -> bool {
        let Some(list) = self.by_key.get_mut(&key) else {
            return false;
        };
        let Ok(i) = list.binary_search_by(|e| (e.end, e.start).cmp(&(end, start))) else {
            return false;
        };
        let old = list.remove(i);
        if list.is_empty() {
            self.by_key.remove(&key);
        }
        seen(self.value(&old));
        self.sessions -= 1;
        if old.len == BIG {
            self.free_bigs.push(old.offset);
            self.bigs[old.offset as usize] = Vec::new();
        } else {
            self.garbage += old.len as usize;
        }
        self.compact_if_worth_it();
        true
    }

    /// Replaces the value of every session of `key` within `bounds`, in `(end, start)` order:
    /// `f` gets the session's window and value and writes its new value into `out` (emptied
    /// first). What a put of each new value does, without a lookup per session.
    ///
    /// `journal` records the old value of each session rewritten (`None`: no journal). An
    /// error from `f` stops the rewrite where it is (sessions before it are rewritten).
    pub fn rewrite(
        &mut self,
        key: KeyId,
        bounds: SessionBounds,
        mut journal: Option<impl FnMut(i64, i64, &[u8])>,
        out: &mut Vec<u8>,
        mut f: impl FnMut(i64, i64, &[u8], &mut Vec<u8>) -> Result<()>,
        done: &mut Rewritten,
    ) -> Result<()> {
        let mut i = match self.by_key.get(&key) {
            Some(list) => list.partition_point(|e| e.end < bounds.earliest_end),
            None => return Ok(()),
        };
        loop {
            // In place while it can; a value that must move leaves the loop to be stored
            // (`store` may compact, which moves every value), then the loop goes on after it.
            let Self {
                by_key,
                arena,
                bigs,
                ..
            } = self;
            let Some(list) = by_key.get_mut(&key) else {
                break;
            };
            let mut moving = None;
            while let Some(e) = list.get_mut(i) {
                if e.end > bounds.latest_end {
                    break;
                }
                i += 1;
                if e.start > bounds.latest_start {
                    continue;
                }
                let at = e.offset as usize;
                let old = if e.len == BIG {
                    &bigs[at][..]
                } else {
                    &arena[at..at + e.len as usize]
                };
                out.clear();
                f(e.start, e.end, old, out)?;
                done.sessions += 1;
                done.bytes += out.len() as u64;
                if let Some(record) = &mut journal {
                    record(e.start, e.end, old);
                }
                if e.len == BIG {
                    let buf = &mut bigs[at];
                    buf.clear();
                    buf.extend_from_slice(out);
                } else if e.len as usize == out.len() {
                    arena[at..at + out.len()].copy_from_slice(out);
                } else {
                    moving = Some((i - 1, e.len as usize));
                    break;
                }
            }
            let Some((at, old_len)) = moving else {
                break;
            };
            let (offset, len) = self.store(out)?;
            // After the store: a compaction there kept the old value, still addressed.
            self.garbage += old_len;
            let list = self.by_key.get_mut(&key).expect("list exists");
            list[at].offset = offset;
            list[at].len = len;
        }
        self.compact_if_worth_it();
        Ok(())
    }

    /// The sessions of `key`, sorted by `(end, start)`.
    #[inline]
    pub fn sessions_of(&self, key: KeyId) -> &[Entry] {
        self.by_key.get(&key).map_or(&[], |l| l.as_slice())
    }

    /// The value bytes of an entry of this segment.
    #[inline]
    pub fn value(&self, entry: &Entry) -> &[u8] {
        if entry.len == BIG {
            return &self.bigs[entry.offset as usize];
        }
        let at = entry.offset as usize;
        &self.arena[at..at + entry.len as usize]
    }

    /// Every session of the segment with `earliest_end <= end <= latest_end`, with its key: each
    /// key's list is entered by binary search, so a narrow range costs a probe per key rather
    /// than a visit of every session. Keys in no particular order.
    pub fn iter_by_end(
        &self,
        earliest_end: i64,
        latest_end: i64,
    ) -> impl Iterator<Item = (KeyId, &Entry)> + '_ {
        self.by_key
            .iter()
            .flat_map(move |(&key, list)| by_end(key, list, earliest_end, latest_end))
    }

    /// [`Self::iter_by_end`] for a store far larger than the cache: the lists are gathered
    /// first (a pass over the hash table alone) and each is read at its ends and middle, where
    /// the search lands first, before any is searched. Each list is then a cache miss, and
    /// these reads, independent of one another, overlap, where the searches' chains of
    /// dependent reads wait for each miss in turn.
    pub fn iter_by_end_ahead(
        &self,
        earliest_end: i64,
        latest_end: i64,
    ) -> impl Iterator<Item = (KeyId, &Entry)> + '_ {
        let lists: Vec<(KeyId, &[Entry])> = self
            .by_key
            .iter()
            .map(|(&key, list)| (key, list.as_slice()))
            .collect();
        let touched = lists.iter().fold(0i64, |sum, (_, list)| {
            let at = |i: usize| list.get(i).map_or(0, |e| e.end);
            sum ^ at(0) ^ at(list.len() / 2) ^ at(list.len().wrapping_sub(1))
        });
        std::hint::black_box(touched);
        lists
            .into_iter()
            .flat_map(move |(key, list)| by_end(key, list, earliest_end, latest_end))
    }

    /// The smallest end at or after `earliest_end` stored in the segment, if any: one binary
    /// search per key, no allocation.
    pub fn earliest_end_from(&self, earliest_end: i64) -> Option<i64> {
        self.by_key
            .values()
            .filter_map(|list| {
                let from = list.partition_point(|e| e.end < earliest_end);
                list.get(from).map(|e| e.end)
            })
            .min()
    }

    /// Every session of the segment with its key, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (KeyId, &Entry)> + '_ {
        self.by_key
            .iter()
            .flat_map(|(&key, list)| list.iter().map(move |e| (key, e)))
    }

    /// Number of sessions stored.
    pub fn len(&self) -> usize {
        self.sessions
    }

    /// Whether the segment holds no session.
    pub fn is_empty(&self) -> bool {
        self.sessions == 0
    }

    /// Live value bytes (garbage excluded).
    pub fn value_bytes(&self) -> usize {
        self.arena.len() - self.garbage + self.bigs.iter().map(Vec::len).sum::<usize>()
    }

    /// An empty segment with room for the sessions of `like`: the keys it holds and its
    /// value bytes, so that filling it grows neither its map nor its arena.
    pub fn sized_like(like: &Segment) -> Self {
        Self {
            by_key: HashMap::with_capacity(like.by_key.len()),
            arena: Vec::with_capacity(like.arena.len()),
            ..Self::default()
        }
    }

    /// Makes room for `keys` more keys and `bytes` more value bytes (the arena's share: large
    /// values have buffers of their own).
    pub fn reserve(&mut self, keys: usize, bytes: usize) {
        self.by_key.reserve(keys);
        self.arena.reserve(bytes);
    }

    /// Empties the segment as a new one, keeping the memory of its map and arena.
    pub fn clear(&mut self) {
        self.by_key.clear();
        self.arena.clear();
        self.garbage = 0;
        self.sessions = 0;
        self.bigs.clear();
        self.free_bigs.clear();
    }

    /// Heap bytes the segment uses.
    pub fn heap_bytes(&self) -> usize {
        let spilled: usize = self
            .by_key
            .values()
            .filter(|l| l.spilled())
            .map(|l| l.capacity() * std::mem::size_of::<Entry>())
            .sum();
        self.by_key.capacity() * (std::mem::size_of::<(KeyId, Sessions)>() + 1)
            + spilled
            + self.arena.capacity()
            + self.bigs.capacity() * std::mem::size_of::<Vec<u8>>()
            + self.bigs.iter().map(Vec::capacity).sum::<usize>()
            + self.free_bigs.capacity() * std::mem::size_of::<u32>()
    }
}

/// The sessions of `list` (one key's, sorted by end) with `earliest_end <= end <= latest_end`,
/// found by binary search.
fn by_end(
    key: KeyId,
    list: &[Entry],
    earliest_end: i64,
    latest_end: i64,
) -> impl Iterator<Item = (KeyId, &Entry)> {
    let from = list.partition_point(|e| e.end < earliest_end);
    list[from..]
        .iter()
        .take_while(move |e| e.end <= latest_end)
        .map(move |e| (key, e))
}

#[cfg(test)]
mod tests;
