//! The complete-data aggregate engine: every spec over monotone ranges of rows, columnar.
//!
//! A call's windows are ranges `[lo, hi)` of its rows in (key, time, arrival) order in which
//! both ends only move forward: sessions' windows are disjoint runs laid end to end, sliding
//! windows of one key overlap. Each spec is computed in O(records + windows): integer sums and
//! counts as running sums (add what enters, subtract what leaves: exact in `i128`); float sums
//! with the two-stacks queue ([`fold_monotone`]), which never subtracts, so they never cancel;
//! `min`/`max` of numbers with that queue too, of booleans and bytes with a monotonic deque;
//! `first`/`last` with a pointer each. `collect` copies each
//! window's values (its output is that large anyway). A window that overlaps no other (every
//! session) is folded directly, left to right: its float sums add in the order the records'
//! states merge.
//!
//! Dispatch happens once per spec and column type; outputs of the input type that cannot be
//! built from a slice (first, last, collect, and min/max of booleans and bytes) are a `take`
//! of the chosen row indices.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Decimal128Type, Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Decimal128Array, Int64Array, PrimitiveArray, UInt32Array};
use arrow_buffer::{i256, NullBuffer, ScalarBuffer};
use arrow_schema::DataType;

use super::agg_spec::Overflow;
use super::decimal;
use super::finish::{decimals, list_array, list_offset, sum_overflow};
use super::native::{better_key, dispatch_numeric, dispatch_word, Num};
use super::row_ranges::Ranges;
use super::slot::{Op, Slot};
use super::state_layout::overflow_error;
use super::value_kind::Kind;
use super::window_values::WindowValues;
use crate::{Error, Result};

mod ranges;

use ranges::{fold_monotone, running, with_rows, Every, Rows};

/// Every range's sum (exact, in `i128`) and count of the valid values of an integer column,
/// handed to `emit` range by range, with [`running`].
#[inline(always)]
fn running_int_sums<T: Num>(
    values: &[T],
    nulls: Option<&NullBuffer>,
    ranges: Ranges<'_>,
    emit: impl FnMut((i128, u64)),
) {
    // Fewer than 2^61 terms below 2^64 each: the running i128 sum cannot overflow.
    with_rows!(nulls, |rows| {
        let term = |i: u32| match rows.valid(i) {
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
            emit,
        )
    });
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
    // Prefix sums pay where windows overlap; disjoint windows are summed once each.
    if nulls.is_none() && !ranges.disjoint() {
        if let Some(sums) = sum_int_within_i64(values, ranges) {
            return Ok(Arc::new(Int64Array::new(
                ScalarBuffer::from(sums),
                ranges.nonempty(),
            )));
        }
    }
    let mut sums = WindowValues::new(ranges.len());
    let mut overflow = None;
    running_int_sums(values, nulls, ranges, |(s, n)| {
        let sum = i64::try_from(s).unwrap_or_else(|_| {
            overflow.get_or_insert(s);
            0
        });
        sums.push(sum, n > 0);
    });
    if let Some(s) = overflow {
        return Err(sum_overflow(slot, Some(s)));
    }
    Ok(Arc::new(sums.finish::<Int64Type>()))
}

