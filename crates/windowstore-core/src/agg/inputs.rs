//! A batch's aggregate inputs, resolved once per batch for the record-at-a-time paths.
//!
//! [`Value::of_row`] finds a value through the array's dynamic type on every call: a length
//! and a null check through the `Array` trait, a match on the data type and a downcast, per
//! record and per aggregate. The streaming processors read one value per record and slot, so
//! they would pay that dispatch for every one (`benches/processor.rs` times the processors).
//! [`Inputs`] does the dispatch once per batch and keeps, per slot, the typed buffers the reads
//! need; reading a row is then an index. It reads exactly what `Value::of_row` reads, nulls,
//! rows out of range and columns of an unexpected type included.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, NullBuffer, ScalarBuffer};
use arrow_schema::DataType;

use super::native::{dispatch_word, Num};
use super::slot::{kind, Op, Slot};
use super::value::Value;
use super::value_kind::Kind;

/// One slot's input column, resolved.
enum Input {
    /// `count`, a column the batch lacks, or one of another type: every row reads as null.
    Null,
    /// A word-kind column: its length, validity and each row's word ([`Num::to_word`]). A
    /// column of 8-byte values is its own words (the same bits), shared, not copied; a
    /// narrower one is widened once per batch. Reading a row is then an index, with no call
    /// through a pointer per record and slot.
    Word {
        len: usize,
        nulls: Option<NullBuffer>,
        words: ScalarBuffer<u64>,
    },
    /// A boolean column.
    Bool {
        values: BooleanBuffer,
        nulls: Option<NullBuffer>,
    },
    /// A bytes-kind or decimal column, read through [`Value::of_row`] (a borrowed slice or
    /// a decimal per row).
    Dynamic {
        array: ArrayRef,
        data_type: DataType,
        kind: Kind,
    },
}

/// The aggregate inputs of one batch, one per slot of the [`Aggregator`](super::Aggregator)
/// that resolved them ([`Aggregator::inputs`](super::Aggregator::inputs)).
pub struct Inputs {
    slots: Vec<Input>,
}

impl std::fmt::Debug for Inputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inputs")
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl Inputs {
    /// The word of slot `slot` at row `row`, `None` for a null (or a slot that is not of a
    /// word kind): [`Self::value`] of a word-kind slot, small enough to inline into a fold.
    #[inline]
    pub(crate) fn word(&self, slot: usize, row: usize) -> Option<u64> {
        match self.slots.get(slot) {
            Some(Input::Word { len, nulls, words }) => {
                (!is_null(row, *len, nulls)).then(|| words[row])
            }
            _ => None,
        }
    }

    /// The value of slot `slot` at row `row` (null for a slot out of range).
    #[inline]
    pub(crate) fn value(&self, slot: usize, row: usize) -> Value<'_> {
        match self.slots.get(slot) {
            None | Some(Input::Null) => Value::Null,
            Some(Input::Word { .. }) => self.word(slot, row).map_or(Value::Null, Value::Word),
            Some(Input::Bool { values, nulls }) => {
                if is_null(row, values.len(), nulls) {
                    Value::Null
                } else {
                    Value::Bool(values.value(row))
                }
            }
            Some(Input::Dynamic {
                array,
                data_type,
                kind,
            }) => Value::of_row(array.as_ref(), data_type, *kind, row),
        }
    }
}

/// Whether `row` of a column of `len` rows with validity `nulls` reads as null (a row past the
/// end does).
#[inline]
fn is_null(row: usize, len: usize, nulls: &Option<NullBuffer>) -> bool {
    row >= len || nulls.as_ref().is_some_and(|n| n.is_null(row))
}

impl Inputs {
    /// The inputs of `batch` for `slots`, an aggregator's: what
    /// [`Aggregator::inputs`](super::Aggregator::inputs) gives.
    pub(crate) fn of(slots: &[Slot], batch: &RecordBatch) -> Inputs {
        let slots = slots
            .iter()
            .map(|slot| match (slot.op, batch.columns().get(slot.index)) {
                (Op::Count, _) | (_, None) => Input::Null,
                (op, Some(column)) => resolve(column, &slot.data_type, kind(&op)),
            })
            .collect();
        Inputs { slots }
    }
}

/// `column`, of `data_type` and kind `kind`, resolved for reads by row.
fn resolve(column: &ArrayRef, data_type: &DataType, kind: Kind) -> Input {
    match kind {
        Kind::Signed | Kind::Unsigned | Kind::F32 | Kind::F64 => dispatch_word!(
            data_type,
            |T| match column.as_primitive_opt::<T>() {
                Some(a) => Input::Word {
                    len: a.len(),
                    nulls: a.nulls().cloned(),
                    words: words_of(a.values()),
                },
                None => Input::Null,
            },
            _ => Input::Null
        ),
        Kind::Bool => match column.as_boolean_opt() {
            Some(a) => Input::Bool {
                values: a.values().clone(),
                nulls: a.nulls().cloned(),
            },
            None => Input::Null,
        },
        Kind::Bytes | Kind::Dec128 => Input::Dynamic {
            array: column.clone(),
            data_type: data_type.clone(),
            kind,
        },
    }
}

/// The words of `values` ([`Num::to_word`] of each): the same buffer for 8-byte values (an
/// `i64`, `u64` or `f64` is its word bit for bit), a widened copy for narrower ones.
fn words_of<T: ArrowNativeType + Num>(values: &ScalarBuffer<T>) -> ScalarBuffer<u64> {
    if std::mem::size_of::<T>() == 8 {
        // Sliced to the array already; 8-byte values are 8-byte aligned, as `u64`s need.
        ScalarBuffer::new(values.inner().clone(), 0, values.len())
    } else {
        values.iter().map(|&v| v.to_word()).collect()
    }
}
