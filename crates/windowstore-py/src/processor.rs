//! `windowstore._core.Processor`: the one streaming processor class, over a core processor of
//! either window kind (`Processor.sessions(...)`, `Processor.sliding(...)`).
//!
//! Calls from several threads serialize on a lock around the processor. The lock is taken
//! with the GIL released (inside `py.detach`), so a thread waiting for it never holds the GIL
//! that the thread inside needs, and a long `process` does not stop other Python threads.

use std::path::PathBuf;
use std::sync::Mutex;

use arrow_array::RecordBatch;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::{PyRecordBatch, PySchema};
use windowstore_core::any_processor::{restore_any, AnyProcessor};
use windowstore_core::emit::EmitMode;
use windowstore_core::input::Markers;
use windowstore_core::processor::{Clock, Output, Processor, Then as Hook, WindowQuery};
use windowstore_core::reject::{OnInvalid, Reason};
use windowstore_core::session::{CappedSessionSpec, SessionSpec};
use windowstore_core::sliding::SlidingSpec;

use crate::convert::{batch_table, batches, duration, PyAgg, PyDuration};
use crate::errors::IntoPyResult;
use crate::guard::guard;
use crate::sessions::{clock_arg, gap_spec, input_spec};

/// A streaming window processor (wrapped by windowstore.SessionWindowProcessor and
/// windowstore.SlidingWindowProcessor).
#[pyclass(name = "Processor", module = "windowstore._core", frozen)]
pub struct PyProcessor {
    inner: Mutex<Box<dyn AnyProcessor>>,
}

impl PyProcessor {
    fn new(inner: Box<dyn AnyProcessor>) -> Self {
        Self {
            inner: Mutex::new(inner),
        }
    }

    /// Runs `f` on the processor with the GIL released, once the lock is free. A processor
    /// whose lock was poisoned (a panic inside a call, caught by `guard`) may hold half a
    /// call, so it is refused from then on.
    fn with<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut dyn AnyProcessor) -> R + Send,
    ) -> PyResult<R> {
        py.detach(|| match self.inner.lock() {
            Ok(mut p) => Ok(f(p.as_mut())),
            Err(_) => Err(()),
        })
        .map_err(|()| {
            crate::errors::internal(
                "this processor failed inside a call (a bug in windowstore, please report it) \
                 and is no longer usable; restore it from a snapshot"
                    .to_string(),
            )
        })
    }

    /// Runs `f` on the processor with the callable `then` as its hook (see [`Then`]); returns
    /// what the callable returned, else the output as a table, else None.
    fn emitting<'py>(
        &self,
        py: Python<'py>,
        then: Option<Py<PyAny>>,
        f: impl FnOnce(
                &mut dyn AnyProcessor,
                &mut Hook<'_>,
            ) -> windowstore_core::Result<Option<RecordBatch>>
            + Send,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut then = Then::new(then);
        let out = self.with(py, |p| f(p, &mut then.hook()))?.py()?;
        then.or_table(py, out)
    }
}

