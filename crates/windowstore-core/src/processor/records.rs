//! Records mode (`output="records"`): a session that closes comes out as its input rows, each
//! tagged with `session_start`, `session_end` and `session_id`, instead of one row per session.
//!
//! Every input row is numbered by its arrival (the processor's record counter), and a hidden
//! `max` aggregate keeps a session's last arrival number ([`LAST`]), which tells its rows apart
//! from a later session's at the same times ([`super::held`], where the processor holds the
//! accepted rows of open sessions until they close). This module also has the tagged rows'
//! schema and the session id, which complete mode shares.
//!
//! `session_id` is a signed 64-bit BLAKE2b hash (8-byte digest, read big-endian) of the key
//! values in key order then `session_start`, each written as a type letter and its value
//! ([`id_fields`]) behind its length in 4 big-endian bytes: the same id for the same key and
//! session in every engine and run (docs/semantics.md).

use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::BinaryBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Date64Type, Int64Type};
use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;

use crate::agg::{AggFunc, AggSpec};
use crate::emit::EmitMode;
use crate::{Error, Result};

/// The hidden aggregate input: each row's arrival number.
pub const ROW: &str = "__windowstore_row";
/// The hidden aggregate: a session's last arrival number.
pub const LAST: &str = "__windowstore_last";

/// The columns records mode adds to every row.
pub const TAGS: [&str; 3] = ["session_start", "session_end", "session_id"];

/// What session windows output: one row per window, or every input row tagged with its
/// session (records mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// One row per window, with its aggregates.
    Windows,
    /// Every input row, tagged with its session ([`TAGS`]).
    Records,
}

impl Output {
    /// The output the caller names: `"windows"` or `"records"`.
    pub fn named(output: &str) -> Result<Self> {
        match output {
            "windows" => Ok(Self::Windows),
            "records" => Ok(Self::Records),
            other => Err(Error::invalid(
                "output",
                format!("{other:?}; expected \"windows\" or \"records\""),
            )),
        }
    }

    /// The output, checked against what records mode cannot do: `aggs` aggregations (it takes
    /// none) and an emit mode other than `final` (a session's rows come out once, when it
    /// closes).
    pub fn check(self, aggs: usize, emit: EmitMode) -> Result<Self> {
        if self == Self::Windows {
            return Ok(self);
        }
        if emit != EmitMode::Final {
            return Err(Error::invalid(
                "output",
                format!(
                    "\"records\" needs emit=\"final\" (a session's rows come out once, when it \
                     closes), not emit={:?}",
                    emit.as_str()
                ),
            ));
        }
        if aggs > 0 {
            return Err(Error::invalid(
                "aggs",
                "output=\"records\" tags rows with their session and takes no aggregations; \
                 group the tagged rows by session_id to aggregate them",
            ));
        }
        Ok(self)
    }
}

/// The hidden aggregate of records mode: the last arrival number of a session.
pub(crate) fn last_agg() -> AggSpec {
    AggSpec {
        func: AggFunc::Max,
        column: Some(ROW.to_string()),
        alias: Some(LAST.to_string()),
    }
}

/// `schema` with the hidden row-number column after its own (what the aggregates read).
pub(crate) fn with_row_field(schema: &Schema) -> SchemaRef {
    let mut fields = schema.fields().to_vec();
    fields.push(Arc::new(Field::new(ROW, DataType::Int64, false)));
    Arc::new(Schema::new(fields))
}

/// `batch` with its rows' numbers `first, first + 1, ...` in the hidden column.
pub(crate) fn numbered(batch: &RecordBatch, first: i64) -> Result<RecordBatch> {
    let n = i64::try_from(batch.num_rows()).unwrap_or(i64::MAX);
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(Int64Array::from_iter_values(first..first + n)));
    RecordBatch::try_new(with_row_field(&batch.schema()), columns)
        .map_err(Error::arrow("numbering rows"))
}

