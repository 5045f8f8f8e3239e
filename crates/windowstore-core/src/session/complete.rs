//! Complete-data session windows: bounded input, no lateness, no store.
//!
//! Records are grouped by key (a dense id per key in order of first appearance, then a stable
//! counting sort, so time-ordered input needs no further sorting; only key groups that are out of
//! time order get sorted by time and row), then one pass cuts each group into sessions by the
//! rule of `cuts`: wherever a record starts after the running reach `max(t + g)`, a marker
//! separates it from the session, or, with a `max_duration`, it is more than `max_duration`
//! after the start of its session. Aggregates are computed column by column over
//! the resulting runs. The sessions equal what the streaming processor gives for
//! the same records in time order.

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_buffer::ScalarBuffer;
use arrow_schema::SchemaRef;

use super::cuts::{group_flags, Open};
use super::record_checks::record_gap;
use super::spec::{GapSpec, OnInvalid, SessionSpec};
use crate::agg::{fill_overflow, AggSpec, Aggregator};
use crate::input::order::group_by_key_then_time;
use crate::input::time::BatchTimes;
use crate::input::{BoundInput, InputSpec, KeyView};
use crate::output::OutputBuilder;
use crate::processor::WindowKind;
use crate::reject::Rejections;
use crate::time::{Duration, TimeBase};
use crate::{Error, Result};

/// Sessions of bounded input, and the rows that could not be used.
#[derive(Debug)]
pub struct CompleteSessions {
    /// One row per session: keys, `session_start`, `session_end`, aggregates.
    pub windows: RecordBatch,
    /// Rejected input rows with their `reason` (empty under `on_invalid="error"`).
    pub rejected: RecordBatch,
    /// Dynamic gaps clamped to `max_gap`.
    pub gap_clamped: u64,
    /// Sessions that `max_duration` ended (the next record of the key would have joined them by
    /// the gap rule).
    pub max_duration_cuts: u64,
}

/// Session windows of `batches` (all of `schema`) in one pass after a sort by key and time.
/// With a `max_duration`, no session spans more than it from its first to its last record
/// (docs/semantics.md section 2, maximum duration): per key in time order, a record joins the
/// current session if the gap rule joins it and `t - start <= max_duration`, and starts a new
/// session otherwise; `None` is no cap. The marker columns of `input.markers` separate sessions
/// too (docs/semantics.md section 2, sessions a record starts or ends).
pub fn session_windows(
    schema: SchemaRef,
    batches: &[RecordBatch],
    input: InputSpec,
    gap: GapSpec,
    max_duration: Option<Duration>,
    aggs: Vec<AggSpec>,
    on_invalid: OnInvalid,
) -> Result<CompleteSessions> {
    let mut cut = cut(
        schema,
        batches,
        input,
        (gap, max_duration),
        aggs,
        on_invalid,
    )?;
    let mut columns = cut.session_columns()?;
    let output = OutputBuilder::try_new(
        &cut.bound.keys,
        &cut.bound.time,
        &cut.aggregator,
        SessionSpec::LAYOUT,
    )?;
    let aggregates = cut
        .aggregator
        .aggregate_windows(&cut.batch, &cut.order, &cut.offsets)
        .map_err(|e| cut.name_overflow(e))?;
    columns.extend(aggregates);
    let windows = RecordBatch::try_new(output.schema().clone(), columns)
        .map_err(Error::arrow("building output"))?;
    Ok(CompleteSessions {
        windows,
        rejected: cut.rejections.drain(&cut.schema)?,
        gap_clamped: cut.gap_clamped,
        max_duration_cuts: cut.max_duration_cuts,
    })
}

