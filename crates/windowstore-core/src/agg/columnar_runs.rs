//! The complete-data fast path: every spec over runs of row indices, columnar.
//!
//! Dispatch happens once per spec and column type; the inner loops are monomorphic folds over
//! the column's value slice, gathered through the run's row indices, with a separate loop for
//! columns without nulls. Outputs of the input type that cannot be built from a slice (first,
//! last, collect, and min/max of booleans and bytes) are a `take` of the chosen row indices.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int64Array, PrimitiveArray, UInt32Array};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;

use super::agg_spec::Overflow;
use super::finish::{list_array, list_offset, sum_overflow};
use super::native::{better_key, dispatch_numeric, dispatch_word, Num};
use super::slot::{Op, Slot};
use super::state_layout::overflow_error;
use super::value_kind::Kind;
use super::window_values::WindowValues;
use crate::{Error, Result};

/// Folds each run (`order[offsets[w]..offsets[w + 1]]`) of the non-null values of `values`
/// with `step`, from `init`, and hands each run's accumulator to `emit`.
#[inline(always)]
fn fold_runs<T: Copy, A: Copy>(
    values: &[T],
    nulls: Option<&NullBuffer>,
    order: &[u32],
    offsets: &[usize],
    init: A,
    step: impl Fn(A, T, u32) -> A,
    mut emit: impl FnMut(A),
) {
    match nulls.filter(|n| n.null_count() > 0) {
        None => {
            for w in offsets.windows(2) {
                let mut acc = init;
                for &i in &order[w[0]..w[1]] {
                    acc = step(acc, values[i as usize], i);
                }
                emit(acc);
            }
        }
        Some(nulls) => {
            for w in offsets.windows(2) {
                let mut acc = init;
                for &i in &order[w[0]..w[1]] {
                    if nulls.is_valid(i as usize) {
                        acc = step(acc, values[i as usize], i);
                    }
                }
                emit(acc);
            }
        }
    }
}

/// The number of windows.
fn windows(offsets: &[usize]) -> usize {
    offsets.len().saturating_sub(1)
}

/// `count`: the run lengths.
fn count(offsets: &[usize]) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(
        offsets.windows(2).map(|w| (w[1] - w[0]) as i64),
    ))
}

/// `sum` of an integer column: exact in `i128`, checked into Int64.
fn sum_int<T: ArrowPrimitiveType>(
    slot: &Slot,
    a: &PrimitiveArray<T>,
    order: &[u32],
    offsets: &[usize],
) -> Result<ArrayRef>
where
    T::Native: Num,
{
    // A run has fewer than 2^61 rows and each term is below 2^64 in magnitude: no i128 overflow.
    let mut sums = WindowValues::new(windows(offsets));
    let mut overflow = None;
    fold_runs(
        a.values(),
        a.nulls(),
        order,
        offsets,
        (0i128, false),
        |(s, _), v, _| (s + v.to_i128(), true),
        |(s, seen)| {
            let v = i64::try_from(s).unwrap_or_else(|_| {
                overflow.get_or_insert(s);
                0
            });
            sums.push(v, seen);
        },
    );
    if let Some(s) = overflow {
        return Err(sum_overflow(slot, Some(s)));
    }
    Ok(Arc::new(sums.finish::<Int64Type>()))
}

/// `sum` of a float column, in `f64` from `-0.0`, in run order.
fn sum_float<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    order: &[u32],
    offsets: &[usize],
) -> ArrayRef
where
    T::Native: Num,
{
    let mut sums = WindowValues::new(windows(offsets));
    fold_runs(
        a.values(),
        a.nulls(),
        order,
        offsets,
        (-0.0f64, false),
        |(s, _), v, _| (s + v.to_f64(), true),
        |(s, seen)| sums.push(s, seen),
    );
    Arc::new(sums.finish::<Float64Type>())
}

