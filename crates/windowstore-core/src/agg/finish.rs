//! The per-record path's last step: one output array per spec from the specs' segments of many
//! states.

use std::sync::Arc;

use arrow_array::{ArrayRef, Decimal128Array, Float64Array, Int64Array, ListArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};

use super::build::{build, build_words};
use super::codec::Reader;
use super::fold::Fixed;
use super::slot::{Op, Slot};
use super::state_layout::{read_best, read_stamped, Stamped, OVERFLOWED, SEEN};
use super::value::Value;
use super::value_kind::Kind;
use crate::{Error, Result};

/// The error of an integer sum that does not fit the Int64 output.
pub(crate) fn sum_overflow(slot: &Slot, sum: Option<i128>) -> Error {
    let exact = sum.map_or_else(|| "beyond ±2^127".to_string(), |s| s.to_string());
    Error::schema(
        slot.column.clone(),
        format!(
            "sum overflows Int64: the exact sum ({exact}) is out of Int64's range; \
             cast the column to Float64 to sum it approximately"
        ),
    )
}

/// [`super::Aggregator::finish`] of states whose segments all have a fixed width, each state
/// checked to be of the aggregator's length and version: each slot's segments are cut at
/// their fixed offsets instead of walked state by state, and `min`/`max` of words build their
/// array from the words directly. The arrays are those of the walk.
pub(crate) fn finish_fixed(
    slots: &[Slot],
    fixed: &[Fixed],
    states: &[&[u8]],
) -> Result<Vec<ArrayRef>> {
    let mut out = Vec::with_capacity(slots.len());
    let mut at = 1;
    for (slot, f) in slots.iter().zip(fixed) {
        let segments: Vec<&[u8]> = states.iter().map(|s| &s[at..at + f.width()]).collect();
        at += f.width();
        out.push(match slot.op {
            Op::Min(kind) | Op::Max(kind) if f.best_of_words() => {
                best_words(slot, kind, &segments)?
            }
            _ => finish_slot(slot, &segments)?,
        });
    }
    Ok(out)
}

/// The array of `min`/`max` segments of word kind `kind`: their words straight into the
/// array, with no [`Value`] per row in between; what [`finish_slot`] gives.
fn best_words(slot: &Slot, kind: Kind, segments: &[&[u8]]) -> Result<ArrayRef> {
    let words = segments
        .iter()
        .map(|s| match read_best(kind, &mut Reader::new(s))? {
            Value::Word(w) => Ok(Some(w)),
            _ => Ok(None),
        })
        .collect::<Result<Vec<Option<u64>>>>()?;
    build_words(&slot.data_type, words.into_iter(), true)
}

