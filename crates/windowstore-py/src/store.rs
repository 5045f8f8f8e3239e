//! `windowstore._core.SessionStore`: the segmented session store, converted to Python types.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use pyo3_arrow::PyTable;
use windowstore_core::store::snapshot;
use windowstore_core::{KeyedSession, Session, SessionStore};

use crate::errors::IntoPyResult;

/// A segmented store of session aggregates keyed by (key, end, start).
///
/// Single-key calls keep the GIL (they take well under a microsecond); scans, snapshots and
/// restores release it while they work.
#[pyclass(name = "SessionStore", module = "windowstore._core")]
pub struct PySessionStore {
    inner: SessionStore,
}

/// A key argument: `bytes` as is, `str` as UTF-8.
fn key_bytes<'a>(key: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = key.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(s) = key.cast::<PyString>() {
        return Ok(Cow::Owned(s.to_cow()?.as_bytes().to_vec()));
    }
    Err(PyTypeError::new_err(format!(
        "key must be bytes or str, not {}",
        key.get_type().name()?
    )))
}

fn session_list<'py>(
    py: Python<'py>,
    sessions: impl Iterator<Item = Session<'py>>,
) -> PyResult<Bound<'py, PyList>> {
    PyList::new(
        py,
        sessions.map(|s| (s.start, s.end, PyBytes::new(py, s.value))),
    )
}

fn keyed_list<'py>(py: Python<'py>, sessions: &[KeyedSession<'_>]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(
        py,
        sessions.iter().map(|k| {
            (
                PyBytes::new(py, k.key),
                k.session.start,
                k.session.end,
                PyBytes::new(py, k.session.value),
            )
        }),
    )
}

#[pymethods]
impl PySessionStore {
    #[new]
    #[pyo3(signature = (retention, segment_interval=None))]
    fn new(retention: i64, segment_interval: Option<i64>) -> PyResult<Self> {
        Ok(Self {
            inner: SessionStore::new(retention, segment_interval).py()?,
        })
    }

    #[getter]
    fn retention(&self) -> i64 {
        self.inner.retention()
    }

    #[getter]
    fn segment_interval(&self) -> i64 {
        self.inner.segment_interval()
    }

    #[getter]
    fn store_time(&self) -> Option<i64> {
        self.inner.store_time()
    }

    /// Stores `value` for the session; returns "inserted", "updated" or "expired".
    fn put(
        &mut self,
        key: &Bound<'_, PyAny>,
        start: i64,
        end: i64,
        value: &[u8],
    ) -> PyResult<&'static str> {
        use windowstore_core::store::session_store::PutOutcome;
        Ok(
            match self.inner.put(&key_bytes(key)?, start, end, value).py()? {
                PutOutcome::Inserted => "inserted",
                PutOutcome::Updated => "updated",
                PutOutcome::Expired => "expired",
            },
        )
    }

    fn remove(&mut self, key: &Bound<'_, PyAny>, start: i64, end: i64) -> PyResult<bool> {
        Ok(self.inner.remove(&key_bytes(key)?, start, end))
    }

    fn fetch_session<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        start: i64,
        end: i64,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = key_bytes(key)?;
        Ok(self
            .inner
            .fetch_session(&key, start, end)
            .map(|v| PyBytes::new(py, v)))
    }

    fn find_sessions<'py>(
        &'py self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        earliest_end: i64,
        latest_start: i64,
    ) -> PyResult<Bound<'py, PyList>> {
        let key = key_bytes(key)?;
        session_list(
            py,
            self.inner.find_sessions(&key, earliest_end, latest_start),
        )
    }

    fn backward_find_sessions<'py>(
        &'py self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        earliest_end: i64,
        latest_start: i64,
    ) -> PyResult<Bound<'py, PyList>> {
        let key = key_bytes(key)?;
        session_list(
            py,
            self.inner
                .backward_find_sessions(&key, earliest_end, latest_start),
        )
    }

    fn fetch<'py>(
        &'py self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let key = key_bytes(key)?;
        session_list(py, self.inner.fetch(&key))
    }

    fn fetch_range<'py>(
        &'py self,
        py: Python<'py>,
        key_from: &Bound<'py, PyAny>,
        key_to: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (from, to) = (key_bytes(key_from)?, key_bytes(key_to)?);
        let inner = &self.inner;
        let found = py.detach(|| inner.fetch_range(&from, &to));
        keyed_list(py, &found)
    }

    fn find_sessions_by_end<'py>(
        &'py self,
        py: Python<'py>,
        earliest_end: i64,
        latest_end: i64,
    ) -> PyResult<Bound<'py, PyList>> {
        let inner = &self.inner;
        let found = py.detach(|| inner.find_sessions_by_end(earliest_end, latest_end));
        keyed_list(py, &found)
    }

    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, value) in self.inner.metrics().pairs() {
            dict.set_item(name, value)?;
        }
        dict.set_item("store_time", self.inner.store_time())?;
        Ok(dict)
    }

    /// Every live session as a pyarrow Table (key, start, end, value), by key, end, start.
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = &self.inner;
        let batches = py.detach(|| snapshot::entries_batches(inner)).py()?;
        PyTable::try_new(batches, Arc::new(snapshot::entries_schema()))?.into_pyarrow(py)
    }

    fn snapshot(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let inner = &self.inner;
        py.detach(|| inner.snapshot(&path)).py()
    }

    #[staticmethod]
    fn restore(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let inner = py.detach(|| SessionStore::restore(&path)).py()?;
        Ok(Self { inner })
    }

    fn __repr__(&self) -> String {
        let m = self.inner.metrics();
        format!(
            "SessionStore(retention={}, segment_interval={}, store_time={}, live_sessions={}, segments={})",
            self.inner.retention(),
            self.inner.segment_interval(),
            self.inner.store_time().map_or("None".to_string(), |t| t.to_string()),
            m.live_sessions,
            m.segments
        )
    }
}
