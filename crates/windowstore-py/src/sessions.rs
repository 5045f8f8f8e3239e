//! `windowstore._core.session_windows` and the session parameters the processor class shares.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyDataType;
use windowstore_core::agg::AggSpec;
use windowstore_core::emit::EmitMode;
use windowstore_core::input::{InputSpec, Markers};
use windowstore_core::processor::{check_durations, Clock, Output};
use windowstore_core::session::spec::OnInvalid;
use windowstore_core::session::{CappedSessionSpec, GapSpec, SessionSpec};
use windowstore_core::time::parse_unit;

use crate::convert::{batch_table, batches, duration, PyAgg, PyDuration};
use crate::errors::IntoPyResult;
use crate::guard::guard;

/// Converts the gap arguments (the rule that combines them is [`GapSpec::from_args`]).
pub(crate) fn gap_spec(
    gap: Option<PyDuration>,
    gap_column: Option<String>,
    max_gap: Option<PyDuration>,
) -> PyResult<GapSpec> {
    GapSpec::from_args(
        gap.map(|g| duration(g, "gap")).transpose()?,
        gap_column,
        max_gap.map(|m| duration(m, "max_gap")).transpose()?,
    )
    .py()
}

/// Checks session durations against a time column of type `time_type` as a processor (or
/// complete mode, with `grace` 0 and no `retention`) would: raises what construction or the
/// first call would raise.
#[pyfunction]
#[pyo3(signature = (time_type, *, time, time_unit, gap, gap_column, max_gap, grace, retention, max_duration, clock, idle_timeout))]
#[allow(clippy::too_many_arguments)]
pub fn check_session_durations(
    time_type: Option<PyDataType>,
    time: Option<String>,
    time_unit: Option<String>,
    gap: Option<PyDuration>,
    gap_column: Option<String>,
    max_gap: Option<PyDuration>,
    grace: PyDuration,
    retention: Option<PyDuration>,
    max_duration: Option<PyDuration>,
    clock: &str,
    idle_timeout: Option<PyDuration>,
) -> PyResult<()> {
    guard(|| {
        let spec = SessionSpec {
            gap: gap_spec(gap, gap_column, max_gap)?,
            grace: duration(grace, "grace")?,
            retention: retention.map(|r| duration(r, "retention")).transpose()?,
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        };
        let input = input_spec(Vec::new(), time.unwrap_or_default(), time_unit)?;
        let clock = clock_arg(clock, idle_timeout)?;
        let time_type = time_type.map(PyDataType::into_inner);
        match max_duration {
            None => check_durations(spec, clock, input, time_type.as_ref()),
            Some(d) => {
                let spec = CappedSessionSpec {
                    session: spec,
                    max_duration: Some(duration(d, "max_duration")?),
                    markers: Default::default(),
                };
                check_durations(spec, clock, input, time_type.as_ref())
            }
        }
        .py()
    })
}

/// Converts the clock arguments (the rule that combines them is [`Clock::from_args`]).
pub(crate) fn clock_arg(clock: &str, idle_timeout: Option<PyDuration>) -> PyResult<Clock> {
    let idle_timeout = idle_timeout
        .map(|t| duration(t, "idle_timeout"))
        .transpose()?;
    Clock::from_args(clock, idle_timeout).py()
}

pub(crate) fn input_spec(
    key: Vec<String>,
    time: String,
    time_unit: Option<String>,
) -> PyResult<InputSpec> {
    Ok(InputSpec {
        key,
        time,
        time_unit: time_unit.as_deref().map(parse_unit).transpose().py()?,
        gap: None,
        markers: Default::default(),
    })
}

/// The arguments every complete-data function takes, converted.
pub(crate) struct CompleteArgs {
    /// The schema of the input.
    pub schema: SchemaRef,
    /// The input's batches.
    pub batches: Vec<RecordBatch>,
    /// Which columns are the key and the time.
    pub input: InputSpec,
    /// The aggregations.
    pub aggs: Vec<AggSpec>,
    /// What to do with a row that cannot be used.
    pub on_invalid: OnInvalid,
}

