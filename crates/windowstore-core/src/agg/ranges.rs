//! The complete-data fast path for overlapping windows: every spec over monotone ranges.
//!
//! Sliding windows of one key, listed by start, cover ranges `[lo, hi)` of the key's records in
//! time order in which both ends only move forward. Each spec is then computed in O(records +
//! windows): integer sums and counts as running sums (add what enters, subtract what leaves:
//! exact in `i128`); float sums with the two-stacks queue ([`fold_monotone`]), which never
//! subtracts, so they never cancel; `min`/`max` with a monotonic deque; `first`/`last` with a
//! pointer each. `collect` copies each window's values (its output is that large anyway).

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, PrimitiveArray, UInt32Array};
use arrow_buffer::{NullBuffer, NullBufferBuilder, ScalarBuffer};
use arrow_schema::DataType;

use super::finish::{list_array, list_offset, sum_overflow};
use super::native::{dispatch_numeric, dispatch_word, Num};
use super::slot::{Op, Slot};
use super::spec::Overflow;
use super::state::overflow_error;
use crate::{Error, Result};

/// Windows as ranges of positions in `order` (the rows in (key, time, arrival) order): window
/// `w` holds `order[lo[w]..hi[w]]`; `lo` and `hi` never decrease.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ranges<'a> {
    /// Row indices of the batch, in (key, time, arrival) order.
    pub order: &'a [u32],
    /// First position of each window.
    pub lo: &'a [u32],
    /// One past the last position of each window.
    pub hi: &'a [u32],
}

impl Ranges<'_> {
    fn len(&self) -> usize {
        self.lo.len()
    }

    fn bounds(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.lo
            .iter()
            .zip(self.hi)
            .map(|(&l, &h)| (l as usize, h as usize))
    }
}

/// Folds every range of `ranges` with the associative `combine` (identity `id`, element `i`
/// of `order` turned into an accumulator by `elem`) and hands each result to `emit`, in
/// O(elements + ranges) combines: the two-stacks queue. The back of the window is a running
/// fold; the front holds suffix folds, rebuilt from the back whenever the window's start passes
/// the boundary between them. Each element enters the back once and the front at most once.
#[inline(always)]
fn fold_monotone<A: Copy>(
    ranges: Ranges<'_>,
    id: A,
    elem: impl Fn(u32) -> A,
    combine: impl Fn(A, A) -> A,
    mut emit: impl FnMut(A),
) {
    let order = ranges.order;
    // suffix[j - front] = fold of order[j..mid]; back = fold of order[mid..back_end].
    let mut suffix: Vec<A> = Vec::new();
    let (mut front, mut mid, mut back_end) = (0usize, 0usize, 0usize);
    let mut back = id;
    for (l, h) in ranges.bounds() {
        while back_end < h {
            back = combine(back, elem(order[back_end]));
            back_end += 1;
        }
        if l >= mid {
            // The front is used up: the window's part of the back becomes the new front.
            suffix.clear();
            suffix.resize(h.saturating_sub(l), id);
            let mut acc = id;
            for j in (l..h).rev() {
                acc = combine(elem(order[j]), acc);
                suffix[j - l] = acc;
            }
            (front, mid, back) = (l, h.max(l), id);
        }
        emit(if l < h {
            combine(suffix[l - front], back)
        } else {
            id
        });
    }
}

/// Folds every range of `ranges` with an invertible fold: `add` each element as it enters the
/// window, `remove` it as it leaves; hands each window's accumulator to `emit`.
#[inline(always)]
fn running<A: Copy>(
    ranges: Ranges<'_>,
    id: A,
    add: impl Fn(A, u32) -> A,
    remove: impl Fn(A, u32) -> A,
    mut emit: impl FnMut(A),
) {
    let order = ranges.order;
    let (mut entered, mut left, mut acc) = (0usize, 0usize, id);
    for (l, h) in ranges.bounds() {
        while entered < h {
            acc = add(acc, order[entered]);
            entered += 1;
        }
        while left < l {
            acc = remove(acc, order[left]);
            left += 1;
        }
        emit(acc);
    }
}

/// A validity test of row indices: `None` when the column has no nulls.
fn validity(array: &dyn Array) -> Option<&NullBuffer> {
    array.nulls().filter(|n| n.null_count() > 0)
}

#[inline(always)]
fn is_valid(nulls: Option<&NullBuffer>, row: u32) -> bool {
    nulls.is_none_or(|n| n.is_valid(row as usize))
}

