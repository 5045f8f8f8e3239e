//! `windowstore._core.SlidingProcessor` and `sliding_windows`: sliding windows for Python.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::input::AnyRecordBatch;
use windowstore_core::emit::EmitMode;
use windowstore_core::reject::{OnInvalid, Reason};
use windowstore_core::sliding::{SlidingProcessor, SlidingSpec};

use crate::convert::{batches, duration, table, PyAgg, PyDuration};
use crate::errors::IntoPyResult;
use crate::guard::guard;
use crate::processor::processor_methods;
use crate::sessions::input_spec;

/// The streaming sliding window processor.
#[pyclass(name = "SlidingProcessor", module = "windowstore._core")]
pub struct PySlidingProcessor {
    inner: SlidingProcessor,
}

processor_methods!(
    PySlidingProcessor,
    SlidingProcessor,
    counters: |c| [
        ("records", c.records),
        ("accepted", c.accepted),
        ("late_window_update", c.late_window_update),
        ("emitted", c.emitted),
    ],
    #[new]
    #[pyo3(signature = (*, key, time, time_unit, time_difference, grace, emit, aggs, on_invalid))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        key: Vec<String>,
        time: String,
        time_unit: Option<String>,
        time_difference: PyDuration,
        grace: PyDuration,
        emit: String,
        aggs: Vec<PyAgg>,
        on_invalid: String,
    ) -> PyResult<Self> {
        let spec = SlidingSpec {
            time_difference: duration(time_difference, "time_difference")?,
            grace: duration(grace, "grace")?,
            emit: EmitMode::parse(&emit).py()?,
            on_invalid: OnInvalid::parse(&on_invalid).py()?,
        };
        let inner = SlidingProcessor::new(
            spec,
            input_spec(key, time, time_unit)?,
            crate::convert::aggs(aggs)?,
        )
        .py()?;
        Ok(Self { inner })
    }
);

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
