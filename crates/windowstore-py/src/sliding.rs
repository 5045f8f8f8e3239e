//! `windowstore._core.sliding_windows`: complete-data sliding windows for Python.

use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use windowstore_core::reject::OnInvalid;

use crate::convert::{batches, duration, table, PyAgg, PyDuration};
use crate::errors::IntoPyResult;
use crate::guard::guard;
use crate::sessions::input_spec;

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
        let input = input_spec(key, time, time_unit)?;
        let aggs = crate::convert::aggs(aggs)?;
        let on_invalid = OnInvalid::parse(&on_invalid).py()?;
        let (schema, input_batches) = batches(data)?;
        let result = py
            .detach(|| {
                windowstore_core::sliding::sliding_windows(
                    schema,
                    &input_batches,
                    input,
                    time_difference,
                    aggs,
                    on_invalid,
                )
            })
            .py()?;
        Ok((
            table(py, result.windows.schema(), vec![result.windows])?,
            table(py, result.rejected.schema(), vec![result.rejected])?,
        ))
    })
}