/// `sum` of an integer column: exact in `i128`, checked into Int64.
fn sum_int<T: ArrowPrimitiveType>(
    slot: &Slot,
    a: &PrimitiveArray<T>,
    ranges: Ranges<'_>,
) -> Result<ArrayRef>
where
    T::Native: Num,
{
    let (values, nulls) = (a.values(), validity(a));
    let mut sums = Vec::with_capacity(ranges.len());
    let mut valid = NullBufferBuilder::new(ranges.len());
    let mut overflow = None;
    // Fewer than 2^61 terms below 2^64 each: the running i128 sum cannot overflow.
    let term = |i: u32| match is_valid(nulls, i) {
        true => (values[i as usize].to_i128(), 1u64),
        false => (0, 0),
    };
    running(
        ranges,
        (0i128, 0u64),
        |(s, n), i| {
            let (v, c) = term(i);
            (s + v, n + c)
        },
        |(s, n), i| {
            let (v, c) = term(i);
            (s - v, n - c)
        },
        |(s, n)| {
            sums.push(i64::try_from(s).unwrap_or_else(|_| {
                overflow.get_or_insert(s);
                0
            }));
            valid.append(n > 0);
        },
    );
    if let Some(s) = overflow {
        return Err(sum_overflow(slot, Some(s)));
    }
    Ok(Arc::new(Int64Array::new(
        ScalarBuffer::from(sums),
        valid.finish(),
    )))
}

/// `sum` (`MEAN = false`) or `mean` of a float column, in `f64` from `-0.0`.
fn sum_float<T: ArrowPrimitiveType, const MEAN: bool>(
    a: &PrimitiveArray<T>,
    ranges: Ranges<'_>,
) -> ArrayRef
where
    T::Native: Num,
{
    let (values, nulls) = (a.values(), validity(a));
    let mut out = Vec::with_capacity(ranges.len());
    let mut valid = NullBufferBuilder::new(ranges.len());
    fold_monotone(
        ranges,
        (-0.0f64, 0u64),
        |i| match is_valid(nulls, i) {
            true => (values[i as usize].to_f64(), 1),
            false => (-0.0, 0),
        },
        |(x, a), (y, b)| (x + y, a + b),
        |(s, n)| {
            out.push(if !MEAN {
                s
            } else if n > 0 {
                s / n as f64
            } else {
                0.0
            });
            valid.append(n > 0);
        },
    );
    Arc::new(Float64Array::new(ScalarBuffer::from(out), valid.finish()))
}

/// `mean` of an integer column (sums exact in `i128`).
fn mean_int<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>, ranges: Ranges<'_>) -> ArrayRef
where
    T::Native: Num,
{
    let (values, nulls) = (a.values(), validity(a));
    let mut out = Vec::with_capacity(ranges.len());
    let mut valid = NullBufferBuilder::new(ranges.len());
    let term = |i: u32| match is_valid(nulls, i) {
        true => (values[i as usize].to_i128(), 1u64),
        false => (0, 0),
    };
    running(
        ranges,
        (0i128, 0u64),
        |(s, n), i| {
            let (v, c) = term(i);
            (s + v, n + c)
        },
        |(s, n), i| {
            let (v, c) = term(i);
            (s - v, n - c)
        },
        |(s, n)| {
            out.push(if n > 0 { s as f64 / n as f64 } else { 0.0 });
            valid.append(n > 0);
        },
    );
    Arc::new(Float64Array::new(ScalarBuffer::from(out), valid.finish()))
}

/// The best valid row of each window (`None` for windows without valid rows), as take
/// indices: a monotonic deque of the window's candidates, best first. `better(x, y)` says that
/// row `x` strictly beats row `y`; of equal rows the earliest wins.
fn best_rows(
    nulls: Option<&NullBuffer>,
    ranges: Ranges<'_>,
    better: impl Fn(u32, u32) -> bool,
) -> UInt32Array {
    let order = ranges.order;
    let mut chosen = Vec::with_capacity(ranges.len());
    let mut valid = NullBufferBuilder::new(ranges.len());
    let mut deque: VecDeque<usize> = VecDeque::new();
    let mut entered = 0usize;
    for (l, h) in ranges.bounds() {
        while entered < h {
            let row = order[entered];
            if is_valid(nulls, row) {
                while deque.back().is_some_and(|&b| better(row, order[b])) {
                    deque.pop_back();
                }
                deque.push_back(entered);
            }
            entered += 1;
        }
        while deque.front().is_some_and(|&f| f < l) {
            deque.pop_front();
        }
        let best = deque.front().map(|&p| order[p]);
        chosen.push(best.unwrap_or(0));
        valid.append(best.is_some());
    }
    UInt32Array::new(ScalarBuffer::from(chosen), valid.finish())
}

