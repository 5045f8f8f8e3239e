//! Records mode (`output="records"`): a session that closes comes out as its input rows, each
//! tagged with `session_start`, `session_end` and `session_id`, instead of one row per session.
//!
//! Every input row is numbered by its arrival (the processor's record counter). A hidden
//! `collect` aggregate gathers a session's numbers in event-time order (ties in arrival
//! order), so that a closed session names its rows, and the processor holds the accepted rows
//! of open sessions ([`Held`]) until then. The held rows are part of the processor's state: a
//! call changes them beside the store and a failed call puts the old ones back (their index is
//! a list of shared Arrow batches, so keeping the old one costs no copy of rows).
//!
//! `session_id` is a signed 64-bit BLAKE2b hash (8-byte digest, read big-endian) of the key
//! values in key order then `session_start`, each written as a type letter and its value
//! ([`id_fields`]) behind its length in 4 big-endian bytes: the same id for the same key and
//! session in every engine and run (docs/semantics.md).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Int64Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;

use crate::agg::{AggFunc, AggSpec, Overflow};
use crate::{Error, Result};

/// The hidden aggregate input: each row's arrival number.
pub const ROW: &str = "__windowstore_row";
/// The hidden aggregate: a session's arrival numbers, in event-time order.
pub const ROWS: &str = "__windowstore_rows";
/// The columns records mode adds to every row.
pub const TAGS: [&str; 3] = ["session_start", "session_end", "session_id"];

