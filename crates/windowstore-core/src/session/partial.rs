//! Map-side partial sessions and their merge: session windows of data split across workers.
//!
//! [`session_partials`] cuts one part of the input into sessions as complete mode does, but
//! keeps each session's reach and mergeable aggregate state (layout in
//! [`crate::agg::state_layout`]) instead of finishing it. [`merge_session_partials`] takes the
//! partials of any number of parts, all partials of a key together, chains those whose coverage
//! `[start, reach]` overlaps or touches the running coverage of the key (in start order), merges
//! their states and finishes them.
//!
//! Why this equals complete mode over all records: a partial's coverage is the union of its
//! records' intervals `[t, t + g]`, a connected interval. The connected components of the union
//! of every record's interval are therefore those of the union of the partials' coverages, and
//! merging states equals aggregating the union of the records (`Aggregator::merge`).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, Int64Array, RecordBatch, RecordBatchOptions, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::complete::{cut, Cut};
use super::spec::{GapSpec, OnInvalid, SessionSpec};
use crate::agg::{fill_overflow, AggSpec, Aggregator};
use crate::input::order::group_by_key_then_time;
use crate::input::{column_index, plain_schema, BoundInput, InputSpec};
use crate::output::OutputBuilder;
use crate::processor::WindowKind;
use crate::{Error, Result};

/// The partial column holding a session's reach (`max(t + g)`, in ticks).
pub const REACH_COLUMN: &str = "ws_reach";
/// The partial column holding a session's aggregate state.
pub const STATE_COLUMN: &str = "ws_state";

/// The partial sessions of one part of the input, and its rejected rows.
#[derive(Debug)]
pub struct PartialSessions {
    /// One row per partial session: keys, `session_start`, `session_end`, [`REACH_COLUMN`]
    /// (Int64) and [`STATE_COLUMN`] (Binary).
    pub partials: RecordBatch,
    /// Rejected input rows with their `reason` (empty under `on_invalid="error"`).
    pub rejected: RecordBatch,
    /// Dynamic gaps clamped to `max_gap`.
    pub gap_clamped: u64,
}

/// Partial sessions of `batches` (one part of the input): the sessions complete mode would
/// give for these records alone, each with its reach and unfinished aggregate state. Arrival
/// numbers (the tie-break of `first`, `last` and `collect`) are the row numbers within the part.
pub fn session_partials(
    schema: SchemaRef,
    batches: &[RecordBatch],
    input: InputSpec,
    gap: GapSpec,
    aggs: Vec<AggSpec>,
    on_invalid: OnInvalid,
) -> Result<PartialSessions> {
    let cut = cut(schema, batches, input, (gap, None), aggs, on_invalid)?;
    let (states, ends) = cut
        .aggregator
        .window_states(&cut.batch, &cut.ticks, &cut.order, &cut.offsets)
        .map_err(|e| cut.name_overflow(e))?;
    let state_offsets = std::iter::once(Ok(0))
        .chain(ends.iter().map(|&e| i32::try_from(e)))
        .collect::<Result<Vec<i32>, _>>()
        .map_err(|_| {
            Error::BatchTooLarge("partial states beyond 2 GiB in one call (split the part)".into())
        })?;
    let mut columns = cut.session_columns()?;
    let Cut {
        schema,
        bound,
        reach,
        mut rejections,
        gap_clamped,
        ..
    } = cut;
    columns.push(Arc::new(Int64Array::from(reach)));
    columns.push(Arc::new(BinaryArray::new(
        arrow_buffer::OffsetBuffer::new(state_offsets.into()),
        states.into(),
        None,
    )));
    let partials = RecordBatch::try_new(partial_schema(&bound), columns)
        .map_err(Error::arrow("building partial sessions"))?;
    Ok(PartialSessions {
        partials,
        rejected: rejections.drain(&schema)?,
        gap_clamped,
    })
}

/// The schema of [`session_partials`]' output for `bound` input.
fn partial_schema(bound: &BoundInput) -> SchemaRef {
    let mut fields: Vec<Arc<Field>> = bound.keys.fields().to_vec();
    let time = bound.time.output_type();
    fields.push(Arc::new(Field::new("session_start", time.clone(), false)));
    fields.push(Arc::new(Field::new("session_end", time, false)));
    fields.push(Arc::new(Field::new(REACH_COLUMN, DataType::Int64, false)));
    fields.push(Arc::new(Field::new(STATE_COLUMN, DataType::Binary, false)));
    Arc::new(Schema::new(fields))
}

/// The key columns of `batch` at rows `rows`.
fn take_keys(bound: &BoundInput, batch: &RecordBatch, rows: &UInt32Array) -> Result<Vec<ArrayRef>> {
    bound
        .keys
        .columns()
        .iter()
        .map(|&c| arrow_select::take::take(batch.column(c).as_ref(), rows, None))
        .collect::<Result<_, _>>()
        .map_err(Error::arrow("gathering keys"))
}

