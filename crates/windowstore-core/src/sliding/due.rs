//! The sliding windows not emitted yet in `final` mode, by end: what closes when stream time
//! moves is taken out in end order without a scan of the store.
//!
//! One entry per window (its end and its key's id), in buckets of `2^shift` ticks of end, so
//! that a put costs a push at the end of a bucket and taking the windows that close costs the
//! buckets below the close plus a pass over the one it falls in. The processor's windows are
//! put in about the order they close, so the entries move through the buckets as a queue.

use std::collections::BTreeMap;

use crate::store::key_table::KeyId;

/// Buckets that hold this many ends of window or so, at most: the pass over the bucket a close
/// falls in stays short.
const BUCKETS_PER_SPAN: i64 = 64;

/// The windows not emitted yet, by end (see the module doc).
#[derive(Debug, Default)]
pub(super) struct Due {
    shift: u32,
    buckets: BTreeMap<i64, Vec<(i64, KeyId)>>,
    /// Emptied buckets, kept for reuse.
    spare: Vec<Vec<(i64, KeyId)>>,
}

impl Due {
    /// An empty queue for windows that stay due for about `span` ticks.
    pub fn new(span: i64) -> Self {
        let width = (span / BUCKETS_PER_SPAN).max(1);
        Self {
            shift: width.ilog2(),
            ..Self::default()
        }
    }

    /// Adds window `end` of key `id`.
    #[inline]
    pub fn push(&mut self, end: i64, id: KeyId) {
        let spare = &mut self.spare;
        self.buckets
            .entry(end >> self.shift)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push((end, id));
    }

    /// Moves the windows ending at or before `to` into `out` (those ending before `from`, if
    /// any, are dropped: they were emitted already).
    pub fn take(&mut self, from: i64, to: i64, out: &mut Vec<(i64, KeyId)>) {
        let last = to >> self.shift;
        while let Some(mut bucket) = self.buckets.first_entry() {
            if *bucket.key() > last {
                break;
            }
            if *bucket.key() < last {
                let mut entries = bucket.remove();
                out.extend(entries.iter().filter(|&&(end, _)| end >= from));
                entries.clear();
                self.spare.push(entries);
                continue;
            }
            let entries = bucket.get_mut();
            entries.retain(|&(end, id)| {
                if end > to {
                    return true;
                }
                if end >= from {
                    out.push((end, id));
                }
                false
            });
            if entries.is_empty() {
                self.spare.push(bucket.remove());
            }
            break;
        }
    }

    /// The earliest end at or after `from`.
    pub fn earliest(&self, from: i64) -> Option<i64> {
        self.buckets.values().find_map(|entries| {
            entries
                .iter()
                .map(|&(end, _)| end)
                .filter(|&end| end >= from)
                .min()
        })
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        while let Some((_, mut entries)) = self.buckets.pop_first() {
            entries.clear();
            self.spare.push(entries);
        }
    }

    /// Heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(i64, KeyId)>();
        self.buckets
            .values()
            .chain(&self.spare)
            .map(|v| v.capacity() * entry)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_what_ends_at_or_before_the_close_and_keeps_the_rest() {
        let mut due = Due::new(640);
        for (end, id) in [(5, 1), (900, 2), (12, 3), (30, 4), (31, 5), (3, 6)] {
            due.push(end, id);
        }
        assert_eq!(due.earliest(i64::MIN), Some(3));
        let mut out = Vec::new();
        due.take(4, 30, &mut out);
        out.sort_unstable();
        // 3 lies below `from`: emitted already.
        assert_eq!(out, vec![(5, 1), (12, 3), (30, 4)]);
        assert_eq!(due.earliest(i64::MIN), Some(31));
        out.clear();
        due.take(31, 1_000, &mut out);
        out.sort_unstable();
        assert_eq!(out, vec![(31, 5), (900, 2)]);
        assert_eq!(due.earliest(i64::MIN), None);
    }
}
