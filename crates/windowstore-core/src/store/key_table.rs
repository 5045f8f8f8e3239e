//! The key table: each distinct key's bytes stored once, named by a dense `u32` id.
//!
//! Segments refer to keys by id, so a key with many sessions costs its bytes once. An id is
//! reference-counted by the windows stored under it (and records mode's held rows, which
//! share the ids) and recycled when the last reference goes.

use hashbrown::HashTable;
use smallvec::SmallVec;
use std::hash::BuildHasher;

use crate::{Error, Result};

/// Dense id of a key in a [`KeyTable`].
pub type KeyId = u32;

/// Key bytes, inline up to 16 bytes: a lookup then costs no pointer chase for short keys.
type KeyBytes = SmallVec<[u8; 16]>;

#[derive(Debug, Default)]
struct Slot {
    bytes: KeyBytes,
    /// The windows stored under the key, and any other references (held rows).
    references: u32,
    /// No session of the key ends later (a bound: removals do not lower it).
    max_end: i64,
}

/// Interned key bytes with per-key session counts.
#[derive(Debug, Default)]
pub struct KeyTable {
    index: HashTable<KeyId>,
    slots: Vec<Slot>,
    free: Vec<KeyId>,
    hasher: hashbrown::DefaultHashBuilder,
    key_bytes: usize,
}

impl KeyTable {
    /// The id of `key`, if any session is stored under it.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<KeyId> {
        let hash = self.hasher.hash_one(key);
        self.index
            .find(hash, |&id| &*self.slots[id as usize].bytes == key)
            .copied()
    }

    /// An upper bound of the ends of the sessions stored under `id`. A lookup whose earliest
    /// end is above it cannot match, and segments past it hold nothing of the key.
    #[inline]
    pub fn max_end(&self, id: KeyId) -> i64 {
        self.slots[id as usize].max_end
    }

    /// Records that a session of `id` ends at `end`.
    #[inline]
    pub fn note_end(&mut self, id: KeyId, end: i64) {
        let slot = &mut self.slots[id as usize];
        slot.max_end = slot.max_end.max(end);
    }

    /// The id of `key`, interning it if new; counts one more session under it.
    pub fn acquire(&mut self, key: &[u8]) -> Result<KeyId> {
        let hash = self.hasher.hash_one(key);
        let slots = &mut self.slots;
        if let Some(&id) = self
            .index
            .find(hash, |&id| &*slots[id as usize].bytes == key)
        {
            slots[id as usize].references += 1;
            return Ok(id);
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                let id = KeyId::try_from(slots.len())
                    .map_err(|_| Error::Capacity("more than 2^32 distinct live keys".into()))?;
                slots.push(Slot::default());
                id
            }
        };
        slots[id as usize] = Slot {
            bytes: KeyBytes::from_slice(key),
            references: 1,
            max_end: i64::MIN,
        };
        self.key_bytes += key.len();
        let hasher = &self.hasher;
        self.index
            .insert_unique(hash, id, |&id| hasher.hash_one(&*slots[id as usize].bytes));
        Ok(id)
    }

    /// Makes room for `more` new keys without growing the index on the way.
    pub fn reserve(&mut self, more: usize) {
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.index
            .reserve(more, |&id| hasher.hash_one(&*slots[id as usize].bytes));
        self.slots.reserve(more.saturating_sub(self.free.len()));
    }

    /// Counts one more reference (a window stored) to the live key `id`.
    #[inline]
    pub fn retain(&mut self, id: KeyId) {
        self.slots[id as usize].references += 1;
    }

    /// Counts `n` more references to the live key `id`.
    pub fn retain_many(&mut self, id: KeyId, n: u32) {
        self.slots[id as usize].references += n;
    }

    /// How many references the live key `id` has.
    pub fn references(&self, id: KeyId) -> u32 {
        self.slots[id as usize].references
    }

    /// Counts `n` (at least one) references fewer to `id`; forgets the key when none is left.
    pub fn release_many(&mut self, id: KeyId, n: u32) {
        self.slots[id as usize].references -= n - 1;
        self.release(id);
    }

    /// Counts one reference fewer to `id`; forgets the key when none is left.
    pub fn release(&mut self, id: KeyId) {
        let slot = &mut self.slots[id as usize];
        slot.references -= 1;
        if slot.references > 0 {
            return;
        }
        let bytes = std::mem::take(&mut slot.bytes);
        let hash = self.hasher.hash_one(&*bytes);
        if let Ok(entry) = self.index.find_entry(hash, |&other| other == id) {
            entry.remove();
        }
        self.key_bytes -= bytes.len();
        self.free.push(id);
    }

    /// The bytes of the key named by `id`.
    #[inline]
    pub fn bytes(&self, id: KeyId) -> &[u8] {
        &self.slots[id as usize].bytes
    }

    /// Ids of the live keys whose bytes lie in `[from, to]`, in byte order.
    pub fn range(&self, from: &[u8], to: &[u8]) -> Vec<KeyId> {
        self.sorted_where(|key| key >= from && key <= to)
    }

    /// Ids of all live keys, in byte order.
    pub fn sorted(&self) -> Vec<KeyId> {
        self.sorted_where(|_| true)
    }

    /// Ids of the live keys that pass `keep`, in byte order. The table is a hash index, so an
    /// ordered scan costs a sort; it serves the rare cross-key reads, not the per-record path.
    ///
    /// The sort compares each key's first 16 bytes as one integer ([`prefix`]) and the bytes
    /// only when those are equal: a snapshot sorts every key, and a comparison of byte slices
    /// per step was most of its time.
    fn sorted_where(&self, keep: impl Fn(&[u8]) -> bool) -> Vec<KeyId> {
        let mut ids: Vec<(u128, KeyId)> = self
            .index
            .iter()
            .filter(|&&id| keep(self.bytes(id)))
            .map(|&id| (prefix(self.bytes(id)), id))
            .collect();
        ids.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| self.bytes(a.1).cmp(self.bytes(b.1)))
        });
        ids.into_iter().map(|(_, id)| id).collect()
    }

    /// Each id's position among the live keys in byte order (`u32::MAX` for a free id),
    /// indexed by id.
    pub fn ranks(&self) -> Vec<u32> {
        let mut ranks = vec![u32::MAX; self.slots.len()];
        for (rank, id) in self.sorted().into_iter().enumerate() {
            ranks[id as usize] = rank as u32;
        }
        ranks
    }

    /// Number of distinct live keys.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no key is live.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Bytes of all live keys.
    pub fn key_bytes(&self) -> usize {
        self.key_bytes
    }

    /// Heap bytes the table uses, key bytes included.
    pub fn heap_bytes(&self) -> usize {
        self.index.capacity() * (std::mem::size_of::<KeyId>() + 1)
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.free.capacity() * std::mem::size_of::<KeyId>()
            + self
                .slots
                .iter()
                .filter(|s| s.bytes.spilled())
                .map(|s| s.bytes.capacity())
                .sum::<usize>()
    }
}