/// [`session_windows`] with every usable row tagged instead of one row per session:
/// `windows` holds the input rows (their columns of their own types) with their session's
/// `session_start`, `session_end` and `session_id`, sessions by key value then start, a
/// session's rows in (time, row) order. The sessions are the cut's own: no aggregate.
pub fn session_records(
    schema: SchemaRef,
    batches: &[RecordBatch],
    input: InputSpec,
    gap: GapSpec,
    max_duration: Option<Duration>,
    on_invalid: OnInvalid,
) -> Result<CompleteSessions> {
    let original = arrow_select::concat::concat_batches(&schema, batches)
        .map_err(Error::arrow("reading the input"))?;
    let cut = cut(
        schema.clone(),
        batches,
        input,
        (gap, max_duration),
        Vec::new(),
        on_invalid,
    )?;
    // Each session's key columns and start (what orders the sessions and makes their ids),
    // then its end.
    let mut by = cut.session_columns()?;
    let end = by
        .pop()
        .ok_or_else(|| Error::Internal("no end column".into()))?;
    let Cut {
        schema: bound_schema,
        bound,
        order,
        offsets,
        mut rejections,
        gap_clamped,
        max_duration_cuts,
        ..
    } = cut;
    let tagged = crate::processor::tagged_schema(&schema, &bound.time.output_type())?;
    let ranked = crate::processor::sort_order(&by)?;
    let ids = crate::processor::ids_of(&by)?;
    // The rows session by session in that order, and each row's session.
    let mut rows = Vec::with_capacity(order.len());
    let mut parents = Vec::with_capacity(order.len());
    for &w in ranked.values() {
        let w = w as usize;
        rows.extend_from_slice(&order[offsets[w]..offsets[w + 1]]);
        parents.extend(std::iter::repeat_n(w as u32, offsets[w + 1] - offsets[w]));
    }
    let rows = UInt32Array::from(rows);
    let parents = UInt32Array::from(parents);
    let session_columns: [ArrayRef; 3] = [
        by.pop()
            .ok_or_else(|| Error::Internal("no start column".into()))?,
        end,
        std::sync::Arc::new(ids),
    ];
    let mut columns = arrow_select::take::take_arrays(original.columns(), &rows, None)
        .map_err(Error::arrow("gathering rows"))?;
    for c in &session_columns {
        columns.push(
            arrow_select::take::take(c.as_ref(), &parents, None)
                .map_err(Error::arrow("tagging rows"))?,
        );
    }
    let windows = RecordBatch::try_new(tagged, columns).map_err(Error::arrow("tagging rows"))?;
    Ok(CompleteSessions {
        windows,
        rejected: rejections.drain(&bound_schema)?,
        gap_clamped,
        max_duration_cuts,
    })
}

/// `batches` conformed to `bound` in one batch, of at most `u32::MAX` rows (complete mode
/// numbers rows with `u32`).
pub(crate) fn one_batch(bound: &BoundInput, batches: &[RecordBatch]) -> Result<RecordBatch> {
    let batches: Vec<RecordBatch> = batches
        .iter()
        .map(|b| bound.conform(b))
        .collect::<Result<_>>()?;
    let batch = match batches.as_slice() {
        [one] => one.clone(),
        many => arrow_select::concat::concat_batches(bound.schema(), many)
            .map_err(Error::arrow("concatenating the input"))?,
    };
    let n = batch.num_rows();
    if u32::try_from(n).is_err() {
        return Err(Error::BatchTooLarge(format!(
            "{n} rows in one call; complete mode takes at most 2^32 - 1 (split by key)"
        )));
    }
    Ok(batch)
}

/// Bounded input checked row by row, grouped by key and time and cut into sessions: the part
/// of complete mode that map-side partial sessions ([`super::partial`]) share.
pub(crate) struct Cut {
    /// The bound input schema (see [`BoundInput::try_new`]).
    pub schema: SchemaRef,
    /// All input rows in one batch.
    pub batch: RecordBatch,
    /// The key, time and gap columns bound to `schema`.
    pub bound: BoundInput,
    /// The aggregations bound to `schema`.
    pub aggregator: Aggregator,
    /// The time of each row in ticks.
    pub ticks: ScalarBuffer<i64>,
    /// Valid rows grouped into sessions, each in (time, row) order.
    pub order: Vec<u32>,
    /// Session `w` holds `order[offsets[w]..offsets[w + 1]]`.
    pub offsets: Vec<usize>,
    /// The reach (`max(t + g)`) of each session.
    pub reach: Vec<i64>,
    /// The rejected rows.
    pub rejections: Rejections,
    /// Dynamic gaps clamped to `max_gap`.
    pub gap_clamped: u64,
    /// Sessions ended by `max_duration`.
    pub max_duration_cuts: u64,
}

impl Cut {
    /// `e`, an error of aggregating the sessions: if a collect with overflow="fail"
    /// overflowed, it names the first session that did.
    pub(crate) fn name_overflow(&self, e: Error) -> Error {
        let (order, offsets) = (&self.order, &self.offsets);
        let Some((w, _)) = self.aggregator.first_overflow(&self.batch, order, offsets) else {
            return e;
        };
        let (first, last) = (
            order[offsets[w]] as usize,
            order[offsets[w + 1] - 1] as usize,
        );
        let key = self.bound.keys.render_row(&self.batch, first);
        fill_overflow(e, key, self.ticks[first], self.ticks[last])
    }