/// The hidden aggregate of records mode: every row number of a session (unbounded).
pub(crate) fn rows_agg() -> AggSpec {
    AggSpec {
        func: AggFunc::Collect {
            max_size: None,
            overflow: Overflow::DropOldest,
        },
        column: Some(ROW.to_string()),
        alias: Some(ROWS.to_string()),
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
    for name in TAGS.iter().copied().chain([ROW, ROWS]) {
        if input.column_with_name(name).is_some() {
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

/// One call's held rows: their numbers (ascending), the rows, and which of them are still held.
/// A row taken out is only marked; a segment is compacted once less than half of it is held,
/// and dropped once none is, so a call's cost does not grow with the rows held.
#[derive(Debug, Clone)]
struct Segment {
    seqs: Arc<[i64]>,
    rows: RecordBatch,
    alive: Arc<[bool]>,
    live: usize,
}

impl Segment {
    fn new(seqs: Arc<[i64]>, rows: RecordBatch) -> Self {
        let live = seqs.len();
        Self {
            seqs,
            rows,
            alive: vec![true; live].into(),
            live,
        }
    }

    /// Where row `seq` is in the segment: at `seq - first` while the segment holds a call's
    /// rows without gaps (the common case, no search), else found by binary search.
    fn position(&self, seq: i64) -> Option<usize> {
        let guess = usize::try_from(seq - self.seqs[0]).ok()?;
        if self.seqs.get(guess) == Some(&seq) {
            return Some(guess);
        }
        self.seqs.binary_search(&seq).ok()
    }

    /// The segment with only its rows still held.
    fn compacted(&self) -> Result<Self> {
        if self.live == self.seqs.len() {
            return Ok(self.clone());
        }
        let seqs: Arc<[i64]> = self
            .seqs
            .iter()
            .zip(self.alive.iter())
            .filter(|(_, &a)| a)
            .map(|(&s, _)| s)
            .collect();
        let keep = BooleanArray::from(self.alive.to_vec());
        let rows = arrow_select::filter::filter_record_batch(&self.rows, &keep)
            .map_err(Error::arrow("releasing held rows"))?;
        Ok(Self::new(seqs, rows))
    }
}

/// The accepted rows of open sessions, in segments of one call each, oldest first.
#[derive(Debug, Clone, Default)]
pub(crate) struct Held {
    segments: Vec<Segment>,
}

impl Held {
    /// How many rows are held.
    pub fn rows(&self) -> usize {
        self.segments.iter().map(|s| s.live).sum()
    }

    /// The Arrow size of the segments' data (their slices of the buffers): the held rows, and
    /// the rows taken out of a segment not compacted yet.
    pub fn bytes(&self) -> usize {
        self.segments
            .iter()
            .flat_map(|s| s.rows.columns())
            .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0))
            .sum()
    }

    /// Holds the rows of `batch`, numbered from `first`, except `rejected` (row indices).
    pub fn hold(&mut self, batch: &RecordBatch, first: u64, rejected: &[u32]) -> Result<()> {
        let first = i64::try_from(first).unwrap_or(i64::MAX);
        let n = batch.num_rows();
        let mut keep = vec![true; n];
        for &r in rejected {
            if let Some(k) = keep.get_mut(r as usize) {
                *k = false;
            }
        }
        let seqs: Arc<[i64]> = (0..n)
            .filter(|&i| keep[i])
            .map(|i| first + i as i64)
            .collect();
        if seqs.is_empty() {
            return Ok(());
        }
        let rows = if seqs.len() == n {
            batch.clone()
        } else {
            arrow_select::filter::filter_record_batch(batch, &BooleanArray::from(keep))
                .map_err(Error::arrow("holding rows"))?
        };
        self.segments.push(Segment::new(seqs, rows));
        Ok(())
    }

    /// Takes the rows of the closed sessions `windows` out of the held rows and returns them
    /// tagged (in `schema`, see [`tagged_schema`]): sessions by key then start, a session's
    /// rows in event-time order. `windows` has `keys` key columns, then the session's start
    /// and end, then the hidden [`ROWS`] list.
    pub fn take(
        &mut self,
        windows: &RecordBatch,
        keys: usize,
        schema: &SchemaRef,
    ) -> Result<RecordBatch> {
        let (out, taken) = self.tag(windows, keys, schema)?;
        self.release(taken)?;
        Ok(out)
    }

    /// The rows of the sessions `windows` tagged, as [`Self::take`] returns them, leaving them
    /// held; with, per segment, the positions of the rows returned.
    pub fn tag(
        &self,
        windows: &RecordBatch,
        keys: usize,
        schema: &SchemaRef,
    ) -> Result<(RecordBatch, Vec<Vec<usize>>)> {
        if windows.num_rows() == 0 {
            return Ok((RecordBatch::new_empty(schema.clone()), Vec::new()));
        }
        let windows = in_order(windows, keys)?;
        let lists = windows
            .column(keys + 2)
            .as_list_opt::<i32>()
            .ok_or_else(|| {
                Error::Internal("records mode: the row numbers are not a list".into())
            })?;
        let seqs = lists.values().as_primitive::<Int64Type>();
        let offsets = lists.value_offsets();
        // Where each row of the output is held, and which window it belongs to.
        let firsts: Vec<i64> = self.segments.iter().map(|s| s.seqs[0]).collect();
        let mut at = Vec::with_capacity(seqs.len());
        let mut parents = Vec::with_capacity(seqs.len());
        // Per segment, the positions taken (no allocation for segments left alone).
        let mut taken: Vec<Vec<usize>> = vec![Vec::new(); self.segments.len()];
        for (window, range) in offsets.windows(2).enumerate() {
            for i in range[0] as usize..range[1] as usize {
                let seq = seqs.value(i);
                let place = firsts
                    .partition_point(|&f| f <= seq)
                    .checked_sub(1)
                    .and_then(|s| Some(s).zip(self.segments[s].position(seq)))
                    .filter(|&(s, i)| self.segments[s].alive[i])
                    .ok_or_else(|| {
                        Error::Internal(format!(
                            "records mode: a closed session holds row {seq}, which is not held"
                        ))
                    })?;
                taken[place.0].push(place.1);
                at.push(place);
                parents.push(window as u32);
            }
        }
        let batches: Vec<&RecordBatch> = self.segments.iter().map(|s| &s.rows).collect();
        let rows = arrow_select::interleave::interleave_record_batch(&batches, &at)
            .map_err(Error::arrow("taking held rows"))?;
        let parents = UInt32Array::from(parents);
        let take = |c: &ArrayRef| {
            arrow_select::take::take(c.as_ref(), &parents, None)
                .map_err(Error::arrow("tagging rows"))
        };
        let ids: ArrayRef = Arc::new(session_ids(&windows, keys)?);
        let mut columns = rows.columns().to_vec();
        columns.push(take(windows.column(keys))?);
        columns.push(take(windows.column(keys + 1))?);
        columns.push(take(&ids)?);
        let out =
            RecordBatch::try_new(schema.clone(), columns).map_err(Error::arrow("tagging rows"))?;
        Ok((out, taken))
    }

    /// Releases the rows at positions `taken` (per segment, from [`Self::tag`]): taken rows
    /// are marked, half-empty segments compacted, empty ones dropped.
    fn release(&mut self, taken: Vec<Vec<usize>>) -> Result<()> {
        if taken.is_empty() {
            return Ok(());
        }
        let mut segments = Vec::with_capacity(self.segments.len());
        for (segment, taken) in self.segments.iter().zip(taken) {
            if taken.is_empty() {
                segments.push(segment.clone());
                continue;
            }
            let mut alive = segment.alive.to_vec();
            for &i in &taken {
                alive[i] = false;
            }
            let marked = Segment {
                alive: alive.into(),
                live: segment.live - taken.len(),
                ..segment.clone()
            };
            if marked.live == 0 {
                continue;
            }
            segments.push(if marked.live * 2 < marked.seqs.len() {
                marked.compacted()?
            } else {
                marked
            });
        }
        self.segments = segments;
        Ok(())
    }

    /// The held rows as one batch of `schema` (the bound input's) plus the hidden row numbers,
    /// for a snapshot.
    pub fn to_batch(&self, schema: &Schema) -> Result<RecordBatch> {
        let mut numbered = Vec::with_capacity(self.segments.len());
        for s in &self.segments {
            let s = s.compacted()?;
            let mut columns = s.rows.columns().to_vec();
            columns.push(Arc::new(Int64Array::from_iter_values(
                s.seqs.iter().copied(),
            )));
            numbered.push(
                RecordBatch::try_new(with_row_field(schema), columns)
                    .map_err(Error::arrow("writing held rows"))?,
            );
        }
        arrow_select::concat::concat_batches(&with_row_field(schema), &numbered)
            .map_err(Error::arrow("writing held rows"))
    }

    /// Held rows from a snapshot's batch ([`Self::to_batch`]); their numbers must ascend and
    /// lie below `next_seq`. Says what is wrong.
    pub fn from_batch(batch: &RecordBatch, next_seq: u64) -> std::result::Result<Self, String> {
        let n = batch.num_columns();
        let seqs = batch
            .column(n.checked_sub(1).ok_or("no columns")?)
            .as_primitive_opt::<Int64Type>()
            .filter(|s| s.null_count() == 0)
            .ok_or("held rows without their numbers")?;
        let seqs: Arc<[i64]> = seqs.values().iter().copied().collect();
        if seqs.windows(2).any(|w| w[0] >= w[1]) {
            return Err("held rows out of sequence".into());
        }
        if seqs.last().is_some_and(|&s| s < 0 || s as u64 >= next_seq) {
            return Err("held rows numbered beyond the rows seen".into());
        }
        let mut held = Self::default();
        if !seqs.is_empty() {
            let rows = batch
                .project(&(0..n - 1).collect::<Vec<_>>())
                .map_err(|e| e.to_string())?;
            held.segments.push(Segment::new(seqs, rows));
        }
        Ok(held)
    }
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

/// The `session_id` of each window of `windows` (`keys` key columns, then the start).
fn session_ids(windows: &RecordBatch, keys: usize) -> Result<Int64Array> {
    let columns: Vec<ArrayRef> = (0..=keys).map(|i| windows.column(i).clone()).collect();
    ids_of(&columns)
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
            let v = &column[row];
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
pub fn id_fields(array: &ArrayRef) -> Result<Vec<Vec<u8>>> {
    let array = match array.data_type() {
        DataType::Dictionary(_, value) => {
            arrow_cast::cast(array, value).map_err(Error::arrow("decoding a dictionary key"))?
        }
        _ => array.clone(),
    };
    let n = array.len();
    let text = |letter: u8, v: &dyn std::fmt::Display| {
        let mut out = vec![letter];
        out.extend_from_slice(v.to_string().as_bytes());
        out
    };
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
            let values: Vec<i64> = match unit {
                TimeUnit::Second => array
                    .as_primitive::<TimestampSecondType>()
                    .values()
                    .to_vec(),
                TimeUnit::Millisecond => array
                    .as_primitive::<TimestampMillisecondType>()
                    .values()
                    .to_vec(),
                TimeUnit::Microsecond => array
                    .as_primitive::<TimestampMicrosecondType>()
                    .values()
                    .to_vec(),
                TimeUnit::Nanosecond => array
                    .as_primitive::<TimestampNanosecondType>()
                    .values()
                    .to_vec(),
            };
            values
                .iter()
                .map(|&v| text(b't', &(i128::from(v) * per)))
                .collect()
        }
        DataType::Date32 => array
            .as_primitive::<Date32Type>()
            .values()
            .iter()
            .map(|v| text(b'd', v))
            .collect(),
        DataType::Date64 => array
            .as_primitive::<Date64Type>()
            .values()
            .iter()
            .map(|v| text(b'd', &v.div_euclid(86_400_000)))
            .collect(),
        DataType::UInt64 => {
            let a = array.as_primitive::<arrow_array::types::UInt64Type>();
            a.values().iter().map(|v| text(b'i', v)).collect()
        }
        t if t.is_integer() => ints(&array)?
            .values()
            .iter()
            .map(|v| text(b'i', v))
            .collect(),
        DataType::Boolean => {
            let a = array.as_boolean();
            (0..n)
                .map(|i| {
                    if a.value(i) {
                        b"b1".to_vec()
                    } else {
                        b"b0".to_vec()
                    }
                })
                .collect()
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let a =
                arrow_cast::cast(&array, &DataType::Utf8).map_err(Error::arrow("reading a key"))?;
            let a = a.as_string::<i32>();
            (0..n)
                .map(|i| {
                    let mut out = vec![b's'];
                    out.extend_from_slice(a.value(i).as_bytes());
                    out
                })
                .collect()
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => {
            let a = arrow_cast::cast(&array, &DataType::Binary)
                .map_err(Error::arrow("reading a key"))?;
            let a = a.as_binary::<i32>();
            (0..n)
                .map(|i| {
                    let mut out = vec![b'y'];
                    out.extend_from_slice(a.value(i));
                    out
                })
                .collect()
        }
        other => {
            return Err(Error::schema(
                "session_id",
                format!("a key of type {other} has no session id form"),
            ))
        }
    })
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
            session_ids(&windows, 1).unwrap().value(0),
            i64::from_be_bytes(want)
        );
    }

    #[test]
    fn timestamps_are_nanoseconds_whatever_their_unit() {
        let ms: ArrayRef = Arc::new(arrow_array::TimestampMillisecondArray::from(vec![3]));
        let us: ArrayRef = Arc::new(arrow_array::TimestampMicrosecondArray::from(vec![3_000]));
        assert_eq!(id_fields(&ms).unwrap(), vec![b"t3000000".to_vec()]);
        assert_eq!(id_fields(&us).unwrap(), id_fields(&ms).unwrap());
        let int32: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![-7]));
        assert_eq!(id_fields(&int32).unwrap(), vec![b"i-7".to_vec()]);
    }
}
