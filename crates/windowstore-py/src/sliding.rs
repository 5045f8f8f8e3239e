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
use crate::sessions::input_spec;

/// The streaming sliding window processor.
#[pyclass(name = "SlidingProcessor", module = "windowstore._core")]
pub struct PySlidingProcessor {
    inner: SlidingProcessor,
}

#[pymethods]
impl PySlidingProcessor {
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

    /// Processes every batch of `data` in order; returns the output as a pyarrow Table.
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        data: AnyRecordBatch,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (schema, input) = batches(data)?;
        let inner = &mut self.inner;
        let out = py
            .detach(|| -> windowstore_core::Result<_> {
                inner.bind(schema)?;
                input
                    .iter()
                    .map(|b| inner.process(b))
                    .collect::<Result<Vec<_>, _>>()
            })
            .py()?;
        let schema = self.inner.output_schema().expect("bound above");
        table(py, schema, out)
    }

    /// End of input; returns the remaining output, or None before any input.
    fn flush<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let inner = &mut self.inner;
        match py.detach(|| inner.flush()).py()? {
            Some(batch) => Ok(Some(table(py, batch.schema(), vec![batch])?)),
            None => Ok(None),
        }
    }

    /// Takes the rejected rows so far, or None before any input.
    fn rejected<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.inner.rejected().py()? {
            Some(batch) => Ok(Some(table(py, batch.schema(), vec![batch])?)),
            None => Ok(None),
        }
    }

    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let c = self.inner.counters();
        d.set_item("records", c.records)?;
        d.set_item("accepted", c.accepted)?;
        d.set_item("late_window_update", c.late_window_update)?;
        d.set_item("emitted", c.emitted)?;
        let mut rejected = 0;
        for reason in Reason::ALL {
            let n = self.inner.rejected_count(reason);
            rejected += n;
            d.set_item(format!("rejected_{}", reason.as_str()), n)?;
        }
        d.set_item("rejected", rejected)?;
        d.set_item("stream_time", self.inner.stream_time())?;
        if let Some(m) = self.inner.store_metrics() {
            for (name, value) in m.pairs() {
                d.set_item(format!("store_{name}"), value)?;
            }
        }
        Ok(d)
    }

    fn snapshot(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let inner = &self.inner;
        py.detach(|| inner.snapshot(&path)).py()
    }

    #[staticmethod]
    fn restore(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let inner = py.detach(|| SlidingProcessor::restore(&path)).py()?;
        Ok(Self { inner })
    }

    /// The whole state as bytes (what `snapshot` writes to a file).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let inner = &self.inner;
        let bytes = py.detach(|| inner.to_bytes()).py()?;
        Ok(PyBytes::new(py, &bytes))
    }

    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let inner = py.detach(|| SlidingProcessor::from_bytes(data)).py()?;
        Ok(Self { inner })
    }

    /// Advances stream time to `t` (ticks of the time column); returns what that emits.
    fn advance<'py>(&mut self, py: Python<'py>, t: i64) -> PyResult<Option<Bound<'py, PyAny>>> {
        let inner = &mut self.inner;
        match py.detach(|| inner.advance(t)).py()? {
            Some(batch) => Ok(Some(table(py, batch.schema(), vec![batch])?)),
            None => Ok(None),
        }
    }

    /// The earliest stream time at which a window not emitted yet closes (`final` mode).
    fn next_close(&self) -> Option<i64> {
        self.inner.next_close()
    }
}

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
}
