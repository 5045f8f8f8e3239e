//! One segment: the sessions whose end falls in one time bucket, grouped by key.
//!
//! Each key's sessions are a short list sorted by `(end, start)`, so a lookup costs one hash
//! probe. Values live in one byte arena per segment, addressed by `(offset, len)`: no allocation
//! per session, and a same-size overwrite (the common case for fixed-width aggregates) happens
//! in place. Removed bytes become garbage that is compacted away once it outweighs the live bytes.

use hashbrown::HashMap;
use smallvec::SmallVec;

use super::keys::KeyId;
use crate::{Error, Result};

/// Garbage below this many bytes is never worth a compaction.
const MIN_COMPACTION_BYTES: usize = 4096;

/// A stored session: its window and where its value lies in the segment's arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Session end (inclusive).
    pub end: i64,
    /// Session start (inclusive).
    pub start: i64,
    offset: u32,
    len: u32,
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
}

impl Segment {
    /// Stores `value` for session `[start, end]` of `key`; returns whether the session is new.
    pub fn put(&mut self, key: KeyId, start: i64, end: i64, value: &[u8]) -> Result<bool> {
        self.put_seen(key, start, end, value, |_| {})
    }

    /// [`Self::put`], first showing `seen` the value the session held (`None`: it is new), so
    /// that a caller can journal it without a second lookup.
    pub fn put_seen(
        &mut self,
        key: KeyId,
        start: i64,
        end: i64,
        value: &[u8],
        seen: impl FnOnce(Option<&[u8]>),
    ) -> Result<bool> {
        let len = u32::try_from(value.len())
            .map_err(|_| Error::Capacity("a session value larger than 4 GiB".into()))?;
        let list = self.by_key.entry(key).or_default();
        match list.binary_search_by(|e| (e.end, e.start).cmp(&(end, start))) {
            Ok(i) => {
                let old = list[i];
                let at = old.offset as usize;
                seen(Some(&self.arena[at..at + old.len as usize]));
                if old.len == len {
                    let at = old.offset as usize;
                    self.arena[at..at + value.len()].copy_from_slice(value);
                    return Ok(false);
                }
                self.garbage += old.len as usize;
                let offset = self.append(value)?;
                let list = self.by_key.get_mut(&key).expect("list exists");
                list[i].offset = offset;
                list[i].len = len;
                self.compact_if_worth_it();
                Ok(false)
            }
            Err(i) => {
                seen(None);
                list.insert(
                    i,
                    Entry {
                        end,
                        start,
                        offset: 0,
                        len: 0,
                    },
                );
                self.sessions += 1;
                let offset = self.append(value)?;
                let list = self.by_key.get_mut(&key).expect("list exists");
                list[i].offset = offset;
                list[i].len = len;
                Ok(true)
            }
        }
    }

    /// Removes session `[start, end]` of `key`; returns whether it was there.
    pub fn remove(&mut self, key: KeyId, start: i64, end: i64) -> bool {
        self.remove_seen(key, start, end, |_| {})
    }

    /// [`Self::remove`], first showing `seen` the value the session held, so that a caller
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
        let at = old.offset as usize;
        seen(&self.arena[at..at + old.len as usize]);
        if list.is_empty() {
            self.by_key.remove(&key);
        }
        self.sessions -= 1;
        self.garbage += old.len as usize;
        self.compact_if_worth_it();
        true
    }

    /// The sessions of `key`, sorted by `(end, start)`.
    #[inline]
    pub fn sessions_of(&self, key: KeyId) -> &[Entry] {
        self.by_key.get(&key).map_or(&[], |l| l.as_slice())
    }

    /// The value bytes of an entry of this segment.
    #[inline]
    pub fn value(&self, entry: &Entry) -> &[u8] {
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
        self.by_key.iter().flat_map(move |(&key, list)| {
            let from = list.partition_point(|e| e.end < earliest_end);
            list[from..]
                .iter()
                .take_while(move |e| e.end <= latest_end)
                .map(move |e| (key, e))
        })
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
        self.arena.len() - self.garbage
    }

    /// Heap bytes held by the segment.
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
    }

    fn append(&mut self, value: &[u8]) -> Result<u32> {
        if self.arena.len() + value.len() > u32::MAX as usize {
            self.compact();
            if self.arena.len() + value.len() > u32::MAX as usize {
                return Err(Error::Capacity(
                    "more than 4 GiB of values in one segment; use a smaller segment_interval"
                        .into(),
                ));
            }
        }
        // `arena.len() + value.len() <= u32::MAX` was checked just above.
        let offset = self.arena.len() as u32;
        self.arena.extend_from_slice(value);
        Ok(offset)
    }

    /// Compacts once garbage outweighs the live bytes: each byte is then moved at most once per
    /// byte freed, so the cost stays proportional to the writes.
    fn compact_if_worth_it(&mut self) {
        if self.garbage >= MIN_COMPACTION_BYTES && self.garbage > self.value_bytes() {
            self.compact();
        }
    }

    /// Rewrites the arena with live values only.
    fn compact(&mut self) {
        let mut arena = Vec::with_capacity(self.value_bytes());
        for list in self.by_key.values_mut() {
            for e in list.iter_mut() {
                let at = e.offset as usize;
                let bytes = &self.arena[at..at + e.len as usize];
                // The live bytes fit in u32: they were addressed by u32 offsets before.
                e.offset = arena.len() as u32;
                arena.extend_from_slice(bytes);
            }
        }
        self.arena = arena;
        self.garbage = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_overwrite_remove() {
        let mut s = Segment::default();
        assert!(s.put(1, 0, 10, b"abc").unwrap());
        assert!(s.put(1, 5, 10, b"x").unwrap());
        assert!(s.put(1, 0, 3, b"y").unwrap());
        let ends: Vec<(i64, i64)> = s.sessions_of(1).iter().map(|e| (e.end, e.start)).collect();
        assert_eq!(ends, vec![(3, 0), (10, 0), (10, 5)]);
        assert!(!s.put(1, 0, 10, b"xyz").unwrap(), "same-size overwrite");
        assert!(!s.put(1, 0, 10, b"longer").unwrap(), "resized overwrite");
        let e = s.sessions_of(1)[1];
        assert_eq!(s.value(&e), b"longer");
        assert_eq!(s.len(), 3);
        assert!(s.remove(1, 0, 10));
        assert!(!s.remove(1, 0, 10));
        assert!(!s.remove(2, 0, 10));
        assert_eq!(s.len(), 2);
        assert_eq!(s.value_bytes(), 2);
    }

    #[test]
    fn resizing_overwrites_alone_do_not_grow_garbage_without_bound() {
        let mut s = Segment::default();
        for i in 0..10_000usize {
            s.put(0, 0, 10, &vec![1u8; 1 + i % 50]).unwrap();
        }
        assert!(
            s.arena.len() < 2 * MIN_COMPACTION_BYTES + 100,
            "{}",
            s.arena.len()
        );
        assert_eq!(
            s.value(&s.sessions_of(0)[0]),
            &vec![1u8; 1 + 9_999 % 50][..]
        );
    }

    #[test]
    fn compaction_keeps_values() {
        let mut s = Segment::default();
        let big = vec![7u8; 1000];
        for i in 0..100 {
            s.put(i % 3, i as i64, 1000, &big).unwrap();
        }
        for i in 0..90 {
            assert!(s.remove(i % 3, i as i64, 1000));
        }
        assert!(s.arena.len() < 100 * 1000, "garbage was compacted");
        for (_, e) in s.iter() {
            assert_eq!(s.value(e), &big[..]);
        }
        assert_eq!(s.iter().count(), 10);
    }
}