/// The window sums of an integer column without nulls, when no window's sum can leave `i64`
/// (the largest magnitude times the longest window fits): then differences of prefix sums in
/// wrapping `i64` arithmetic are every window's exact sum, with no branch per window. `None`
/// when a sum might not fit (the caller then sums in `i128` and checks each).
fn sum_int_within_i64<T: Num>(values: &[T], ranges: Ranges<'_>) -> Option<Vec<i64>> {
    let longest = ranges.bounds().map(|(l, h)| h - l).max().unwrap_or(0);
    let largest = values
        .iter()
        .map(|v| v.to_i128().unsigned_abs())
        .max()
        .unwrap_or(0);
    if largest.checked_mul(longest as u128)? > i64::MAX as u128 {
        return None;
    }
    let mut prefix = Vec::with_capacity(ranges.order.len() + 1);
    let mut acc = 0i64;
    prefix.push(acc);
    for &i in ranges.order {
        // In range: |v| <= largest <= i64::MAX.
        acc = acc.wrapping_add(values[i as usize].to_i128() as i64);
        prefix.push(acc);
    }
    Some(
        ranges
            .bounds()
            .map(|(l, h)| prefix[h].wrapping_sub(prefix[l]))
            .collect(),
    )
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
    let mut out = WindowValues::new(ranges.len());
    let emit = |(s, n): (f64, u64)| {
        let value = if !MEAN {
            s
        } else if n > 0 {
            s / n as f64
        } else {
            0.0
        };
        out.push(value, n > 0);
    };
    with_rows!(nulls, |rows| fold_monotone(
        ranges,
        (-0.0f64, 0u64),
        |i| match rows.valid(i) {
            true => (values[i as usize].to_f64(), 1),
            false => (-0.0, 0),
        },
        |(x, a), (y, b)| (x + y, a + b),
        emit,
    ));
    Arc::new(out.finish::<Float64Type>())
}

/// `mean` of an integer column (sums exact in `i128`).
fn mean_int<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>, ranges: Ranges<'_>) -> ArrayRef
where
    T::Native: Num,
{
    let (values, nulls) = (a.values(), validity(a));
    let mut out = WindowValues::new(ranges.len());
    running_int_sums(values, nulls, ranges, |(s, n)| {
        out.push(if n > 0 { s as f64 / n as f64 } else { 0.0 }, n > 0);
    });
    Arc::new(out.finish::<Float64Type>())
}

/// Each window's `sum` (`mean: false`) or `mean` of a Decimal128 column, by running sums exact
/// in `i256`, each checked against the sum's precision as a merge checks it; the first window
/// that overflows, with its error, stops the values there.
fn decimal_windows(
    slot: &Slot,
    a: &Decimal128Array,
    ranges: Ranges<'_>,
    mean: bool,
) -> (Vec<Option<i128>>, Option<(usize, Error)>) {
    let (values, nulls) = (a.values(), validity(a));
    let mut out = Vec::with_capacity(ranges.len());
    let mut failed = None;
    let window = |(s, n): (i256, u64)| -> Result<Option<i128>> {
        if n == 0 {
            return Ok(None);
        }
        let sum = match s.to_i128() {
            Some(sum) => decimal::checked_sum(slot, sum)?,
            None => return Err(decimal::sum_overflow(slot, s)),
        };
        if mean {
            decimal::mean(slot, sum, n)
        } else {
            Ok(Some(sum))
        }
    };
    // Fewer than 2^63 terms below 2^127 each: the running i256 sum cannot wrap.
    with_rows!(nulls, |rows| {
        let term = |i: u32| match rows.valid(i) {
            true => (i256::from_i128(values[i as usize]), 1u64),
            false => (i256::ZERO, 0),
        };
        running(
            ranges,
            (i256::ZERO, 0u64),
            |(s, n), i| {
                let (v, c) = term(i);
                (s.wrapping_add(v), n + c)
            },
            |(s, n), i| {
                let (v, c) = term(i);
                (s.wrapping_sub(v), n - c)
            },
            |acc| {
                if failed.is_some() {
                    return;
                }
                match window(acc) {
                    Ok(v) => out.push(v),
                    Err(e) => failed = Some((out.len(), e)),
                }
            },
        )
    });
    (out, failed)
}

