//! Complete-data sliding windows: bounded input, no lateness, no store.
//!
//! Records are grouped by key and put in time order (as complete session windows do). In one
//! key group, with `D` the time difference, every distinct record time `u` gives its left window
//! `[u - D, u]` and, when it holds a record, its right window `[u + 1, u + 1 + D]`; a right
//! window that starts where a left window starts is that same window. Listed by start, each
//! window is a range of the group's records whose two ends only move forward, so the windows
//! come from two pointers and every aggregate from one pass over the ranges
//! ([`Aggregator::aggregate_ranges`]). The windows equal what the streaming processor gives for
//! the same records in time order.

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;

use super::check_record;
use crate::agg::{fill_overflow, AggSpec, Aggregator};
use crate::input::order::group_by_key_then_time;
use crate::input::{BoundInput, InputSpec};
use crate::output::OutputBuilder;
use crate::reject::{OnInvalid, Rejections};
use crate::session::complete::one_batch;
use crate::time::Duration;
use crate::{Error, Result};

/// Sliding windows of bounded input, and the rows that could not be used.
#[derive(Debug)]
pub struct CompleteSliding {
    /// One row per window: keys, `window_start`, `window_end`, `window_time`, aggregates.
    pub windows: RecordBatch,
    /// Rejected input rows with their `reason` (empty under `on_invalid="error"`).
    pub rejected: RecordBatch,
}

/// The windows of the key groups, by group then start: `start[w]` and the range
/// `order[lo[w]..hi[w]]` of the records it holds.
#[derive(Debug, Default)]
struct Windows {
    start: Vec<i64>,
    lo: Vec<u32>,
    hi: Vec<u32>,
    /// Right windows not yet listed (`pending[head..]`), by start.
    pending: Vec<(i64, u32, u32)>,
}