/// `mean` of a numeric column (integer sums exact in `i128`).
fn mean<T: ArrowPrimitiveType>(
    kind: Kind,
    a: &PrimitiveArray<T>,
    order: &[u32],
    offsets: &[usize],
) -> ArrayRef
where
    T::Native: Num,
{
    let mut means = WindowValues::new(windows(offsets));
    let mut emit = |sum: f64, n: u64| means.push(if n > 0 { sum / n as f64 } else { 0.0 }, n > 0);
    if kind.is_integer() {
        fold_runs(
            a.values(),
            a.nulls(),
            order,
            offsets,
            (0i128, 0u64),
            |(s, n), v, _| (s + v.to_i128(), n + 1),
            |(s, n)| emit(s as f64, n),
        );
    } else {
        fold_runs(
            a.values(),
            a.nulls(),
            order,
            offsets,
            (-0.0f64, 0u64),
            |(s, n), v, _| (s + v.to_f64(), n + 1),
            |(s, n)| emit(s, n),
        );
    }
    Arc::new(means.finish::<Float64Type>())
}

/// `min` (`MAX = false`) or `max` of a primitive column, by the total order of [`Num::key`].
fn best_word<T: ArrowPrimitiveType, const MAX: bool>(
    data_type: &DataType,
    a: &PrimitiveArray<T>,
    order: &[u32],
    offsets: &[usize],
) -> ArrayRef
where
    T::Native: Num,
{
    if a.null_count() == 0 {
        // Keys alone, from each run's first (see `better_key`).
        let mut best = Vec::with_capacity(windows(offsets));
        let values = a.values();
        let key = |i: u32| values[i as usize].key();
        let mut empty = false;
        for w in offsets.windows(2) {
            let Some((&first, rest)) = order[w[0]..w[1]].split_first() else {
                empty = true;
                best.push(T::Native::default());
                continue;
            };
            let k = rest
                .iter()
                .fold(key(first), |k, &i| better_key::<_, MAX>(k, key(i)));
            best.push(T::Native::from_key(k));
        }
        let valid = empty.then(|| offsets.windows(2).map(|w| w[0] < w[1]).collect());
        return Arc::new(
            PrimitiveArray::<T>::new(ScalarBuffer::from(best), valid)
                .with_data_type(data_type.clone()),
        );
    }
    let mut best = WindowValues::new(windows(offsets));
    let zero = T::Native::default();
    fold_runs(
        a.values(),
        a.nulls(),
        order,
        offsets,
        (zero, zero.key(), false),
        |(b, bk, seen), v, _| {
            let k = v.key();
            let better = if MAX { k > bk } else { k < bk };
            if better || !seen {
                (v, k, true)
            } else {
                (b, bk, true)
            }
        },
        |(b, _, seen)| best.push(b.canon(), seen),
    );
    Arc::new(best.finish::<T>().with_data_type(data_type.clone()))
}

/// The row index chosen in each run: the first valid row such that no later valid row is
/// `better` than it (`None` for runs without valid rows).
fn arg_best(
    nulls: Option<&NullBuffer>,
    order: &[u32],
    offsets: &[usize],
    better: impl Fn(u32, u32) -> bool,
) -> UInt32Array {
    let mut chosen = WindowValues::new(windows(offsets));
    let all = nulls.filter(|n| n.null_count() > 0);
    for w in offsets.windows(2) {
        let mut best: Option<u32> = None;
        for &i in &order[w[0]..w[1]] {
            if all.is_some_and(|n| n.is_null(i as usize)) {
                continue;
            }
            best = match best {
                Some(b) if !better(i, b) => Some(b),
                _ => Some(i),
            };
        }
        chosen.push_option(best);
    }
    chosen.finish()
}

/// The first (or last) valid row index of each run.
fn first_last(
    nulls: Option<&NullBuffer>,
    order: &[u32],
    offsets: &[usize],
    last: bool,
) -> UInt32Array {
    let mut chosen = WindowValues::new(windows(offsets));
    let nulls = nulls.filter(|n| n.null_count() > 0);
    for w in offsets.windows(2) {
        let run = &order[w[0]..w[1]];
        let ok = |i: &&u32| nulls.is_none_or(|n| n.is_valid(**i as usize));
        let found = if last {
            run.iter().rev().find(ok)
        } else {
            run.iter().find(ok)
        };
        chosen.push_option(found.copied());
    }
    chosen.finish()
}