/// `sum` or `mean` of a Decimal128 column ([`decimal_windows`]), or the first overflow.
fn sum_decimal(slot: &Slot, array: &dyn Array, ranges: Ranges<'_>, mean: bool) -> Result<ArrayRef> {
    let a = array
        .as_primitive_opt::<Decimal128Type>()
        .ok_or_else(|| type_mismatch(slot, array))?;
    match decimal_windows(slot, a, ranges, mean) {
        (_, Some((_, e))) => Err(e),
        (values, None) => decimals(slot, values),
    }
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
    let mut chosen = WindowValues::new(ranges.len());
    let mut deque: VecDeque<usize> = VecDeque::new();
    let mut entered = 0usize;
    for (w, (l, h)) in ranges.bounds().enumerate() {
        if ranges.lone(w) {
            // One pass keeps the best so far; the deque is for windows that share rows.
            let valid = order[l..h].iter().copied().filter(|&r| is_valid(nulls, r));
            chosen.push_option(valid.reduce(|b, r| if better(r, b) { r } else { b }));
            entered = h;
            deque.clear();
            continue;
        }
        if l >= entered {
            entered = l;
            deque.clear();
        }
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
        chosen.push_option(deque.front().map(|&p| order[p]));
    }
    chosen.finish()
}

/// The first (or last) valid row of each window, by a pointer that only moves forward.
fn first_last(nulls: Option<&NullBuffer>, ranges: Ranges<'_>, last: bool) -> UInt32Array {
    let order = ranges.order;
    let mut chosen = WindowValues::new(ranges.len());
    // first: the first valid position at or after the window's start (or the window's end);
    // last: the last valid position before the window's end.
    let (mut first, mut entered, mut last_valid) = (0usize, 0usize, None::<usize>);
    for (l, h) in ranges.bounds() {
        let found = if last {
            // Positions before `entered` were searched by an earlier window.
            let from = entered.max(l);
            if let Some(k) = order[from..h].iter().rposition(|&r| is_valid(nulls, r)) {
                last_valid = Some(from + k);
            }
            entered = entered.max(h);
            last_valid.filter(|&p| p >= l)
        } else {
            first = first.max(l);
            let skipped = order[first..h].iter().position(|&r| is_valid(nulls, r));
            first += skipped.unwrap_or(h - first);
            (first < h).then_some(first)
        };
        chosen.push_option(found.map(|p| order[p]));
    }
    chosen.finish()
}

/// `min` (`MAX = false`) or `max` of a primitive column, by the total order of [`Num::key`]:
/// the windows fold keys with the two-stacks queue, and [`Num::from_key`] gives each result
/// back canonical (values of equal keys are equal once canonical, so no row need be kept).
fn best_word<T: ArrowPrimitiveType, const MAX: bool>(
    data_type: &DataType,
    a: &PrimitiveArray<T>,
    ranges: Ranges<'_>,
) -> ArrayRef
where
    T::Native: Num,
{
    let better = better_key::<<T::Native as Num>::Key, MAX>;
    let (values, nulls) = (a.values(), validity(a));
    let key = |i: u32| values[i as usize].key();
    // The worst key of the type is an identity, and each step is a conditional move.
    let worst = match MAX {
        true => <T::Native as Num>::KEY_MIN,
        false => <T::Native as Num>::KEY_MAX,
    };
    let Some(nulls) = nulls else {
        let mut best = Vec::with_capacity(ranges.len());
        fold_monotone(ranges, worst, key, better, |k| {
            best.push(T::Native::from_key(k))
        });
        return Arc::new(
            PrimitiveArray::<T>::new(ScalarBuffer::from(best), ranges.nonempty())
                .with_data_type(data_type.clone()),
        );
    };
    // A null row offers the worst key and counts 0: a window is null if it counts none.
    let mut best = WindowValues::new(ranges.len());
    fold_monotone(
        ranges,
        (worst, 0u32),
        |i| match nulls.is_valid(i as usize) {
            true => (key(i), 1),
            false => (worst, 0),
        },
        |(x, a), (y, b)| (better(x, y), a + b),
        |(k, n)| best.push(T::Native::from_key(k), n > 0),
    );
    Arc::new(best.finish::<T>().with_data_type(data_type.clone()))
}

/// `take` with errors mapped to [`Error::Arrow`].
fn take(array: &dyn Array, indices: &UInt32Array) -> Result<ArrayRef> {
    arrow_select::take::take(array, indices, None)
        .map_err(Error::arrow("gathering aggregate values"))
}