/// The schema of tagged rows: the input's columns, then the session's bounds (of `bound_type`)
/// and id. Refuses an input column named like a tag.
pub(crate) fn tagged_schema(input: &Schema, bound_type: &DataType) -> Result<SchemaRef> {
    for field in input.fields() {
        let name = field.name();
        if TAGS.contains(&name.as_str()) || [ROW, LAST].contains(&name.as_str()) {
            return Err(Error::schema(
                name,
                "output=\"records\" adds session_start, session_end and session_id to the \
                 input's columns (and uses __windowstore_row internally); rename the input \
                 column",
            ));
        }
    }
    let mut fields = input.fields().to_vec();
    fields.push(Arc::new(Field::new(TAGS[0], bound_type.clone(), true)));
    fields.push(Arc::new(Field::new(TAGS[1], bound_type.clone(), true)));
    fields.push(Arc::new(Field::new(TAGS[2], DataType::Int64, true)));
    Ok(Arc::new(Schema::new(fields)))
}

/// `windows` sorted by their key values, then start.
pub(crate) fn in_order(windows: &RecordBatch, keys: usize) -> Result<RecordBatch> {
    if windows.num_rows() < 2 {
        return Ok(windows.clone());
    }
    let columns: Vec<ArrayRef> = (0..=keys).map(|i| windows.column(i).clone()).collect();
    arrow_select::take::take_record_batch(windows, &sort_order(&columns)?)
        .map_err(Error::arrow("ordering sessions"))
}

/// The order of the rows of `columns` (key columns, then the start) by their values.
pub(crate) fn sort_order(columns: &[ArrayRef]) -> Result<UInt32Array> {
    let fields = columns
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields).map_err(Error::arrow("ordering sessions"))?;
    let rows = converter
        .convert_columns(columns)
        .map_err(Error::arrow("ordering sessions"))?;
    let n = columns.first().map_or(0, |c| c.len());
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
    Ok(UInt32Array::from(order))
}

/// The `session_id` of each row of `columns` (the key columns, then the session's start).
pub(crate) fn ids_of(columns: &[ArrayRef]) -> Result<Int64Array> {
    let fields = columns.iter().map(id_fields).collect::<Result<Vec<_>>>()?;
    let rows = columns.first().map_or(0, |c| c.len());
    let mut ids = Vec::with_capacity(rows);
    let mut digest = [0u8; 8];
    for row in 0..rows {
        let mut h = Blake2bVar::new(8).map_err(|e| Error::Internal(e.to_string()))?;
        for column in &fields {
            let v = column.value(row);
            h.update(&u32::try_from(v.len()).unwrap_or(u32::MAX).to_be_bytes());
            h.update(v);
        }
        h.finalize_variable(&mut digest)
            .map_err(|e| Error::Internal(e.to_string()))?;
        ids.push(i64::from_be_bytes(digest));
    }
    Ok(Int64Array::from(ids))
}

