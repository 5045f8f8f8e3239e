//! The value storage of a segment: the byte arena, the buffers of large values, and
//! compaction of the arena's garbage.

use super::{Segment, BIG, BIG_VALUE_BYTES, MIN_COMPACTION_BYTES};
use crate::{Error, Result};

impl Segment {
    /// Live value bytes in the arena.
    pub(super) fn arena_bytes(&self) -> usize {
        self.arena.len() - self.garbage
    }

    /// Stores a value: in a buffer of its own if large, else at the end of the arena; returns
    /// the entry's `(offset, len)`.
    pub(super) fn store(&mut self, value: &[u8]) -> Result<(u32, u16)> {
        if value.len() >= BIG_VALUE_BYTES {
            return self.store_owned(value.to_vec());
        }
        Ok((self.append(value)?, value.len() as u16))
    }

    /// [`Self::store`] of a value already in a buffer (kept if the value is large).
    pub(super) fn store_owned(&mut self, value: Vec<u8>) -> Result<(u32, u16)> {
        if value.len() < BIG_VALUE_BYTES {
            return Ok((self.append(&value)?, value.len() as u16));
        }
        if u32::try_from(value.len()).is_err() {
            return Err(Error::Capacity("a session value larger than 4 GiB".into()));
        }
        let slot = match self.free_bigs.pop() {
            Some(slot) => {
                self.bigs[slot as usize] = value;
                slot
            }
            None => {
                let slot = u32::try_from(self.bigs.len())
                    .map_err(|_| Error::Capacity("too many large values in a segment".into()))?;
                self.bigs.push(value);
                slot
            }
        };
        Ok((slot, BIG))
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
    pub(super) fn compact_if_worth_it(&mut self) {
        if self.garbage >= MIN_COMPACTION_BYTES && self.garbage > self.arena_bytes() {
            self.compact();
        }
    }

    /// Rewrites the arena with live values only, with room for as many bytes again: the garbage
    /// the next compaction waits for (rewrites append), so that the arena does not grow by
    /// doubling in between.
    fn compact(&mut self) {
        let mut arena = Vec::with_capacity(2 * self.arena_bytes());
        for list in self.by_key.values_mut() {
            for e in list.iter_mut().filter(|e| e.len != BIG) {
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