impl Windows {
    /// Room for the windows of `records` records: at most two each.
    fn with_capacity(records: usize) -> Self {
        Self {
            start: Vec::with_capacity(2 * records),
            lo: Vec::with_capacity(2 * records),
            hi: Vec::with_capacity(2 * records),
            pending: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, start: i64, lo: usize, hi: usize) {
        self.start.push(start);
        self.lo.push(lo as u32);
        self.hi.push(hi as u32);
    }

    /// Adds the windows of one key group: positions `g0..g1` of the time-ordered `times`.
    fn add_group(&mut self, times: &[i64], g0: usize, g1: usize, d: i64) {
        // Left and right windows each come by increasing start; right windows wait in
        // `pending` until no left window starts before them.
        let (mut left_lo, mut right_hi) = (g0, g0);
        self.pending.clear();
        let mut head = 0usize;
        let mut a = g0;
        while a < g1 {
            let u = times[a];
            let mut b = a + 1;
            while b < g1 && times[b] == u {
                b += 1;
            }
            // Left window [u - D, u]: from the first record at or after u - D through u.
            let start = u - d;
            while times[left_lo] < start {
                left_lo += 1;
            }
            while let Some(&(s, lo, hi)) = self.pending.get(head) {
                if s > start {
                    break;
                }
                // A right window starting exactly here is this left window: once only.
                if s < start {
                    self.push(s, lo as usize, hi as usize);
                }
                head += 1;
            }
            self.push(start, left_lo, b);
            // Right window [u + 1, u + 1 + D]: the records after u up to u + 1 + D, if any.
            right_hi = right_hi.max(b);
            while right_hi < g1 && times[right_hi] <= u + 1 + d {
                right_hi += 1;
            }
            if right_hi > b {
                self.pending.push((u + 1, b as u32, right_hi as u32));
            }
            a = b;
        }
        for i in head..self.pending.len() {
            let (s, lo, hi) = self.pending[i];
            self.push(s, lo as usize, hi as usize);
        }
    }
}

/// Sliding windows of `batches` (all of `schema`) with time difference `time_difference`.
pub fn sliding_windows(
    schema: SchemaRef,
    batches: &[RecordBatch],
    input: InputSpec,
    time_difference: Duration,
    aggs: Vec<AggSpec>,
    on_invalid: OnInvalid,
) -> Result<CompleteSliding> {
    if time_difference.is_negative() {
        return Err(Error::invalid(
            "time_difference",
            format!("must be >= 0, got {time_difference:?}"),
        ));
    }
    let input = InputSpec { gap: None, ..input };
    let bound = BoundInput::try_new(&input, schema)?;
    let schema = bound.schema().clone();
    let d = time_difference.to_ticks(&bound.time.base(), "time_difference")?;
    let aggregator = Aggregator::try_new(aggs, &schema)?;
    let output = OutputBuilder::try_new(&bound.keys, &bound.time, &aggregator, super::LAYOUT)?;
    let batch = one_batch(&bound, batches)?;
    let n = batch.num_rows();

    let keys = bound.keys.view(&batch)?;
    let times = bound.time.read(&batch);
    let mut rejections = Rejections::default();
    let mut valid = vec![true; n];
    for (row, ok) in valid.iter_mut().enumerate() {
        let Some(reason) = check_record(keys.is_null(row), times.problem(row), times.ticks[row], d)
        else {
            continue;
        };
        if on_invalid == OnInvalid::Error {
            return Err(Error::InvalidRecord {
                row,
                reason: reason.as_str().to_string(),
            });
        }
        *ok = false;
        rejections.reject(row, reason);
    }
    rejections.finish_batch(&batch)?;

    let grouped = group_by_key_then_time(&keys, &valid, &times.ticks);
    let (order, groups, sorted) = (grouped.order, grouped.runs, grouped.times);
    let mut windows = Windows::with_capacity(order.len());
    let mut group_of = Vec::with_capacity(2 * order.len());
    for g in groups.windows(2) {
        let before = windows.start.len();
        windows.add_group(&sorted, g[0], g[1], d);
        group_of.resize(windows.start.len(), order[g[0]]);
        debug_assert!(windows.start.len() > before || g[0] == g[1]);
    }

    let firsts = UInt32Array::from(group_of);
    let (lo, hi) = (&windows.lo, &windows.hi);
    let aggregates = match aggregator.aggregate_ranges(&batch, &order, lo, hi) {
        Ok(arrays) => arrays,
        Err(e) => {
            // A collect with overflow="fail" overflowed: name the first window that did.
            let Some((w, _)) = aggregator.first_range_overflow(&batch, &order, lo, hi) else {
                return Err(e);
            };
            let key = bound.keys.render_row(&batch, firsts.value(w) as usize);
            let start = windows.start[w];
            return Err(fill_overflow(e, key, start, start + d));
        }
    };
    // The output is about as large as everything else together: each intermediate goes as
    // soon as its column is built, and the starts move into theirs.
    let Windows { start, lo, hi, .. } = windows;
    drop(lo);
    let time = bound
        .time
        .to_array(hi.iter().map(|&h| sorted[h as usize - 1]).collect());
    drop(hi);
    let end = bound.time.to_array(start.iter().map(|s| s + d).collect());
    let start = bound.time.to_array(start);
    let mut columns: Vec<ArrayRef> = bound
        .keys
        .columns()
        .iter()
        .map(|&c| arrow_select::take::take(batch.column(c).as_ref(), &firsts, None))
        .collect::<Result<_, _>>()
        .map_err(Error::arrow("gathering keys"))?;
    columns.extend([start, end, time]);
    columns.extend(aggregates);
    let windows = RecordBatch::try_new(output.schema().clone(), columns)
        .map_err(Error::arrow("building output"))?;
    Ok(CompleteSliding {
        windows,
        rejected: rejections.drain(&schema)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows_of(times: &[i64], d: i64) -> Vec<(i64, Vec<i64>)> {
        let mut w = Windows::default();
        w.add_group(times, 0, times.len(), d);
        (0..w.start.len())
            .map(|i| {
                (
                    w.start[i],
                    times[w.lo[i] as usize..w.hi[i] as usize].to_vec(),
                )
            })
            .collect()
    }

    #[test]
    fn kafka_example_d5000() {
        assert_eq!(
            windows_of(&[8000, 9200, 12400], 5000),
            vec![
                (3000, vec![8000]),
                (4200, vec![8000, 9200]),
                (7400, vec![8000, 9200, 12400]),
                (8001, vec![9200, 12400]),
                (9201, vec![12400]),
            ]
        );
    }

    #[test]
    fn right_windows_wait_for_the_left_windows_before_them() {
        let got = windows_of(&[0, 10, 20], 100);
        let starts: Vec<i64> = got.iter().map(|w| w.0).collect();
        assert_eq!(starts, vec![-100, -90, -80, 1, 11]);
        assert_eq!(got[3].1, vec![10, 20]);
    }

    #[test]
    fn a_right_window_that_is_a_left_window_appears_once() {
        // D = 0: the right window of 1 is [2, 2], the left window of 2.
        assert_eq!(
            windows_of(&[1, 2, 2, 4], 0),
            vec![(1, vec![1]), (2, vec![2, 2]), (4, vec![4])]
        );
        // D = 5: the right window of 0 is [1, 6], the left window of 6.
        assert_eq!(windows_of(&[0, 6], 5), vec![(-5, vec![0]), (1, vec![6])]);
    }
}