    /// One row per session, in the cut's order: its key columns (taken from its first row),
    /// its start (first time) and its end (last time), in the output's types.
    pub(crate) fn session_columns(&self) -> Result<Vec<ArrayRef>> {
        let (order, offsets, t) = (&self.order, &self.offsets, &self.ticks);
        let sessions = offsets.len() - 1;
        let firsts = UInt32Array::from_iter_values(offsets[..sessions].iter().map(|&i| order[i]));
        let mut columns: Vec<ArrayRef> = self
            .bound
            .keys
            .columns()
            .iter()
            .map(|&c| arrow_select::take::take(self.batch.column(c).as_ref(), &firsts, None))
            .collect::<Result<_, _>>()
            .map_err(Error::arrow("gathering keys"))?;
        let starts = firsts.values().iter().map(|&r| t[r as usize]).collect();
        columns.push(self.bound.time.to_array(starts));
        let ends = offsets[1..]
            .iter()
            .map(|&end| t[order[end - 1] as usize])
            .collect();
        columns.push(self.bound.time.to_array(ends));
        Ok(columns)
    }
}

/// Checks the rows of `batches`, groups the valid ones by key and time and cuts each key's
/// rows into sessions by the rule of `gap` and `max_duration` (`None`: no cap) and the marker
/// columns of `input`.
pub(crate) fn cut(
    schema: SchemaRef,
    batches: &[RecordBatch],
    input: InputSpec,
    (gap, max_duration): (GapSpec, Option<Duration>),
    aggs: Vec<AggSpec>,
    on_invalid: OnInvalid,
) -> Result<Cut> {
    let input = InputSpec {
        gap: match &gap {
            GapSpec::Column { column, .. } => Some(column.clone()),
            GapSpec::Fixed(_) => None,
        },
        ..input
    };
    let bound = BoundInput::try_new(&input, schema)?;
    let schema = bound.schema().clone();
    let base = bound.time.base();
    let gap = GapTicks::of(&gap, &base)?;
    let max_duration = match max_duration {
        Some(d) => capped_ticks(d, &base)?,
        None => i64::MAX,
    };
    let aggregator = Aggregator::try_new(aggs, &schema)?;
    let batch = one_batch(&bound, batches)?;

    let keys = bound.keys.view(&batch)?;
    let times = bound.time.read(&batch);
    let checks = check_rows(&bound, &batch, &keys, &times, gap, on_invalid)?;

    let grouped = group_by_key_then_time(&keys, &checks.valid, &times.ticks);
    let (order, runs, sorted) = (grouped.order, grouped.runs, grouped.times);
    let gap_of = |row: usize| gap.fixed.unwrap_or_else(|| checks.gaps[row]);
    let flags = bound.markers.as_ref().map(|m| m.read(&batch));
    let sessions = cut_sessions(
        &order,
        &runs,
        &sorted,
        gap_of,
        flags.as_deref(),
        max_duration,
    );
    let ticks = times.ticks.clone();
    Ok(Cut {
        schema,
        batch,
        bound,
        aggregator,
        ticks,
        order,
        offsets: sessions.offsets,
        reach: sessions.reaches,
        rejections: checks.rejections,
        gap_clamped: checks.gap_clamped,
        max_duration_cuts: sessions.max_duration_cuts,
    })
}

/// A gap spec in ticks.
#[derive(Debug, Clone, Copy)]
struct GapTicks {
    /// The fixed gap; `None` for a gap column.
    fixed: Option<i64>,
    /// The largest gap a record can have (a fixed gap's own).
    max: i64,
}

impl GapTicks {
    /// `gap` in ticks of `base`; the largest gap must be > 0.
    fn of(gap: &GapSpec, base: &TimeBase) -> Result<Self> {
        let (fixed, max) = gap.to_ticks(base)?;
        if max <= 0 {
            let name = if fixed.is_some() { "gap" } else { "max_gap" };
            return Err(Error::invalid(name, format!("must be > 0, got {max}")));
        }
        Ok(Self { fixed, max })
    }
}

/// What checking every row left.
#[derive(Debug)]
struct RowChecks {
    /// Whether each row is usable.
    valid: Vec<bool>,
    /// Each row's gap in ticks, for a gap column (a fixed gap needs no array: empty).
    gaps: Vec<i64>,
    /// The rejected rows.
    rejections: Rejections,
    /// Dynamic gaps clamped to `max_gap`.
    gap_clamped: u64,
}