/// The first (or last) valid row of each window, by a pointer that only moves forward.
fn first_last(nulls: Option<&NullBuffer>, ranges: Ranges<'_>, last: bool) -> UInt32Array {
    let order = ranges.order;
    let mut chosen = Vec::with_capacity(ranges.len());
    let mut valid = NullBufferBuilder::new(ranges.len());
    // first: the first valid position at or after the window's start (or the window's end);
    // last: the last valid position before the window's end.
    let (mut first, mut entered, mut last_valid) = (0usize, 0usize, None::<usize>);
    for (l, h) in ranges.bounds() {
        let found = if last {
            while entered < h {
                if is_valid(nulls, order[entered]) {
                    last_valid = Some(entered);
                }
                entered += 1;
            }
            last_valid.filter(|&p| p >= l)
        } else {
            first = first.max(l);
            while first < h && !is_valid(nulls, order[first]) {
                first += 1;
            }
            (first < h).then_some(first)
        };
        chosen.push(found.map_or(0, |p| order[p]));
        valid.append(found.is_some());
    }
    UInt32Array::new(ScalarBuffer::from(chosen), valid.finish())
}

/// `min` (`MAX = false`) or `max` of a primitive column, by the total order of [`Num::key`].
fn best_word<T: ArrowPrimitiveType, const MAX: bool>(
    data_type: &DataType,
    a: &PrimitiveArray<T>,
    ranges: Ranges<'_>,
) -> ArrayRef
where
    T::Native: Num,
{
    let values = a.values();
    let rows = best_rows(validity(a), ranges, |x, y| {
        let (kx, ky) = (values[x as usize].key(), values[y as usize].key());
        if MAX {
            kx > ky
        } else {
            kx < ky
        }
    });
    let best: Vec<T::Native> = rows
        .values()
        .iter()
        .map(|&r| values[r as usize].canon())
        .collect();
    Arc::new(
        PrimitiveArray::<T>::new(ScalarBuffer::from(best), rows.nulls().cloned())
            .with_data_type(data_type.clone()),
    )
}

/// `take` with errors mapped to [`Error::Arrow`].
fn take(array: &dyn Array, indices: &UInt32Array) -> Result<ArrayRef> {
    arrow_select::take::take(array, indices, None)
        .map_err(Error::arrow("gathering aggregate values"))
}

/// `min` or `max` of a boolean or bytes column: the chosen rows, taken.
fn best_other(slot: &Slot, array: &dyn Array, ranges: Ranges<'_>, max: bool) -> Result<ArrayRef> {
    fn by<'a, F: Fn(u32) -> V + 'a, V: PartialOrd>(
        value: F,
        max: bool,
    ) -> impl Fn(u32, u32) -> bool + 'a {
        move |x, y| {
            let (vx, vy) = (value(x), value(y));
            if max {
                vx > vy
            } else {
                vx < vy
            }
        }
    }
    let nulls = validity(array);
    let rows = match &slot.data_type {
        DataType::Boolean => {
            let a = array.as_boolean();
            best_rows(nulls, ranges, by(|i| a.value(i as usize), max))
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            best_rows(nulls, ranges, by(|i| a.value(i as usize).as_bytes(), max))
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            best_rows(nulls, ranges, by(|i| a.value(i as usize).as_bytes(), max))
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            best_rows(nulls, ranges, by(|i| a.value(i as usize), max))
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            best_rows(nulls, ranges, by(|i| a.value(i as usize), max))
        }
        dt => {
            return Err(Error::schema(
                slot.column.clone(),
                format!("type {dt} in min/max of bytes"),
            ))
        }
    };
    take(array, &rows)
}

/// The positions (in `order`) of the valid rows, and for each window the span of that list it
/// covers.
fn valid_spans(nulls: Option<&NullBuffer>, ranges: Ranges<'_>) -> (Vec<u32>, Vec<(usize, usize)>) {
    let positions: Vec<u32> = (0..ranges.order.len() as u32)
        .filter(|&p| is_valid(nulls, ranges.order[p as usize]))
        .collect();
    let (mut a, mut b) = (0usize, 0usize);
    let spans = ranges
        .bounds()
        .map(|(l, h)| {
            while a < positions.len() && (positions[a] as usize) < l {
                a += 1;
            }
            b = b.max(a);
            while b < positions.len() && (positions[b] as usize) < h {
                b += 1;
            }
            (a, b)
        })
        .collect();
    (positions, spans)
}