#[pymethods]
impl PyProcessor {
    /// A session window processor.
    #[staticmethod]
    #[pyo3(signature = (*, key, time, time_unit, gap, gap_column, max_gap, grace, retention, emit, aggs, on_invalid, max_duration=None, clock="event", idle_timeout=None, output="windows", starts_session=None, ends_session=None))]
    #[allow(clippy::too_many_arguments)]
    fn sessions(
        key: Vec<String>,
        time: Option<String>,
        time_unit: Option<String>,
        gap: Option<PyDuration>,
        gap_column: Option<String>,
        max_gap: Option<PyDuration>,
        grace: PyDuration,
        retention: Option<PyDuration>,
        emit: String,
        aggs: Vec<PyAgg>,
        on_invalid: String,
        max_duration: Option<PyDuration>,
        clock: &str,
        idle_timeout: Option<PyDuration>,
        output: &str,
        starts_session: Option<String>,
        ends_session: Option<String>,
    ) -> PyResult<Self> {
        guard(|| {
            let records = Output::named(output).py()? == Output::Records;
            let spec = SessionSpec {
                gap: gap_spec(gap, gap_column, max_gap)?,
                grace: duration(grace, "grace")?,
                retention: retention.map(|r| duration(r, "retention")).transpose()?,
                emit: EmitMode::parse(&emit).py()?,
                on_invalid: OnInvalid::parse(&on_invalid).py()?,
            };
            let input = input_spec(key, time.unwrap_or_default(), time_unit)?;
            let aggs = crate::convert::aggs(aggs)?;
            let clock = clock_arg(clock, idle_timeout)?;
            let markers = Markers {
                starts: starts_session,
                ends: ends_session,
            };
            let max_duration = max_duration
                .map(|d| duration(d, "max_duration"))
                .transpose()?;
            Ok(Self::new(match max_duration {
                None if !markers.any() => Box::new(
                    Processor::new(spec, input, aggs)
                        .and_then(|p| p.with_clock(clock))
                        .and_then(|p| if records { p.with_records() } else { Ok(p) })
                        .py()?,
                ),
                _ => {
                    let spec = CappedSessionSpec {
                        session: spec,
                        max_duration,
                        markers,
                    };
                    Box::new(
                        Processor::new(spec, input, aggs)
                            .and_then(|p| p.with_clock(clock))
                            .and_then(|p| if records { p.with_records() } else { Ok(p) })
                            .py()?,
                    )
                }
            }))
        })
    }