/// Checks each row of `batch` (its key `keys`, its time `times`, its gap under `gap`): under
/// `on_invalid="error"` the first bad row is an error, else bad rows are rejected.
fn check_rows(
    bound: &BoundInput,
    batch: &RecordBatch,
    keys: &KeyView<'_>,
    times: &BatchTimes,
    gap: GapTicks,
    on_invalid: OnInvalid,
) -> Result<RowChecks> {
    let n = batch.num_rows();
    let column_gaps = bound.gap.as_ref().map(|g| g.read(batch));
    let mut checks = RowChecks {
        valid: vec![true; n],
        gaps: if gap.fixed.is_some() {
            Vec::new()
        } else {
            vec![0i64; n]
        },
        rejections: Rejections::default(),
        gap_clamped: 0,
    };
    for row in 0..n {
        let column_gap = column_gaps.as_ref().and_then(|g| g[row]);
        let t = times.ticks[row];
        let reason = match record_gap(
            keys.is_null(row),
            times.problem(row),
            t,
            gap.fixed,
            column_gap,
            gap.max,
        ) {
            Ok((g, clamped)) => {
                if gap.fixed.is_none() {
                    checks.gaps[row] = g;
                }
                checks.gap_clamped += u64::from(clamped);
                None
            }
            Err(reason) => Some(reason),
        };
        if let Some(reason) = reason {
            if on_invalid == OnInvalid::Error {
                return Err(Error::InvalidRecord {
                    row,
                    reason: reason.as_str().to_string(),
                });
            }
            checks.valid[row] = false;
            checks.rejections.reject(row, reason);
        }
    }
    checks.rejections.finish_batch(batch)?;
    Ok(checks)
}

/// Valid rows cut into sessions.
#[derive(Debug)]
struct Sessions {
    /// Session `w` holds `order[offsets[w]..offsets[w + 1]]`.
    offsets: Vec<usize>,
    /// The reach (`max(t + g)`) of each session.
    reaches: Vec<i64>,
    /// Sessions ended by `max_duration`.
    max_duration_cuts: u64,
}

/// Cuts each key group `order[runs[k]..runs[k + 1]]` (rows in (time, row) order, their times
/// `sorted`) into sessions by the rule of `cuts`: each row's gap `gap_of(row)`, the marker
/// `flags` of each row if any, and `max_duration` (`i64::MAX`: none).
fn cut_sessions(
    order: &[u32],
    runs: &[usize],
    sorted: &[i64],
    gap_of: impl Fn(usize) -> i64,
    flags: Option<&[u8]>,
    max_duration: i64,
) -> Sessions {
    let mut out = Sessions {
        offsets: Vec::with_capacity(order.len() / 4 + 2),
        reaches: Vec::with_capacity(order.len() / 4 + 1),
        max_duration_cuts: 0,
    };
    out.offsets.push(0usize);
    let mut groups = Vec::new();
    for group in runs.windows(2) {
        let (lo, hi) = (group[0], group[1]);
        let (rows, times) = (&order[lo..hi], &sorted[lo..hi]);
        match flags {
            // Without markers every group's flags are 0: the rule is the gap and the cap alone.
            None => cut_key((rows, times, lo), &gap_of, |_| 0, max_duration, &mut out),
            Some(flags) => {
                let flag = |i: usize| flags[rows[i] as usize];
                group_flags(hi - lo, |i| times[i], flag, &mut groups);
                let groups = &groups;
                cut_key(
                    (rows, times, lo),
                    &gap_of,
                    |i| groups[i],
                    max_duration,
                    &mut out,
                );
            }
        }
    }
    out
}

/// Cuts one key's rows (`rows`, at `times`, the key's first at position `at` of the cut) into
/// sessions by the rule of `cuts`, each record's group flags `group_of(i)`, into `out`.
fn cut_key(
    (rows, times, at): (&[u32], &[i64], usize),
    gap_of: &impl Fn(usize) -> i64,
    group_of: impl Fn(usize) -> u8,
    max_duration: i64,
    out: &mut Sessions,
) {
    let (Some(&first), Some(&t0)) = (rows.first(), times.first()) else {
        return;
    };
    let mut open = Open::new(t0, t0 + gap_of(first as usize), group_of(0));
    for (i, (&row, &t)) in rows.iter().zip(times).enumerate().skip(1) {
        let (reach, g) = (t + gap_of(row as usize), group_of(i));
        if open.joins(t, g, max_duration) {
            open.add(t, reach, g);
        } else {
            out.max_duration_cuts += u64::from(open.by_gap(t, g));
            out.offsets.push(at + i);
            out.reaches.push(open.reach);
            open = Open::new(t, reach, g);
        }
    }
    out.offsets.push(at + rows.len());
    out.reaches.push(open.reach);
}

/// `max_duration` in ticks of `base`; it must be > 0.
pub(crate) fn capped_ticks(max_duration: Duration, base: &TimeBase) -> Result<i64> {
    if max_duration.is_negative() || max_duration.is_zero() {
        return Err(Error::invalid(
            "max_duration",
            format!("must be > 0, got {max_duration:?}"),
        ));
    }
    max_duration.to_ticks(base, "max_duration")
}