/// `take` with errors mapped to [`Error::Arrow`] (the only way it fails here: offsets
/// beyond the array type's range).
fn take(array: &dyn Array, indices: &UInt32Array) -> Result<ArrayRef> {
    arrow_select::take::take(array, indices, None)
        .map_err(Error::arrow("gathering aggregate values"))
}

/// `min` or `max` of a boolean or bytes column: the chosen rows, taken.
fn best_other(
    slot: &Slot,
    array: &dyn Array,
    order: &[u32],
    offsets: &[usize],
    max: bool,
) -> Result<ArrayRef> {
    let nulls = array.nulls();
    let indices = match &slot.data_type {
        DataType::Boolean => {
            let a = array.as_boolean();
            arg_best(nulls, order, offsets, |i, b| {
                let (x, y) = (a.value(i as usize), a.value(b as usize));
                if max {
                    x & !y
                } else {
                    !x & y
                }
            })
        }
        DataType::Utf8 => bytes_best(array.as_string::<i32>(), nulls, order, offsets, max),
        DataType::LargeUtf8 => bytes_best(array.as_string::<i64>(), nulls, order, offsets, max),
        DataType::Binary => bytes_best(array.as_binary::<i32>(), nulls, order, offsets, max),
        DataType::LargeBinary => bytes_best(array.as_binary::<i64>(), nulls, order, offsets, max),
        dt => {
            return Err(Error::schema(
                slot.column.clone(),
                format!("type {dt} in min/max of bytes"),
            ))
        }
    };
    take(array, &indices)
}

/// The chosen rows of `min`/`max` of a bytes array (byte-wise order, as Arrow sorts strings).
fn bytes_best<T: arrow_array::types::ByteArrayType>(
    a: &arrow_array::GenericByteArray<T>,
    nulls: Option<&NullBuffer>,
    order: &[u32],
    offsets: &[usize],
    max: bool,
) -> UInt32Array
where
    T::Native: AsRef<[u8]>,
{
    arg_best(nulls, order, offsets, |i, b| {
        let (x, y): (&[u8], &[u8]) = (a.value(i as usize).as_ref(), a.value(b as usize).as_ref());
        if max {
            x > y
        } else {
            x < y
        }
    })
}

/// `collect`: the valid rows (every row with `keep_nulls`) of each run within the bound,
/// taken, as lists.
fn collect(
    slot: &Slot,
    array: &dyn Array,
    order: &[u32],
    offsets: &[usize],
    max_size: Option<usize>,
    overflow: Overflow,
    keep_nulls: bool,
) -> Result<ArrayRef> {
    let nulls = skipped_nulls(array, keep_nulls);
    let valid = |i: u32| nulls.is_none_or(|n| n.is_valid(i as usize));
    let mut indices: Vec<u32> = Vec::new();
    let mut list_offsets = Vec::with_capacity(offsets.len());
    list_offsets.push(0i32);
    for w in offsets.windows(2) {
        let run = &order[w[0]..w[1]];
        match max_size {
            None => indices.extend(run.iter().copied().filter(|&i| valid(i))),
            Some(n) => {
                let present = match nulls {
                    None => run.len(),
                    Some(_) => run.iter().filter(|&&i| valid(i)).count(),
                };
                let (skip, keep) = if present > n {
                    match overflow {
                        Overflow::DropOldest => (present - n, n),
                        Overflow::DropNewest => (0, n),
                        Overflow::Fail => return Err(overflow_error(slot, n)),
                    }
                } else {
                    (0, present)
                };
                indices.extend(
                    run.iter()
                        .copied()
                        .filter(|&i| valid(i))
                        .skip(skip)
                        .take(keep),
                );
            }
        }
        list_offsets.push(list_offset(indices.len())?);
    }
    let child = take(array, &UInt32Array::from(indices))?;
    list_array(&slot.data_type, list_offsets, child)
}