    /// A sliding window processor.
    #[staticmethod]
    #[pyo3(signature = (*, key, time, time_unit, time_difference, grace, emit, aggs, on_invalid, clock="event", idle_timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn sliding(
        key: Vec<String>,
        time: Option<String>,
        time_unit: Option<String>,
        time_difference: PyDuration,
        grace: PyDuration,
        emit: String,
        aggs: Vec<PyAgg>,
        on_invalid: String,
        clock: &str,
        idle_timeout: Option<PyDuration>,
    ) -> PyResult<Self> {
        guard(|| {
            let spec = SlidingSpec {
                time_difference: duration(time_difference, "time_difference")?,
                grace: duration(grace, "grace")?,
                emit: EmitMode::parse(&emit).py()?,
                on_invalid: OnInvalid::parse(&on_invalid).py()?,
            };
            let input = input_spec(key, time.unwrap_or_default(), time_unit)?;
            let clock = clock_arg(clock, idle_timeout)?;
            let p = Processor::new(spec, input, crate::convert::aggs(aggs)?)
                .and_then(|p| p.with_clock(clock))
                .py()?;
            Ok(Self::new(Box::new(p)))
        })
    }

    /// The window kind's snapshot tag (`session-processor/2`, `sliding-processor/1`).
    #[getter]
    fn kind(&self, py: Python<'_>) -> &'static str {
        self.with(py, |p| p.kind_tag()).unwrap_or("unusable")
    }

    /// The clock: `"event"`, `"processing"` or `"idle"` (event time with an idle timeout).
    #[getter]
    fn clock(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.with(py, |p| match p.clock() {
            Clock::Event => "event",
            Clock::Processing => "processing",
            Clock::Idle(_) => "idle",
        })
    }

    /// Processes every batch of `data` in order, as one transaction, at the wall clock's
    /// reading `now` (epoch ms; None: the system clock); returns the output as a pyarrow
    /// Table, or what `then(output)` returns (see `Then`).
    #[pyo3(signature = (data, now=None, then=None))]
    fn process<'py>(
        &self,
        py: Python<'py>,
        data: AnyRecordBatch,
        now: Option<i64>,
        then: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let (schema, input) = batches(data)?;
            let mut then = Then::new(then);
            let out = self
                .with(py, |p| {
                    p.process_table(schema, &input, now, &mut then.hook())
                })?
                .py()?;
            match then.take(py) {
                Some(done) => Ok(done),
                None => batch_table(py, out),
            }
        })
    }

    /// End of input; returns the remaining output, or None before any input.
    #[pyo3(signature = (then=None))]
    fn flush<'py>(
        &self,
        py: Python<'py>,
        then: Option<Py<PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(|| self.emitting(py, then, |p, hook| p.flush(hook)))
    }

    /// Takes the rejected rows so far, or None before any input.
    fn rejected<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(|| maybe_table(py, self.with(py, |p| p.rejected())?.py()?))
    }

    /// Counters, rejections by reason, stream time and store sizes.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let (counters, rejected, stream_time, store, held) = self.with(py, |p| {
                let rejected: Vec<(Reason, u64)> = Reason::ALL
                    .iter()
                    .map(|&r| (r, p.rejected_count(r)))
                    .collect();
                (
                    p.counter_pairs(),
                    rejected,
                    p.stream_time(),
                    p.store_metrics(),
                    p.held(),
                )
            })?;
            let d = PyDict::new(py);
            for (name, value) in counters {
                d.set_item(name, value)?;
            }
            let mut total = 0;
            for (reason, n) in rejected {
                total += n;
                d.set_item(format!("rejected_{}", reason.as_str()), n)?;
            }
            d.set_item("rejected", total)?;
            d.set_item("stream_time", stream_time)?;
            if let Some((rows, bytes)) = held {
                d.set_item("held_rows", rows)?;
                d.set_item("held_bytes", bytes)?;
            }
            if let Some(m) = store {
                for (name, value) in m.pairs() {
                    d.set_item(format!("store_{name}"), value)?;
                }
            }
            Ok(d)
        })
    }

    /// Writes the whole state to `path` atomically.
    fn snapshot(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        guard(|| self.with(py, |p| p.snapshot(&path))?.py())
    }

    /// Restores a processor from a snapshot file; `kind` (a tag) refuses any other kind.
    #[staticmethod]
    #[pyo3(signature = (path, kind=None))]
    fn restore(py: Python<'_>, path: PathBuf, kind: Option<String>) -> PyResult<Self> {
        guard(|| {
            let bytes = std::fs::read(&path).map_err(|e| {
                crate::errors::to_py(windowstore_core::Error::snapshot(
                    &path,
                    format!("cannot read: {e}"),
                ))
            })?;
            let inner = py
                .detach(|| restore_any(&bytes, Some(&path), kind.as_deref()))
                .py()?;
            Ok(Self::new(inner))
        })
    }

    /// The whole state as bytes (what `snapshot` writes to a file).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        guard(|| {
            let bytes = self.with(py, |p| p.to_bytes())?.py()?;
            Ok(PyBytes::new(py, &bytes))
        })
    }

    /// Restores a processor from `to_bytes`; `kind` (a tag) refuses any other kind.
    #[staticmethod]
    #[pyo3(signature = (data, kind=None))]
    fn from_bytes(py: Python<'_>, data: &[u8], kind: Option<String>) -> PyResult<Self> {
        guard(|| {
            let inner = py
                .detach(|| restore_any(data, None, kind.as_deref()))
                .py()?;
            Ok(Self::new(inner))
        })
    }

    /// Advances stream time to `t` (ticks of the time column) at the wall clock's reading
    /// `now`; returns what that emits.
    #[pyo3(signature = (t, now=None, then=None))]
    fn advance<'py>(
        &self,
        py: Python<'py>,
        t: i64,
        now: Option<i64>,
        then: Option<Py<PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(|| self.emitting(py, then, |p, hook| p.advance(t, now, hook)))
    }

    /// Closes what the wall clock closes at reading `now` without a record; returns what that
    /// emits, or None.
    #[pyo3(signature = (now=None, then=None))]
    fn poll<'py>(
        &self,
        py: Python<'py>,
        now: Option<i64>,
        then: Option<Py<PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(|| self.emitting(py, then, |p, hook| p.poll(now, hook)))
    }

    /// Says who drives the processor (a streaming query's run), keeping a restored idle mark
    /// written by the same run.
    #[pyo3(signature = (run))]
    fn resume_idle(&self, py: Python<'_>, run: Option<String>) -> PyResult<()> {
        self.with(py, |p| p.resume_idle(run.as_deref()))
    }

    /// The open windows (see the core's `Processor::windows`) of the keys `keys` (a batch of
    /// the key columns: one row for one key, first and last row for a range; None: every
    /// key), ending at or after `earliest_end` and starting at or before `latest_start`
    /// (ticks); None before the first batch. Changes nothing.
    #[pyo3(signature = (keys=None, earliest_end=None, latest_start=None))]
    fn windows<'py>(
        &self,
        py: Python<'py>,
        keys: Option<PyRecordBatch>,
        earliest_end: Option<i64>,
        latest_start: Option<i64>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(|| {
            let query = WindowQuery {
                keys: keys.map(PyRecordBatch::into_inner),
                earliest_end,
                latest_start,
            };
            maybe_table(py, self.with(py, |p| p.windows(&query))?.py()?)
        })
    }

    /// The key columns' schema (what `windows` reads keys as), or None before the first batch.
    fn key_schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(|| {
            self.with(py, |p| p.key_schema())?
                .map(|schema| PySchema::new(schema).into_pyarrow(py))
                .transpose()
        })
    }

    /// The output schema (tagged rows in records mode), or None before the first batch.
    fn output_schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(|| {
            self.with(py, |p| p.output_schema())?
                .map(|schema| PySchema::new(schema).into_pyarrow(py))
                .transpose()
        })
    }

    /// The earliest stream time at which a window not emitted yet closes (`final`).
    fn next_close(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |p| p.next_close())
    }

    /// For tests and comparisons: lets calls take the batched path where it applies (the
    /// default), or keeps every call record by record (the model; the same results).
    fn _set_batched(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.with(py, |p| p.set_batched(on))
    }

    /// Calls that took the batched path since the processor was made or restored.
    fn _batched_calls(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |p| p.batched_calls())
    }
}

