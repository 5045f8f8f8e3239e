//! Which closed session each held row belongs to: the sessions a call tags, in output order,
//! grouped by key, with each key's sessions' spans.

use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};

use super::{Bounds, Entry};
use crate::{Error, Result};

/// A session's span of its key's held rows: times `start..=end`, arrived by `last`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    start: i64,
    end: i64,
    last: i64,
}

impl Span {
    fn holds(&self, (t, seq): Entry) -> bool {
        self.start <= t && t <= self.end && seq <= self.last
    }
}

/// The sessions a call tags, in output order, grouped by key.
///
/// A session `(key, start, end, last)` holds its key's rows timed `start..=end` that arrived
/// by `last`, except those of a session of the key that closed before it. Two sessions of a
/// key overlap only when the later one began after the earlier one closed and left the store
/// (docs/semantics.md, streaming rule 6); the later one's rows within the earlier one's span
/// arrived after it closed, so after its last row. Each row goes to the session of its key
/// with the earliest last arrival that holds it.
#[derive(Debug)]
pub(super) struct Closing {
    /// The sessions (rows of the caller's windows) by key, then start, then row: key bytes
    /// compare like the key values ([`crate::input::key_codec`]), so this is the output order.
    pub(super) order: Vec<u32>,
    /// Each key's run of `order`, and of `spans`.
    groups: Vec<Range<usize>>,
    /// Each key's sessions' spans by start (then last arrival), with their place in the
    /// output, to find the one each held row belongs to in a few steps (a key can close many
    /// sessions in one call).
    spans: Vec<(Span, u32)>,
    /// The latest end of a key's sessions up to each one in `spans`.
    reach: Vec<i64>,
}

impl Closing {
    pub(super) fn new(windows: &RecordBatch, bounds: &[Bounds<'_>], keys: usize) -> Result<Self> {
        if bounds.is_empty() {
            return Ok(Self {
                order: Vec::new(),
                groups: Vec::new(),
                spans: Vec::new(),
                reach: Vec::new(),
            });
        }
        let last = windows
            .column(keys + 2)
            .as_primitive_opt::<Int64Type>()
            .filter(|c| c.null_count() == 0 && c.len() == bounds.len())
            .ok_or_else(|| Error::Internal("records mode: no last arrival numbers".into()))?
            .values();
        let mut order: Vec<u32> = (0..bounds.len() as u32).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (bounds[a as usize], bounds[b as usize]);
            a.0.cmp(b.0).then(a.1.cmp(&b.1))
        });
        let mut groups = Vec::new();
        let mut spans = Vec::with_capacity(order.len());
        let mut reach = Vec::with_capacity(order.len());
        let mut from = 0;
        for group in order.chunk_by(|&a, &b| bounds[a as usize].0 == bounds[b as usize].0) {
            let to = from + group.len();
            spans.extend((from..to).map(|place| {
                let w = order[place] as usize;
                let (_, start, end) = bounds[w];
                let span = Span {
                    start,
                    end,
                    last: last[w],
                };
                (span, place as u32)
            }));
            spans[from..to].sort_unstable_by_key(|(s, _)| (s.start, s.last));
            let mut most = i64::MIN;
            reach.extend(spans[from..to].iter().map(|(s, _)| {
                most = most.max(s.end);
                most
            }));
            groups.push(from..to);
            from = to;
        }
        Ok(Self {
            order,
            groups,
            spans,
            reach,
        })
    }

    /// How many keys have sessions here.
    pub(super) fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Each key's bytes, in output order (the key's group is its position).
    pub(super) fn keys<'b>(&'b self, bounds: &'b [Bounds<'b>]) -> impl Iterator<Item = &'b [u8]> {
        self.groups
            .iter()
            .map(move |group| bounds[self.order[group.start] as usize].0)
    }

    /// The place of the session of key `group` that holds `entry`: of those whose span holds
    /// it, the one with the earliest last arrival.
    pub(super) fn holder(&self, group: usize, entry: Entry) -> Option<u32> {
        let range = self.groups[group].clone();
        let (spans, reach) = (&self.spans[range.clone()], &self.reach[range]);
        if let [(span, place)] = spans {
            return span.holds(entry).then_some(*place);
        }
        let t = entry.0;
        let mut i = spans.partition_point(|(s, _)| s.start <= t);
        let mut best: Option<(i64, u32)> = None;
        while i > 0 && reach[i - 1] >= t {
            i -= 1;
            let (span, place) = spans[i];
            if span.holds(entry) && best.is_none_or(|(last, _)| span.last < last) {
                best = Some((span.last, place));
            }
        }
        best.map(|(_, place)| place)
    }
}

/// The error of a closed session whose key holds no rows.
pub(super) fn no_rows() -> Error {
    Error::Internal("records mode: a closed session's key holds no rows".into())
}