/// `min` or `max` of a boolean, bytes or decimal column: the chosen rows, taken.
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
        DataType::Decimal128(_, _) => {
            let a = array.as_primitive::<Decimal128Type>();
            best_rows(nulls, ranges, by(|i| a.value(i as usize), max))
        }
        dt => {
            return Err(Error::schema(
                slot.column.clone(),
                format!("type {dt} in min/max of booleans, bytes or decimals"),
            ))
        }
    };
    take(array, &rows)
}

/// The positions (in `order`) of the valid rows (`None`: every position), and for each window
/// the span of that list it covers.
fn valid_spans(
    nulls: Option<&NullBuffer>,
    ranges: Ranges<'_>,
) -> (Option<Vec<u32>>, Vec<(usize, usize)>) {
    if nulls.is_none() {
        return (None, ranges.bounds().collect());
    }
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
    (Some(positions), spans)
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
        match &positions {
            None => indices.extend_from_slice(&ranges.order[a..b]),
            Some(p) => indices.extend(p[a..b].iter().map(|&p| ranges.order[p as usize])),
        }
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

/// The nulls a `collect` skips: the column's, unless it keeps them (`collect_all`).
pub(crate) fn skipped_nulls(array: &dyn Array, keep_nulls: bool) -> Option<&NullBuffer> {
    array.nulls().filter(|n| !keep_nulls && n.null_count() > 0)
}

/// The batch column `slot` reads (every function but `count` reads one), or the error that
/// the batch lacks it.
fn slot_column<'a>(slot: &Slot, array: Option<&'a ArrayRef>) -> Result<&'a dyn Array> {
    match array {
        Some(array) => Ok(array.as_ref()),
        None => Err(Error::schema(
            slot.column.clone(),
            "no such column in the batch",
        )),
    }
}

/// The error for a batch column `array` of another type than `slot` was bound to.
fn type_mismatch(slot: &Slot, array: &dyn Array) -> Error {
    Error::schema(
        slot.column.clone(),
        format!(
            "batch column has type {}, expected {}",
            array.data_type(),
            slot.data_type
        ),
    )
}

/// The output array of `slot` over monotone ranges (validated by the caller).
pub(crate) fn range_slot(
    slot: &Slot,
    array: Option<&ArrayRef>,
    ranges: Ranges<'_>,
) -> Result<ArrayRef> {
    if matches!(slot.op, Op::Count) {
        return Ok(count(ranges));
    }
    let array = slot_column(slot, array)?;
    let mismatch = || type_mismatch(slot, array);
    let dt = &slot.data_type;
    let nulls = validity(array);
    match slot.op {
        Op::Count => Ok(count(ranges)),
        Op::Sum(Kind::Dec128) => sum_decimal(slot, array, ranges, false),
        Op::Mean(Kind::Dec128) => sum_decimal(slot, array, ranges, true),
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
            let nulls = skipped_nulls(array, keep_nulls);
            collect(slot, array, nulls, ranges, max_size, overflow)
        }
    }
}

/// The first window in which a `collect` under [`Overflow::Fail`] holds more than its bound,
/// or a decimal `sum` or `mean` overflows.
pub(crate) fn first_range_overflow(
    slot: &Slot,
    array: Option<&ArrayRef>,
    ranges: Ranges<'_>,
) -> Option<usize> {
    if let Op::Sum(Kind::Dec128) | Op::Mean(Kind::Dec128) = slot.op {
        let a = array?.as_primitive_opt::<Decimal128Type>()?;
        let mean = matches!(slot.op, Op::Mean(_));
        return decimal_windows(slot, a, ranges, mean).1.map(|(w, _)| w);
    }
    let Op::Collect {
        max_size: Some(n),
        overflow: Overflow::Fail,
        nulls: keep_nulls,
        ..
    } = slot.op
    else {
        return None;
    };
    let nulls = skipped_nulls(array?.as_ref(), keep_nulls);
    let (_, spans) = valid_spans(nulls, ranges);
    spans.iter().position(|&(a, b)| b - a > n)
}

#[cfg(test)]
mod tests;