/// `collect`: the rows of each window not in `nulls` within the bound, taken, as lists.
fn collect(
    slot: &Slot,
    array: &dyn Array,
    nulls: Option<&NullBuffer>,
    ranges: Ranges<'_>,
    max_size: Option<usize>,
    overflow: Overflow,
) -> Result<ArrayRef> {
    let (positions, spans) = valid_spans(nulls, ranges);
    let mut indices: Vec<u32> = Vec::new();
    let mut offsets = Vec::with_capacity(spans.len() + 1);
    offsets.push(0i32);
    for (a, b) in spans {
        let (a, b) = match max_size {
            Some(n) if b - a > n => match overflow {
                Overflow::DropOldest => (b - n, b),
                Overflow::DropNewest => (a, a + n),
                Overflow::Fail => return Err(overflow_error(slot, n)),
            },
            _ => (a, b),
        };
        indices.extend(positions[a..b].iter().map(|&p| ranges.order[p as usize]));
        offsets.push(list_offset(indices.len())?);
    }
    let child = take(array, &UInt32Array::from(indices))?;
    list_array(&slot.data_type, offsets, child)
}

/// `count`: the window sizes.
fn count(ranges: Ranges<'_>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(
        ranges.bounds().map(|(l, h)| (h - l) as i64),
    ))
}

/// The output array of `slot` over monotone ranges (validated by the caller).
pub(crate) fn range_slot(
    slot: &Slot,
    array: Option<&ArrayRef>,
    ranges: Ranges<'_>,
) -> Result<ArrayRef> {
    let array = match (slot.op, array) {
        (Op::Count, _) => return Ok(count(ranges)),
        (_, Some(array)) => array.as_ref(),
        (_, None) => {
            return Err(Error::schema(
                slot.column.clone(),
                "no such column in the batch",
            ))
        }
    };
    let mismatch = || {
        Error::schema(
            slot.column.clone(),
            format!(
                "batch column has type {}, expected {}",
                array.data_type(),
                slot.data_type
            ),
        )
    };
    let dt = &slot.data_type;
    let nulls = validity(array);
    match slot.op {
        Op::Count => Ok(count(ranges)),
        Op::Sum(kind) | Op::Mean(kind) => {
            let mean = matches!(slot.op, Op::Mean(_));
            dispatch_numeric!(
                dt,
                |T| {
                    let a = array.as_primitive_opt::<T>().ok_or_else(mismatch)?;
                    match (kind.is_integer(), mean) {
                        (true, false) => sum_int(slot, a, ranges),
                        (true, true) => Ok(mean_int(a, ranges)),
                        (false, false) => Ok(sum_float::<T, false>(a, ranges)),
                        (false, true) => Ok(sum_float::<T, true>(a, ranges)),
                    }
                },
                _ => Err(mismatch())
            )
        }
        Op::Min(kind) | Op::Max(kind) if kind.is_word() => {
            let max = matches!(slot.op, Op::Max(_));
            dispatch_word!(
                dt,
                |T| {
                    let a = array.as_primitive_opt::<T>().ok_or_else(mismatch)?;
                    Ok(if max {
                        best_word::<T, true>(dt, a, ranges)
                    } else {
                        best_word::<T, false>(dt, a, ranges)
                    })
                },
                _ => Err(mismatch())
            )
        }
        Op::Min(_) => best_other(slot, array, ranges, false),
        Op::Max(_) => best_other(slot, array, ranges, true),
        Op::First(_) => take(array, &first_last(nulls, ranges, false)),
        Op::Last(_) => take(array, &first_last(nulls, ranges, true)),
        Op::CountDistinct(kind) => Ok(super::distinct::range_counts(array, dt, kind, ranges)),
        Op::Collect {
            max_size,
            overflow,
            nulls: keep_nulls,
            ..
        } => {
            let nulls = super::runs::skipped_nulls(array, keep_nulls);
            collect(slot, array, nulls, ranges, max_size, overflow)
        }
    }
}

