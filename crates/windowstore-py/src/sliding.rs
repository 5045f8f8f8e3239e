//! `windowstore._core.sliding_windows`: complete-data sliding windows for Python.

use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;

use pyo3_arrow::PyDataType;
use windowstore_core::emit::EmitMode;
use windowstore_core::processor::check_durations;
use windowstore_core::reject::OnInvalid;
use windowstore_core::sliding::SlidingSpec;

use crate::convert::{batch_table, duration, PyAgg, PyDuration};
use crate::errors::IntoPyResult;
use crate::guard::guard;
use crate::sessions::{clock_arg, complete_args, input_spec};

/// Complete-data sliding windows: returns (windows, rejected).
#[pyfunction]
#[pyo3(signature = (data, *, key, time, time_unit, time_difference, aggs, on_invalid))]
#[allow(clippy::too_many_arguments)]
pub fn sliding_windows<'py>(
    py: Python<'py>,
    data: AnyRecordBatch,
    key: Vec<String>,
    time: String,
    time_unit: Option<String>,
    time_difference: PyDuration,
    aggs: Vec<PyAgg>,
    on_invalid: String,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    guard(|| {
        let time_difference = duration(time_difference, "time_difference")?;
        let args = complete_args(data, key, time, time_unit, aggs, on_invalid)?;
        let result = py
            .detach(|| {
                windowstore_core::sliding::sliding_windows(
                    args.schema,
                    &args.batches,
                    args.input,
                    time_difference,
                    args.aggs,
                    args.on_invalid,
                )
            })
            .py()?;
        Ok((
            batch_table(py, result.windows)?,
            batch_table(py, result.rejected)?,
        ))
    })
}

/// Checks sliding-window durations against a time column of type `time_type` as a processor
/// (or complete mode, with `grace` 0) would: raises what construction or the first call would
/// raise.
#[pyfunction]
#[pyo3(signature = (time_type, *, time, time_unit, time_difference, grace, clock, idle_timeout))]
#[allow(clippy::too_many_arguments)]
pub fn check_sliding_durations(
    time_type: Option<PyDataType>,
    time: Option<String>,
    time_unit: Option<String>,
    time_difference: PyDuration,
    grace: PyDuration,
    clock: &str,
    idle_timeout: Option<PyDuration>,
) -> PyResult<()> {
    guard(|| {
        let spec = SlidingSpec {
            time_difference: duration(time_difference, "time_difference")?,
            grace: duration(grace, "grace")?,
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        };
        let input = input_spec(Vec::new(), time.unwrap_or_default(), time_unit)?;
        let clock = clock_arg(clock, idle_timeout)?;
        let time_type = time_type.map(PyDataType::into_inner);
        check_durations(spec, clock, input, time_type.as_ref()).py()
    })
}
