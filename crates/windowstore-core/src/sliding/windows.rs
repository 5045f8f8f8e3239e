//! The windows of one key in the sliding store (`super::store`): their starts in order, and
//! their values (window time, then aggregate state) in one buffer, changed in place.

use crate::{Error, Result};

/// Garbage below this many bytes of a key's buffer is never worth a compaction.
const MIN_COMPACTION_BYTES: usize = 256;

/// One window of a key: its start and where its value lies in the key's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    pub start: i64,
    pub at: u32,
    pub len: u32,
}

/// The windows of one key, in start order.
#[derive(Debug, Clone)]
pub(super) struct Windows {
    pub slots: Vec<Slot>,
    pub bytes: Vec<u8>,
    /// Bytes of `bytes` no slot points at.
    pub garbage: usize,
    /// The transaction that last saved these windows for undo, and from which start on.
    pub saved_in: u64,
    pub saved_from: i64,
    /// The transaction that last logged a change of these windows in `updates` mode, and per
    /// window when that call last logged it (`super::changelog`; 0: not logged). Empty, or as
    /// long as `slots`.
    pub log_call: u64,
    pub logged: Vec<u64>,
}

impl Default for Windows {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            bytes: Vec::new(),
            garbage: 0,
            saved_in: 0,
            saved_from: i64::MAX,
            log_call: 0,
            logged: Vec::new(),
        }
    }
}

impl Windows {
    /// The windows, in start order.
    #[inline]
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The value of window `i`: window time, then aggregate state.
    #[inline]
    pub fn value(&self, i: usize) -> &[u8] {
        let s = self.slots[i];
        &self.bytes[s.at as usize..(s.at + s.len) as usize]
    }

    /// The value of window `i`, to change in place.
    #[inline]
    pub fn value_mut(&mut self, i: usize) -> &mut [u8] {
        let s = self.slots[i];
        &mut self.bytes[s.at as usize..(s.at + s.len) as usize]
    }

    /// The window time of window `i`.
    #[inline]
    pub fn time(&self, i: usize) -> i64 {
        crate::state::split(self.value(i)).0
    }

    /// The index of the first window starting at or after `start`. Searched from the last
    /// window back, in steps that double: a record's windows are the key's latest, and the
    /// search then reads only the end of the list, which a read ahead brought in.
    #[inline]
    pub fn first_from(&self, start: i64) -> usize {
        let slots = &self.slots;
        let (mut lo, mut step) = (slots.len(), 1);
        while lo > 0 && slots[lo - 1].start >= start {
            let next = lo.saturating_sub(step);
            if slots[next].start < start {
                // The answer lies in (next, lo - 1].
                return next + 1 + slots[next + 1..lo - 1].partition_point(|s| s.start < start);
            }
            lo = next;
            step *= 2;
        }
        lo
    }

    /// Replaces the value of window `i` (in place when the length is the same).
    pub fn replace(&mut self, i: usize, value: &[u8]) -> Result<()> {
        let s = self.slots[i];
        if s.len as usize == value.len() {
            self.value_mut(i).copy_from_slice(value);
            return Ok(());
        }
        self.garbage += s.len as usize;
        self.slots[i] = self.append(s.start, value)?;
        self.compact_if_worth();
        Ok(())
    }

    /// Inserts window `start` with `value` at its place in start order, or replaces it if
    /// there is one; returns whether it was new.
    pub fn put(&mut self, start: i64, value: &[u8]) -> Result<bool> {
        let i = self.first_from(start);
        if self.slots.get(i).is_some_and(|s| s.start == start) {
            self.replace(i, value)?;
            return Ok(false);
        }
        let slot = self.append(start, value)?;
        self.slots.insert(i, slot);
        if !self.logged.is_empty() {
            self.logged.insert(i, 0);
        }
        Ok(true)
    }

    pub fn append(&mut self, start: i64, value: &[u8]) -> Result<Slot> {
        let (Ok(at), Ok(len)) = (u32::try_from(self.bytes.len()), u32::try_from(value.len()))
        else {
            return Err(Error::Capacity(
                "a key's sliding windows hold more than 4 GiB".into(),
            ));
        };
        self.bytes.extend_from_slice(value);
        Ok(Slot { start, at, len })
    }

    /// Drops the windows starting before `start`; returns how many.
    pub fn drop_before(&mut self, start: i64) -> usize {
        let n = self.slots.partition_point(|s| s.start < start);
        self.garbage += self.slots[..n]
            .iter()
            .map(|s| s.len as usize)
            .sum::<usize>();
        self.slots.drain(..n);
        self.logged.clear();
        if self.slots.is_empty() {
            self.bytes.clear();
            self.garbage = 0;
        }
        self.compact_if_worth();
        n
    }

    pub fn compact_if_worth(&mut self) {
        if self.garbage < MIN_COMPACTION_BYTES || self.garbage < self.bytes.len() / 2 {
            return;
        }
        let mut bytes = Vec::with_capacity(self.bytes.len() - self.garbage);
        for s in &mut self.slots {
            let at = bytes.len();
            bytes.extend_from_slice(&self.bytes[s.at as usize..(s.at + s.len) as usize]);
            s.at = at as u32;
        }
        self.bytes = bytes;
        self.garbage = 0;
    }

    pub fn live_bytes(&self) -> usize {
        self.bytes.len() - self.garbage
    }

    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>() + self.bytes.capacity()
    }
}

impl Windows {
    /// Drops the windows from index `first` on.
    pub fn truncate(&mut self, first: usize) {
        self.garbage += self.slots[first..]
            .iter()
            .map(|s| s.len as usize)
            .sum::<usize>();
        self.slots.truncate(first);
        self.logged.clear();
        self.compact_if_worth();
    }

    /// Adds window `start` with `value` after the last (which starts before `start`): a
    /// rollback putting back what it saved, which fitted before.
    pub fn push_back(&mut self, start: i64, value: &[u8]) {
        self.logged.clear();
        let at = self.bytes.len() as u32;
        self.bytes.extend_from_slice(value);
        self.slots.push(Slot {
            start,
            at,
            len: value.len() as u32,
        });
    }

    /// Puts `windows` (start and value, in start order, all before the first) in front: a
    /// rollback putting back dropped windows.
    pub fn push_front(&mut self, windows: &[(i64, &[u8])]) {
        let mut front = Vec::with_capacity(windows.len());
        for &(start, value) in windows {
            let at = self.bytes.len() as u32;
            self.bytes.extend_from_slice(value);
            front.push(Slot {
                start,
                at,
                len: value.len() as u32,
            });
        }
        self.slots.splice(0..0, front);
        self.logged.clear();
    }
}