/// Session windows from partial sessions (rows of [`session_partials`]' output, of `schema`;
/// every partial of a key must be in `batches`). `input` is the schema of the records the
/// partials were made from (the aggregations bind to it); `key` and `aggs` are those given to
/// [`session_partials`]. The output is complete mode's: keys, `session_start`, `session_end`,
/// the aggregates.
pub fn merge_session_partials(
    input: &Schema,
    schema: SchemaRef,
    batches: &[RecordBatch],
    key: Vec<String>,
    aggs: Vec<AggSpec>,
) -> Result<RecordBatch> {
    let aggregator = Aggregator::try_new(aggs, &plain_schema(input))?;
    let schema = plain_schema(&schema);
    let spec = InputSpec {
        key,
        time: "session_start".into(),
        time_unit: None,
        gap: None,
        markers: Default::default(),
    };
    let bound = BoundInput::try_new(&spec, schema.clone())?;
    let reach_index = column_index(&schema, REACH_COLUMN)?;
    let state_index = column_index(&schema, STATE_COLUMN)?;
    let output =
        OutputBuilder::try_new(&bound.keys, &bound.time, &aggregator, SessionSpec::LAYOUT)?;
    let plain: Vec<RecordBatch> = batches
        .iter()
        .map(|b| bound.conform(b))
        .collect::<Result<_>>()?;
    let batch = arrow_select::concat::concat_batches(bound.schema(), &plain)
        .map_err(Error::arrow("concatenating partials"))?;
    let n = batch.num_rows();
    if u32::try_from(n).is_err() {
        return Err(Error::BatchTooLarge(format!(
            "{n} partial sessions in one call; at most 2^32 - 1 (split by key)"
        )));
    }
    let starts = bound.time.read(&batch);
    let end_column = bound_time(&schema, "session_end")?;
    let ends = end_column.read(&batch);
    let reach = int64(&batch, reach_index, REACH_COLUMN)?;
    let states = binary(&batch, state_index)?;
    let keys = bound.keys.view(&batch)?;
    let valid: Vec<bool> = (0..n)
        .map(|row| {
            !keys.is_null(row)
                && starts.problem(row).is_none()
                && ends.problem(row).is_none()
                && reach.is_valid(row)
                && states.is_valid(row)
        })
        .collect();
    if let Some(row) = valid.iter().position(|ok| !ok) {
        return Err(Error::invalid(
            "partials",
            format!("partial session {row} has a null key, time, reach or state"),
        ));
    }
    let grouped = group_by_key_then_time(&keys, &valid, &starts.ticks);
    let (order, runs) = (grouped.order, grouped.runs);
    let (reach, start, end) = (reach.values(), &starts.ticks, &ends.ticks);
    let mut firsts = Vec::new();
    let mut last_ends = Vec::new();
    let mut merged: Vec<Vec<u8>> = Vec::new();
    let mut scratch = Vec::new();
    for group in runs.windows(2) {
        let mut open = false;
        let mut covered = i64::MIN;
        for &row in &order[group[0]..group[1]] {
            let r = row as usize;
            let state = states.value(r);
            if open && start[r] <= covered {
                let acc = merged.last_mut().expect("a session is open");
                scratch.clear();
                if let Err(e) = aggregator.merge(acc, state, &mut scratch) {
                    let key = bound.keys.render_row(&batch, r);
                    let first = *firsts.last().expect("a session is open") as usize;
                    return Err(fill_overflow(e, key, start[first], end[r].max(start[r])));
                }
                std::mem::swap(acc, &mut scratch);
                let last = last_ends.last_mut().expect("a session is open");
                *last = end[r].max(*last);
                covered = covered.max(reach[r]);
            } else {
                firsts.push(row);
                last_ends.push(end[r]);
                merged.push(state.to_vec());
                covered = reach[r];
                open = true;
            }
        }
    }
    let firsts = UInt32Array::from(firsts);
    let mut columns = take_keys(&bound, &batch, &firsts)?;
    columns.push(
        bound
            .time
            .to_array(firsts.values().iter().map(|&r| start[r as usize]).collect()),
    );
    columns.push(bound.time.to_array(last_ends));
    let slices: Vec<&[u8]> = merged.iter().map(Vec::as_slice).collect();
    columns.extend(aggregator.finish(&slices)?);
    RecordBatch::try_new_with_options(
        output.schema().clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(firsts.len())),
    )
    .map_err(Error::arrow("building output"))
}

/// The time column `name` of the partials, read like the input's time column.
fn bound_time(schema: &Schema, name: &str) -> Result<crate::input::time::TimeColumn> {
    crate::input::time::TimeColumn::try_new(name, None, schema)
}

/// Column `index` of `batch` as Int64.
fn int64<'a>(batch: &'a RecordBatch, index: usize, name: &str) -> Result<&'a Int64Array> {
    batch
        .column(index)
        .as_primitive_opt()
        .ok_or_else(|| Error::schema(name, "partial reach must be Int64"))
}

/// The state column (Binary or LargeBinary) as Binary.
fn binary(batch: &RecordBatch, index: usize) -> Result<BinaryArray> {
    let column = batch.column(index);
    match column.data_type() {
        DataType::Binary => Ok(column.as_binary::<i32>().clone()),
        DataType::LargeBinary | DataType::BinaryView => {
            let cast = arrow_cast::cast(column, &DataType::Binary)
                .map_err(|e| Error::schema(STATE_COLUMN, format!("reading states: {e}")))?;
            Ok(cast.as_binary::<i32>().clone())
        }
        other => Err(Error::schema(
            STATE_COLUMN,
            format!("partial states must be Binary, not {other}"),
        )),
    }
}