/// The first 16 bytes of `key`, zero-padded, as a big-endian integer. Integer order refines
/// byte order: `prefix(a) < prefix(b)` implies `a < b` (where `a` ends first, its padding
/// byte 0 is at most `b`'s byte there, and a proper prefix sorts first); equal prefixes say
/// nothing.
fn prefix(key: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let n = key.len().min(16);
    bytes[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_shared_counted_and_recycled() {
        let mut t = KeyTable::default();
        let a = t.acquire(b"a").unwrap();
        assert_eq!(t.acquire(b"a").unwrap(), a);
        let b = t.acquire(b"bb").unwrap();
        assert_ne!(a, b);
        assert_eq!(t.key_bytes(), 3);
        t.release(a);
        assert_eq!(t.get(b"a"), Some(a));
        t.release(a);
        assert_eq!(t.get(b"a"), None);
        assert_eq!(t.key_bytes(), 2);
        let c = t.acquire(b"c").unwrap();
        assert_eq!(c, a, "a freed id is reused");
        assert_eq!(t.bytes(c), b"c");
    }

    #[test]
    fn range_is_inclusive_and_in_byte_order() {
        let mut t = KeyTable::default();
        for k in [&b"c"[..], b"a", b"aa", b"b", b"d"] {
            t.acquire(k).unwrap();
        }
        let got: Vec<&[u8]> = t
            .range(b"aa", b"c")
            .into_iter()
            .map(|id| t.bytes(id))
            .collect();
        assert_eq!(got, vec![&b"aa"[..], b"b", b"c"]);
    }

    proptest::proptest! {
        /// The prefix sort gives byte order: keys of few distinct bytes (0 among them, so
        /// that a key and itself with a 0 appended share a prefix), around 16 bytes long.
        #[test]
        fn sorted_is_byte_order(
            keys in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 255]), 0..20),
                0..40,
            ),
        ) {
            let mut t = KeyTable::default();
            for k in &keys {
                t.acquire(k).unwrap();
            }
            let got: Vec<&[u8]> = t.sorted().into_iter().map(|id| t.bytes(id)).collect();
            let mut want: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            want.sort_unstable();
            want.dedup();
            proptest::prop_assert_eq!(&got, &want);
            let ranks = t.ranks();
            for (rank, key) in want.iter().enumerate() {
                let id = t.get(key).unwrap();
                proptest::prop_assert_eq!(ranks[id as usize], rank as u32);
            }
        }
    }
}