/// The canonical form of each value for the session id: a type letter and the value's text.
/// Integers in decimal (`i`), booleans (`b0`, `b1`), strings as UTF-8 (`s`), binary as is
/// (`y`), dates as days since the epoch (`d`), timestamps as nanoseconds since the epoch
/// whatever their unit and zone (`t`); dictionaries by their values. So the same value gives
/// the same form in every engine (Spark's long and Arrow's int32, Spark's microseconds and
/// Arrow's milliseconds).
pub fn id_fields(array: &ArrayRef) -> Result<BinaryArray> {
    let array = match array.data_type() {
        DataType::Dictionary(_, value) => {
            arrow_cast::cast(array, value).map_err(Error::arrow("decoding a dictionary key"))?
        }
        _ => array.clone(),
    };
    let n = array.len();
    let ints = |a: &ArrayRef| -> Result<Int64Array> {
        Ok(arrow_cast::cast(a, &DataType::Int64)
            .map_err(Error::arrow("reading a key"))?
            .as_primitive::<Int64Type>()
            .clone())
    };
    Ok(match array.data_type() {
        DataType::Timestamp(unit, _) => {
            let per = i128::from(match unit {
                TimeUnit::Second => 1_000_000_000i64,
                TimeUnit::Millisecond => 1_000_000,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1,
            });
            let ticks = ints(&array)?;
            forms(n, |i, out| {
                text(out, b't', i128::from(ticks.value(i)) * per)
            })
        }
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>();
            forms(n, |i, out| text(out, b'd', days.value(i)))
        }
        DataType::Date64 => {
            let ms = array.as_primitive::<Date64Type>();
            forms(n, |i, out| {
                text(out, b'd', ms.value(i).div_euclid(86_400_000))
            })
        }
        DataType::UInt64 => {
            let a = array.as_primitive::<arrow_array::types::UInt64Type>();
            forms(n, |i, out| text(out, b'i', a.value(i)))
        }
        t if t.is_integer() => {
            let a = ints(&array)?;
            forms(n, |i, out| text(out, b'i', a.value(i)))
        }
        DataType::Boolean => {
            let a = array.as_boolean();
            forms(n, |i, out| {
                out.extend_from_slice(if a.value(i) { b"b1" } else { b"b0" })
            })
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let a =
                arrow_cast::cast(&array, &DataType::Utf8).map_err(Error::arrow("reading a key"))?;
            let a = a.as_string::<i32>();
            forms(n, |i, out| {
                out.push(b's');
                out.extend_from_slice(a.value(i).as_bytes());
            })
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => {
            let a = arrow_cast::cast(&array, &DataType::Binary)
                .map_err(Error::arrow("reading a key"))?;
            let a = a.as_binary::<i32>();
            forms(n, |i, out| {
                out.push(b'y');
                out.extend_from_slice(a.value(i));
            })
        }
        other => {
            return Err(Error::schema(
                "session_id",
                format!("a key of type {other} has no session id form"),
            ))
        }
    })
}

/// `n` forms as one binary array, form `i` written by `write(i, out)` to an empty buffer.
fn forms(n: usize, mut write: impl FnMut(usize, &mut Vec<u8>)) -> BinaryArray {
    let mut array = BinaryBuilder::with_capacity(n, n * 16);
    let mut form = Vec::new();
    for i in 0..n {
        form.clear();
        write(i, &mut form);
        array.append_value(&form);
    }
    array.finish()
}

/// Writes `letter` and `value`'s text to `out`.
fn text(out: &mut Vec<u8>, letter: u8, value: impl std::fmt::Display) {
    out.push(letter);
    // Writing to a vector cannot fail.
    let _ = write!(out, "{value}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_is_blake2b_of_the_length_prefixed_forms() {
        // The documented definition, written out for key "a" (a string) and start 5 (ticks).
        let windows = RecordBatch::try_from_iter([
            (
                "k",
                Arc::new(arrow_array::StringArray::from(vec!["a"])) as ArrayRef,
            ),
            (
                "session_start",
                Arc::new(Int64Array::from(vec![5])) as ArrayRef,
            ),
        ])
        .unwrap();
        let mut h = Blake2bVar::new(8).unwrap();
        for v in [&b"sa"[..], &b"i5"[..]] {
            h.update(&(v.len() as u32).to_be_bytes());
            h.update(v);
        }
        let mut want = [0u8; 8];
        h.finalize_variable(&mut want).unwrap();
        assert_eq!(
            ids_of(windows.columns()).unwrap().value(0),
            i64::from_be_bytes(want)
        );
    }

    #[test]
    fn timestamps_are_nanoseconds_whatever_their_unit() {
        let ms: ArrayRef = Arc::new(arrow_array::TimestampMillisecondArray::from(vec![3]));
        let us: ArrayRef = Arc::new(arrow_array::TimestampMicrosecondArray::from(vec![3_000]));
        assert_eq!(id_fields(&ms).unwrap().value(0), b"t3000000");
        assert_eq!(id_fields(&us).unwrap(), id_fields(&ms).unwrap());
        let int32: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![-7]));
        assert_eq!(id_fields(&int32).unwrap().value(0), b"i-7");
    }
}
