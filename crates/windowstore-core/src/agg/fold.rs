//! Folding one record into a state in place, for aggregators whose segments all have a fixed
//! width (count, sum, mean, and min/max/first/last of fixed-width values): the state keeps its
//! size, so each segment is overwritten where it lies, with no walk of the state, no splice
//! list and no second buffer. The bytes are those of `merge(encode_row(record), state)` (the
//! same `encode` and `merge` per segment, the record first as the session step merges it), or,
//! with [`Aggregator::fold_state`], of `merge(state, record)` for an encoded record (the state
//! first, as the sliding step merges a record into each window that contains it).

use arrow_array::RecordBatch;

use super::aggregator::{kind, Aggregator};
use super::codec::Reader;
use super::kind::Kind;
use super::slot::Op;
use super::state::{encode, merge, VERSION};
use super::value::Value;
use crate::Result;

/// The width of a segment of `op`, if every state of it has the same.
pub(crate) fn fixed_width(op: &Op) -> Option<usize> {
    match *op {
        Op::Count => Some(8),
        Op::Sum(k) => Some(if k.is_integer() { 17 } else { 9 }),
        Op::Mean(k) => Some(if k.is_integer() { 24 } else { 16 }),
        Op::Min(Kind::Bytes) | Op::Max(Kind::Bytes) => None,
        Op::Min(Kind::Bool) | Op::Max(Kind::Bool) => Some(2),
        Op::Min(_) | Op::Max(_) => Some(9),
        Op::First(Kind::Bytes) | Op::Last(Kind::Bytes) => None,
        Op::First(Kind::Bool) | Op::Last(Kind::Bool) => Some(18),
        Op::First(_) | Op::Last(_) => Some(25),
        Op::CountDistinct(_) | Op::Collect { .. } => None,
    }
}

impl Aggregator {
    /// Whether every state of this aggregator has one size ([`Self::fold_row`] applies).
    pub(crate) fn folds_in_place(&self) -> bool {
        self.fixed_width
    }

    /// Folds row `row` of `batch` (time `time`, arrival `seq`) into `state` in place: `state`
    /// becomes `merge(encode_row(row), state)`. The caller has checked
    /// [`Self::folds_in_place`]; `scratch` holds two buffers reused between calls.
    ///
    /// Errors: a state that is not of this aggregator (its length or version is wrong, or a
    /// segment does not decode); `state` may then be partly folded.
    pub(crate) fn fold_row(
        &self,
        state: &mut [u8],
        (batch, row): (&RecordBatch, usize),
        (time, seq): (i64, u64),
        scratch: &mut (Vec<u8>, Vec<u8>),
    ) -> Result<()> {
        if state.first() != Some(&VERSION) {
            return Err(super::codec::corrupt("state version"));
        }
        let mut at = 1;
        for slot in &self.slots {
            let width = fixed_width(&slot.op)
                .ok_or_else(|| super::codec::corrupt("a segment of no fixed width"))?;
            let seg = state
                .get_mut(at..at + width)
                .ok_or_else(|| super::codec::corrupt("state shorter than its segments"))?;
            let value = match (slot.op, batch.columns().get(slot.index)) {
                (Op::Count, _) | (_, None) => Value::Null,
                (op, Some(column)) => {
                    Value::of_row(column.as_ref(), &slot.data_type, kind(&op), row)
                }
            };
            let (record, merged) = scratch;
            record.clear();
            encode(&slot.op, value, time, seq, record);
            merged.clear();
            merge(
                slot,
                &mut Reader::new(record),
                &mut Reader::new(&*seg),
                merged,
            )?;
            if merged.len() != width {
                return Err(super::codec::corrupt("a fixed segment changed its width"));
            }
            seg.copy_from_slice(merged);
            at += width;
        }
        if at != state.len() {
            return Err(super::codec::corrupt("state longer than its segments"));
        }
        Ok(())
    }

    /// Folds `record` (one record's state, [`Self::encode_row`]) into `state` in place:
    /// `state` becomes `merge(state, record)`, the state first (min/max ties keep the state's
    /// value, as that merge does). The caller has checked [`Self::folds_in_place`]; `merged`
    /// is a buffer reused between calls.
    ///
    /// Errors: a state or record that is not of this aggregator; `state` may then be partly
    /// folded.
    pub(crate) fn fold_state(
        &self,
        state: &mut [u8],
        record: &[u8],
        merged: &mut Vec<u8>,
    ) -> Result<()> {
        if state.first() != Some(&VERSION) || record.first() != Some(&VERSION) {
            return Err(super::codec::corrupt("state version"));
        }
        if record.len() != state.len() {
            return Err(super::codec::corrupt("a record of another width"));
        }
        let mut at = 1;
        for slot in &self.slots {
            let width = fixed_width(&slot.op)
                .ok_or_else(|| super::codec::corrupt("a segment of no fixed width"))?;
            let seg = state
                .get_mut(at..at + width)
                .ok_or_else(|| super::codec::corrupt("state shorter than its segments"))?;
            // Fixed widths: the record's segment lies where the state's does.
            let rec = &record[at..at + width];
            merged.clear();
            merge(slot, &mut Reader::new(&*seg), &mut Reader::new(rec), merged)?;
            if merged.len() != width {
                return Err(super::codec::corrupt("a fixed segment changed its width"));
            }
            seg.copy_from_slice(merged);
            at += width;
        }
        if at != state.len() {
            return Err(super::codec::corrupt("state longer than its segments"));
        }
        Ok(())
    }
}
