//! `windowstore._core.sliding_windows`: complete-data sliding windows for Python.

use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batch_table, duration, PyAgg, PyDuration};
use crate::errors::IntoPyResult;
use crate::guard::guard;
use crate::sessions::complete_args;

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