/// A Python callable run on a call's output inside the call's transaction (the core's
/// `Then`), and what it returned. It is called with the output as a pyarrow Table while the
/// processor's lock is held, so it must not call the same processor; if it raises, the call
/// rolls back and the exception reaches the caller untouched.
struct Then {
    f: Option<Py<PyAny>>,
    result: Option<Py<PyAny>>,
}

impl Then {
    fn new(f: Option<Py<PyAny>>) -> Self {
        Self { f, result: None }
    }

    /// The core hook: calls the callable (if any) with the GIL, keeping its result.
    fn hook(&mut self) -> impl FnMut(&RecordBatch) -> windowstore_core::Result<()> + Send + '_ {
        move |batch: &RecordBatch| {
            let Some(f) = &self.f else {
                return Ok(());
            };
            Python::attach(|py| {
                let out = batch_table(py, batch.clone())?;
                self.result = Some(f.call1(py, (out,))?);
                Ok(())
            })
            .map_err(|e: PyErr| windowstore_core::Error::Callback(Box::new(e)))
        }
    }

    /// What the callable returned, if it ran.
    fn take<'py>(&mut self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.result.take().map(|r| r.into_bound(py))
    }

    /// What the callable returned, else `batch` as a table, else None.
    fn or_table<'py>(
        &mut self,
        py: Python<'py>,
        batch: Option<RecordBatch>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.take(py) {
            Some(done) => Ok(Some(done)),
            None => maybe_table(py, batch),
        }
    }
}

/// `batch` as a pyarrow Table, or None.
fn maybe_table(py: Python<'_>, batch: Option<RecordBatch>) -> PyResult<Option<Bound<'_, PyAny>>> {
    batch.map(|b| batch_table(py, b)).transpose()
}
