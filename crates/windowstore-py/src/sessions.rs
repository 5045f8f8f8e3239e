//! `windowstore._core.SessionProcessor` and `session_windows`: session windows for Python.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::input::AnyRecordBatch;
use windowstore_core::emit::EmitMode;
use windowstore_core::input::InputSpec;
use windowstore_core::reject::Reason;
use windowstore_core::session::spec::OnInvalid;
use windowstore_core::session::{GapSpec, SessionProcessor, SessionSpec};
use windowstore_core::time::parse_unit;

use crate::convert::{batches, duration, table, PyAgg, PyDuration};
use crate::errors::IntoPyResult;

pub(crate) fn gap_spec(
    gap: Option<PyDuration>,
    gap_column: Option<String>,
    max_gap: Option<PyDuration>,
) -> PyResult<GapSpec> {
    use windowstore_core::Error;
    match (gap, gap_column, max_gap) {
        (Some(g), None, None) => Ok(GapSpec::Fixed(duration(g, "gap")?)),
        (None, Some(column), Some(m)) => Ok(GapSpec::Column {
            column,
            max_gap: duration(m, "max_gap")?,
        }),
        (None, Some(_), None) => Err(crate::errors::to_py(Error::invalid(
            "max_gap",
            "a gap column needs max_gap (the largest gap a record may have)",
        ))),
        (Some(_), Some(_), _) => Err(crate::errors::to_py(Error::invalid(
            "gap",
            "give gap or gap_column, not both",
        ))),
        (Some(_), None, Some(_)) => Err(crate::errors::to_py(Error::invalid(
            "max_gap",
            "max_gap goes with gap_column, not with a fixed gap",
        ))),
        (None, None, _) => Err(crate::errors::to_py(Error::invalid(
            "gap",
            "give gap (fixed) or gap_column and max_gap (dynamic)",
        ))),
    }
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
    })
}

/// The streaming session window processor.
#[pyclass(name = "SessionProcessor", module = "windowstore._core")]
pub struct PySessionProcessor {
    inner: SessionProcessor,
}

#[pymethods]
impl PySessionProcessor {
    #[new]
    #[pyo3(signature = (*, key, time, time_unit, gap, gap_column, max_gap, grace, retention, emit, aggs, on_invalid))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        key: Vec<String>,
        time: String,
        time_unit: Option<String>,
        gap: Option<PyDuration>,
        gap_column: Option<String>,
        max_gap: Option<PyDuration>,
        grace: PyDuration,
        retention: Option<PyDuration>,
        emit: String,
        aggs: Vec<PyAgg>,
        on_invalid: String,
    ) -> PyResult<Self> {
        let spec = SessionSpec {
            gap: gap_spec(gap, gap_column, max_gap)?,
            grace: duration(grace, "grace")?,
            retention: retention.map(|r| duration(r, "retention")).transpose()?,
            emit: EmitMode::parse(&emit).py()?,
            on_invalid: OnInvalid::parse(&on_invalid).py()?,
        };
        let inner = SessionProcessor::new(
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
        d.set_item("gap_clamped", c.gap_clamped)?;
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
        let inner = py.detach(|| SessionProcessor::restore(&path)).py()?;
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
        let inner = py.detach(|| SessionProcessor::from_bytes(data)).py()?;
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

/// Complete-data session windows: returns (windows, rejected, gap_clamped).
#[pyfunction]
#[pyo3(signature = (data, *, key, time, time_unit, gap, gap_column, max_gap, aggs, on_invalid))]
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
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, u64)> {
    let gap = gap_spec(gap, gap_column, max_gap)?;
    let input = input_spec(key, time, time_unit)?;
    let aggs = crate::convert::aggs(aggs)?;
    let on_invalid = OnInvalid::parse(&on_invalid).py()?;
    let (schema, input_batches) = batches(data)?;
    let result = py
        .detach(|| {
            windowstore_core::session::session_windows(
                schema,
                &input_batches,
                input,
                gap,
                aggs,
                on_invalid,
            )
        })
        .py()?;
    Ok((
        table(py, result.windows.schema(), vec![result.windows])?,
        table(py, result.rejected.schema(), vec![result.rejected])?,
        result.gap_clamped,
    ))
}