/// Converts the arguments every complete-data function takes (in this order, which decides
/// which error a call with several bad arguments raises).
pub(crate) fn complete_args(
    data: AnyRecordBatch,
    key: Vec<String>,
    time: String,
    time_unit: Option<String>,
    aggs: Vec<PyAgg>,
    on_invalid: String,
) -> PyResult<CompleteArgs> {
    let input = input_spec(key, time, time_unit)?;
    let aggs = crate::convert::aggs(aggs)?;
    let on_invalid = OnInvalid::parse(&on_invalid).py()?;
    let (schema, batches) = batches(data)?;
    Ok(CompleteArgs {
        schema,
        batches,
        input,
        aggs,
        on_invalid,
    })
}

/// What a complete-data session function returns: (output, rejected, gap_clamped).
pub(crate) type CompleteResult<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, u64);

/// The `output` and `rejected` tables of a complete-data session call, with its `gap_clamped`.
pub(crate) fn complete_result(
    py: Python<'_>,
    output: RecordBatch,
    rejected: RecordBatch,
    gap_clamped: u64,
) -> PyResult<CompleteResult<'_>> {
    Ok((
        batch_table(py, output)?,
        batch_table(py, rejected)?,
        gap_clamped,
    ))
}

/// Complete-data session windows: returns (windows, rejected, gap_clamped).
#[pyfunction]
#[pyo3(signature = (data, *, key, time, time_unit, gap, gap_column, max_gap, aggs, on_invalid, max_duration=None, output="windows", starts_session=None, ends_session=None))]
#[allow(clippy::too_many_arguments)]
pub fn session_windows<'py>(
    py: Python<'py>,
    data: AnyRecordBatch,
    key: Vec<String>,
    time: String,
    time_unit: Option<String>,
    gap: Option<PyDuration>,
    gap_column: Option<String>,
    max_gap: Option<PyDuration>,
    aggs: Vec<PyAgg>,
    on_invalid: String,
    max_duration: Option<PyDuration>,
    output: &str,
    starts_session: Option<String>,
    ends_session: Option<String>,
) -> PyResult<CompleteResult<'py>> {
    guard(|| {
        let gap = gap_spec(gap, gap_column, max_gap)?;
        let max_duration = max_duration
            .map(|d| duration(d, "max_duration"))
            .transpose()?;
        let mut args = complete_args(data, key, time, time_unit, aggs, on_invalid)?;
        args.input.markers = Markers {
            starts: starts_session,
            ends: ends_session,
        };
        let output = Output::named(output)
            .and_then(|o| o.check(args.aggs.len(), EmitMode::Final))
            .py()?;
        let result = py
            .detach(|| match output {
                Output::Windows => windowstore_core::session::session_windows(
                    args.schema,
                    &args.batches,
                    args.input,
                    gap,
                    max_duration,
                    args.aggs,
                    args.on_invalid,
                ),
                Output::Records => windowstore_core::session::session_records(
                    args.schema,
                    &args.batches,
                    args.input,
                    gap,
                    max_duration,
                    args.on_invalid,
                ),
            })
            .py()?;
        complete_result(py, result.windows, result.rejected, result.gap_clamped)
    })
}

/// Whether `output` asks for records (`"records"`), refusing what records mode cannot do with
/// `aggs` aggregations in emit mode `emit`: the rule of `Output`, for the Python layer's
/// argument checks.
#[pyfunction]
pub fn check_output(output: &str, aggs: usize, emit: &str) -> PyResult<bool> {
    let emit = EmitMode::parse(emit).py()?;
    let output = Output::named(output)
        .and_then(|o| o.check(aggs, emit))
        .py()?;
    Ok(output == Output::Records)
}