/// The output array of `slot`, one row per segment (each a segment of `slot.op`).
pub(crate) fn finish_slot(slot: &Slot, segments: &[&[u8]]) -> Result<ArrayRef> {
    let readers = || segments.iter().map(|s| Reader::new(s));
    Ok(match slot.op {
        Op::Count => {
            let mut counts = Vec::with_capacity(segments.len());
            for mut r in readers() {
                counts.push(i64::try_from(r.u64()?).unwrap_or(i64::MAX));
            }
            Arc::new(Int64Array::from(counts))
        }
        Op::Sum(Kind::Dec128) => {
            let mut sums = Vec::with_capacity(segments.len());
            for mut r in readers() {
                let (flags, sum) = (r.u8()?, r.i128()?);
                let sum = super::decimal::checked_sum(slot, sum)?;
                sums.push((flags & SEEN != 0).then_some(sum));
            }
            decimals(slot, sums)?
        }
        Op::Mean(Kind::Dec128) => {
            let mut means = Vec::with_capacity(segments.len());
            for mut r in readers() {
                let (sum, n) = (r.i128()?, r.u64()?);
                means.push(super::decimal::mean(slot, sum, n)?);
            }
            decimals(slot, means)?
        }
        Op::Sum(kind) if kind.is_integer() => {
            let mut sums = Vec::with_capacity(segments.len());
            for mut r in readers() {
                let (flags, sum) = (r.u8()?, r.i128()?);
                if flags & OVERFLOWED != 0 {
                    return Err(sum_overflow(slot, None));
                }
                let value = i64::try_from(sum).map_err(|_| sum_overflow(slot, Some(sum)))?;
                sums.push((flags & SEEN != 0).then_some(value));
            }
            Arc::new(Int64Array::from(sums))
        }
        Op::Sum(_) => {
            let mut sums = Vec::with_capacity(segments.len());
            for mut r in readers() {
                let (flags, sum) = (r.u8()?, r.f64()?);
                sums.push((flags & SEEN != 0).then_some(sum));
            }
            Arc::new(Float64Array::from(sums))
        }
        Op::Mean(kind) => {
            let mut means = Vec::with_capacity(segments.len());
            for mut r in readers() {
                let sum = if kind.is_integer() {
                    r.i128()? as f64
                } else {
                    r.f64()?
                };
                let n = r.u64()?;
                means.push((n > 0).then(|| sum / n as f64));
            }
            Arc::new(Float64Array::from(means))
        }
        Op::Min(kind) | Op::Max(kind) => {
            let mut values = Vec::with_capacity(segments.len());
            for mut r in readers() {
                values.push(read_best(kind, &mut r)?);
            }
            build(&slot.data_type, &values, true)?
        }
        Op::First(kind) | Op::Last(kind) => {
            let mut values = Vec::with_capacity(segments.len());
            for mut r in readers() {
                values.push(match read_stamped(kind, &mut r)? {
                    Some(s) => s.value(kind)?,
                    None => Value::Null,
                });
            }
            build(&slot.data_type, &values, false)?
        }
        Op::CountDistinct(_) => {
            let mut counts = Vec::with_capacity(segments.len());
            for mut r in readers() {
                counts.push(super::distinct::len(&mut r)?);
            }
            Arc::new(Int64Array::from(counts))
        }
        Op::Collect { kind, nulls, .. } => finish_lists(slot, kind, nulls, segments)?,
    })
}

/// The Decimal128 array of `values`, of `slot`'s output type.
pub(crate) fn decimals(slot: &Slot, values: Vec<Option<i128>>) -> Result<ArrayRef> {
    let array = Decimal128Array::from(values).with_data_type(slot.field.data_type().clone());
    Ok(Arc::new(array))
}

/// The List array of `collect` states (`collect_all` with `nulls`).
fn finish_lists(slot: &Slot, kind: Kind, nulls: bool, segments: &[&[u8]]) -> Result<ArrayRef> {
    let mut values = Vec::new();
    let mut offsets = Vec::with_capacity(segments.len() + 1);
    offsets.push(0i32);
    for segment in segments {
        let mut r = Reader::new(segment);
        let n = r.varint()?;
        for _ in 0..n {
            let element = Stamped::read_element(kind, nulls, &mut r)?;
            values.push(element.element_value(kind, nulls)?);
        }
        offsets.push(list_offset(values.len())?);
    }
    let child = build(&slot.data_type, &values, false)?;
    list_array(&slot.data_type, offsets, child)
}

/// A list offset, or [`Error::BatchTooLarge`] beyond `i32`.
pub(crate) fn list_offset(len: usize) -> Result<i32> {
    i32::try_from(len).map_err(|_| {
        Error::BatchTooLarge("collect output of more than 2^31 - 1 values in one batch".into())
    })
}

/// A List array of `child` (of `data_type`) cut at `offsets` (monotone, starting at 0).
pub(crate) fn list_array(
    data_type: &DataType,
    offsets: Vec<i32>,
    child: ArrayRef,
) -> Result<ArrayRef> {
    let field = Arc::new(Field::new_list_field(data_type.clone(), true));
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    let list =
        ListArray::try_new(field, offsets, child, None).map_err(Error::arrow("collect output"))?;
    Ok(Arc::new(list))
}