/// The first window in which a `collect` under [`Overflow::Fail`] holds more than its bound.
pub(crate) fn first_range_overflow(
    slot: &Slot,
    array: Option<&ArrayRef>,
    ranges: Ranges<'_>,
) -> Option<usize> {
    let Op::Collect {
        max_size: Some(n),
        overflow: Overflow::Fail,
        nulls: keep_nulls,
        ..
    } = slot.op
    else {
        return None;
    };
    let nulls = super::runs::skipped_nulls(array?.as_ref(), keep_nulls);
    let (_, spans) = valid_spans(nulls, ranges);
    spans.iter().position(|&(a, b)| b - a > n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-stacks fold equals a direct fold of every range, for ranges of every shape.
    #[test]
    fn fold_monotone_equals_direct_folds() {
        let order: Vec<u32> = (0..40).collect();
        let mut lo = Vec::new();
        let mut hi = Vec::new();
        let (mut l, mut h) = (0u32, 0u32);
        for step in 0..60u32 {
            h = (h + step % 3).min(40);
            l = (l + (step * 7) % 4).min(h);
            lo.push(l);
            hi.push(h);
        }
        let ranges = Ranges {
            order: &order,
            lo: &lo,
            hi: &hi,
        };
        // A non-commutative fold (string concatenation) catches grouping and order mistakes.
        let mut got = Vec::new();
        fold_monotone(
            ranges,
            (0u64, 0u32),
            |i| (u64::from(i) + 1, 1),
            |(a, n), (b, m)| (a.wrapping_mul(41u64.wrapping_pow(m)).wrapping_add(b), n + m),
            |(v, _)| got.push(v),
        );
        let want: Vec<u64> = lo
            .iter()
            .zip(&hi)
            .map(|(&l, &h)| {
                (l..h).fold(0u64, |acc, i| {
                    acc.wrapping_mul(41).wrapping_add(u64::from(i) + 1)
                })
            })
            .collect();
        assert_eq!(got, want);
    }

    /// Every function over monotone ranges equals the runs path over each window's rows
    /// copied out (windows laid end to end), with nulls, ties and empty windows.
    #[test]
    fn ranges_equal_runs_for_every_function() {
        use arrow_array::{Float64Array, RecordBatch, StringArray};
        use arrow_schema::{Field, Schema};

        use crate::agg::{AggSpec, Aggregator, Overflow};

        let n = 64usize;
        let ints: Int64Array = (0..n)
            .map(|i| (i % 7 != 3).then_some((i as i64 * 37) % 11 - 5))
            .collect();
        // Small integers in f64: sums are exact in any grouping.
        let floats: Float64Array = (0..n)
            .map(|i| (i % 5 != 1).then_some(((i * 13) % 9) as f64 - 4.0))
            .collect();
        let strings: StringArray = (0..n)
            .map(|i| (i % 6 != 0).then(|| format!("s{}", (i * 7) % 10)))
            .collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("f", DataType::Float64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(ints), Arc::new(floats), Arc::new(strings)],
        )
        .unwrap();
        let mut specs = vec![AggSpec::count()];
        for c in ["i", "f"] {
            specs.extend([AggSpec::sum(c), AggSpec::mean(c)]);
        }
        for c in ["i", "f", "s"] {
            specs.extend([
                AggSpec::min(c),
                AggSpec::max(c),
                AggSpec::first(c),
                AggSpec::last(c),
                AggSpec::collect(c, None, Overflow::DropOldest),
                AggSpec::collect(c, Some(2), Overflow::DropOldest),
                AggSpec::collect(c, Some(2), Overflow::DropNewest),
                AggSpec::count_distinct(c),
                AggSpec::collect_all(c, None, Overflow::DropOldest),
                AggSpec::collect_all(c, Some(2), Overflow::DropNewest),
            ]);
        }
        let specs: Vec<AggSpec> = specs
            .into_iter()
            .enumerate()
            .map(|(i, s)| s.with_alias(format!("a{i}")))
            .collect();
        let aggs = Aggregator::try_new(specs, &schema).unwrap();
        // A permuted order (as if grouped by key) and monotone ranges of every shape.
        let order: Vec<u32> = (0..n as u32).map(|i| (i * 29) % n as u32).collect();
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        let (mut l, mut h) = (0u32, 0u32);
        for step in 0..90u32 {
            h = (h + (step * 5) % 4).min(n as u32);
            l = (l + (step * 3) % 3).min(h);
            lo.push(l);
            hi.push(h);
        }
        let got = aggs.aggregate_ranges(&batch, &order, &lo, &hi).unwrap();
        let mut copied = Vec::new();
        let mut offsets = vec![0usize];
        for (&l, &h) in lo.iter().zip(&hi) {
            copied.extend_from_slice(&order[l as usize..h as usize]);
            offsets.push(copied.len());
        }
        let times = vec![0i64; n];
        let want = aggs
            .aggregate_runs(&batch, &times, &copied, &offsets)
            .unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.as_ref(), w.as_ref(), "aggregate a{i}");
        }
    }
}