/// The nulls a `collect` skips: the column's, unless it keeps them (`collect_all`).
pub(crate) fn skipped_nulls(array: &dyn Array, keep_nulls: bool) -> Option<&NullBuffer> {
    array.nulls().filter(|n| !keep_nulls && n.null_count() > 0)
}

/// The batch column `slot` reads (every function but `count` reads one), or the error that
/// the batch lacks it.
pub(crate) fn slot_column<'a>(slot: &Slot, array: Option<&'a ArrayRef>) -> Result<&'a dyn Array> {
    match array {
        Some(array) => Ok(array.as_ref()),
        None => Err(Error::schema(
            slot.column.clone(),
            "no such column in the batch",
        )),
    }
}

/// The error for a batch column `array` of another type than `slot` was bound to.
pub(crate) fn type_mismatch(slot: &Slot, array: &dyn Array) -> Error {
    Error::schema(
        slot.column.clone(),
        format!(
            "batch column has type {}, expected {}",
            array.data_type(),
            slot.data_type
        ),
    )
}

/// The output array of `slot` over the runs (validated by the caller: monotone `offsets`
/// within `order`, `order` within the column, column of the slot's type).
pub(crate) fn run_slot(
    slot: &Slot,
    array: Option<&ArrayRef>,
    order: &[u32],
    offsets: &[usize],
) -> Result<ArrayRef> {
    if matches!(slot.op, Op::Count) {
        return Ok(count(offsets));
    }
    let array = slot_column(slot, array)?;
    let mismatch = || type_mismatch(slot, array);
    let dt = &slot.data_type;
    match slot.op {
        Op::Count => Ok(count(offsets)),
        Op::Sum(kind) => dispatch_numeric!(
            dt,
            |T| {
                let a = array.as_primitive_opt::<T>().ok_or_else(mismatch)?;
                if kind.is_integer() {
                    sum_int(slot, a, order, offsets)
                } else {
                    Ok(sum_float(a, order, offsets))
                }
            },
            _ => Err(mismatch())
        ),
        Op::Mean(kind) => dispatch_numeric!(
            dt,
            |T| Ok(mean(kind, array.as_primitive_opt::<T>().ok_or_else(mismatch)?, order, offsets)),
            _ => Err(mismatch())
        ),
        Op::Min(kind) | Op::Max(kind) if kind.is_word() => {
            let max = matches!(slot.op, Op::Max(_));
            dispatch_word!(
                dt,
                |T| {
                    let a = array.as_primitive_opt::<T>().ok_or_else(mismatch)?;
                    Ok(if max {
                        best_word::<T, true>(dt, a, order, offsets)
                    } else {
                        best_word::<T, false>(dt, a, order, offsets)
                    })
                },
                _ => Err(mismatch())
            )
        }
        Op::Min(_) => best_other(slot, array, order, offsets, false),
        Op::Max(_) => best_other(slot, array, order, offsets, true),
        Op::First(_) => take(array, &first_last(array.nulls(), order, offsets, false)),
        Op::Last(_) => take(array, &first_last(array.nulls(), order, offsets, true)),
        Op::CountDistinct(kind) => Ok(super::distinct::run_counts(array, dt, kind, order, offsets)),
        Op::Collect {
            max_size,
            overflow,
            nulls,
            ..
        } => collect(slot, array, order, offsets, max_size, overflow, nulls),
    }
}

/// The first window in which a `collect` under [`Overflow::Fail`] holds more than its bound.
pub(crate) fn first_overflow(
    slot: &Slot,
    array: Option<&ArrayRef>,
    order: &[u32],
    offsets: &[usize],
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
    let nulls = skipped_nulls(array?.as_ref(), keep_nulls);
    offsets.windows(2).position(|w| {
        let run = &order[w[0]..w[1]];
        let present = match nulls {
            None => run.len(),
            Some(nb) => run.iter().filter(|&&i| nb.is_valid(i as usize)).count(),
        };
        present > n
    })
}
