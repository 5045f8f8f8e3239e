//! A segment's sessions by end: the index a scan of closing windows reads, so that finding the
//! sessions that end in a range costs in proportion to what it finds, not to every key the
//! segment holds.
//!
//! The index lists `(end, key)` pairs, at least one for every end a key's sessions have in the
//! segment. Pairs are appended as sessions arrive and sorted in batches: a full tail is sorted
//! into a run, and runs are merged as a binary counter merges its digits (a run is merged into
//! the one before it once it is at least half its length), so that there are O(log n) runs
//! and each pair is moved O(log n) times. A session removed leaves its pair behind (stale):
//! a reader checks every pair against the segment's lists, and the segment rebuilds the index
//! from its lists once stale pairs could outnumber the live ones ([`ByEnd::worth_rebuilding`]).

use super::keys::KeyId;

/// Pairs gathered before they are sorted into a run.
const TAIL: usize = 1024;

/// The `(end, key)` index of one segment (see the module doc).
#[derive(Debug, Default, Clone)]
pub struct ByEnd {
    /// Sorted runs, oldest (and longest) first.
    runs: Vec<Vec<(i64, KeyId)>>,
    /// Pairs appended since the last sort, in no order.
    tail: Vec<(i64, KeyId)>,
    /// Pairs held, stale ones included.
    pairs: usize,
}

impl ByEnd {
    /// Lists a session of `key` that ends at `end`.
    pub fn add(&mut self, end: i64, key: KeyId) {
        self.tail.push((end, key));
        self.pairs += 1;
        if self.tail.len() >= TAIL {
            self.seal();
        }
    }

    /// Sorts the tail into a run and merges runs down to the counter's shape.
    fn seal(&mut self) {
        let mut run = std::mem::take(&mut self.tail);
        run.sort_unstable();
        run.dedup();
        self.runs.push(run);
        while let [.., older, newer] = self.runs.as_slice() {
            if newer.len() * 2 < older.len() {
                break;
            }
            let newer = self.runs.pop().unwrap_or_default();
            let older = self.runs.pop().unwrap_or_default();
            self.runs.push(merge(&older, &newer));
        }
        self.pairs = self.runs.iter().map(Vec::len).sum();
    }

    /// Whether stale pairs could outnumber the `live` sessions' pairs: the segment then
    /// rebuilds the index from its lists ([`Self::rebuild`]), a cost proportional to the
    /// removes that made the pairs stale.
    pub fn worth_rebuilding(&self, live: usize) -> bool {
        self.pairs > 2 * live + TAIL
    }

    /// Replaces the index with `pairs` (every live session's end and key).
    pub fn rebuild(&mut self, pairs: impl Iterator<Item = (i64, KeyId)>) {
        let mut run: Vec<(i64, KeyId)> = pairs.collect();
        run.sort_unstable();
        run.dedup();
        self.pairs = run.len();
        self.tail.clear();
        self.runs.clear();
        if !run.is_empty() {
            self.runs.push(run);
        }
    }

    /// The distinct pairs with `earliest_end <= end <= latest_end`, stale ones included, sorted.
    pub fn in_range(&self, earliest_end: i64, latest_end: i64) -> Vec<(i64, KeyId)> {
        let mut found: Vec<(i64, KeyId)> = self
            .tail
            .iter()
            .copied()
            .filter(|&(end, _)| earliest_end <= end && end <= latest_end)
            .collect();
        for run in &self.runs {
            let from = run.partition_point(|&(end, _)| end < earliest_end);
            let to = run.partition_point(|&(end, _)| end <= latest_end);
            found.extend_from_slice(&run[from..to.max(from)]);
        }
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The smallest end at or after `earliest_end` of a pair that `live` accepts (a pair it
    /// refuses is stale).
    pub fn earliest_from(
        &self,
        earliest_end: i64,
        live: impl Fn(i64, KeyId) -> bool,
    ) -> Option<i64> {
        let tail = self
            .tail
            .iter()
            .filter(|&&(end, key)| end >= earliest_end && live(end, key))
            .map(|&(end, _)| end)
            .min();
        let runs = self.runs.iter().filter_map(|run| {
            let from = run.partition_point(|&(end, _)| end < earliest_end);
            run[from..]
                .iter()
                .find(|&&(end, key)| live(end, key))
                .map(|&(end, _)| end)
        });
        tail.into_iter().chain(runs).min()
    }

    /// Forgets every pair, keeping the memory.
    pub fn clear(&mut self) {
        self.runs.clear();
        self.tail.clear();
        self.pairs = 0;
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        let pair = std::mem::size_of::<(i64, KeyId)>();
        (self.tail.capacity() + self.runs.iter().map(Vec::capacity).sum::<usize>()) * pair
            + self.runs.capacity() * std::mem::size_of::<Vec<(i64, KeyId)>>()
    }
}

/// Two sorted runs as one, without duplicates.
fn merge(a: &[(i64, KeyId)], b: &[(i64, KeyId)]) -> Vec<(i64, KeyId)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let next = if a[i] <= b[j] {
            i += 1;
            a[i - 1]
        } else {
            j += 1;
            b[j - 1]
        };
        if out.last() != Some(&next) {
            out.push(next);
        }
    }
    for &p in a[i..].iter().chain(&b[j..]) {
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_pair_in_range_once_whatever_the_runs() {
        let mut index = ByEnd::default();
        // Enough pairs for several runs and a tail, each added twice.
        for _ in 0..2 {
            for i in 0..5_000i64 {
                index.add((i * 7919) % 5_000, (i % 13) as KeyId);
            }
        }
        assert!(index.runs.len() > 1 || !index.tail.is_empty());
        let found = index.in_range(100, 199);
        let mut want: Vec<(i64, KeyId)> = (0..5_000i64)
            .map(|i| ((i * 7919) % 5_000, (i % 13) as KeyId))
            .filter(|&(end, _)| (100..=199).contains(&end))
            .collect();
        want.sort_unstable();
        want.dedup();
        assert_eq!(found, want);
        assert_eq!(index.earliest_from(4_998, |_, _| true), Some(4_998));
        assert_eq!(index.earliest_from(10, |end, _| end % 2 == 1), Some(11));
        assert_eq!(index.earliest_from(5_000, |_, _| true), None);
    }

    #[test]
    fn runs_stay_logarithmic_and_rebuild_drops_stale_pairs() {
        let mut index = ByEnd::default();
        for i in 0..200_000i64 {
            index.add(i, 1);
        }
        assert!(index.runs.len() <= 10, "{} runs", index.runs.len());
        assert!(index.worth_rebuilding(10));
        index.rebuild((0..10).map(|e| (e, 1)));
        assert!(!index.worth_rebuilding(10));
        assert_eq!(index.in_range(0, i64::MAX).len(), 10);
    }
}
