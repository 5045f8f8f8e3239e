//! `windowstore._core.SessionStore`: the segmented session store, converted to Python types.
//!
//! One store may be shared by threads. The class is `frozen` (no PyO3 borrow flag, so no
//! "Already borrowed") and keeps the store behind an `RwLock`: reads share it, writes take it
//! alone. Two rules make that deadlock-free:
//!
//! 1. the lock is only waited for with the GIL released (inside `py.detach`), so a thread
//!    holding the GIL never waits on a thread that holds the lock and needs the GIL;
//! 2. nothing Python runs while the lock is held: the closure given to [`PySessionStore::read`]
//!    or [`PySessionStore::write`] copies what it needs into owned Rust values, and Python
//!    objects are built after the lock is released. (Building them under the lock could run a
//!    finalizer that calls this same store on this same thread: a self-deadlock.)
//!
//! A panic while the write lock is held poisons it: the store may be half-changed, so every
//! later call raises `InternalError` (restore it from a snapshot). A panic under a read lock
//! changes nothing and does not poison.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use pyo3_arrow::PyTable;
use windowstore_core::store::session_store::PutOutcome;
use windowstore_core::store::snapshot;
use windowstore_core::{Error, KeyedSession, Session, SessionStore};

use crate::errors::IntoPyResult;
use crate::guard::guard;

/// A segmented store of session aggregates keyed by (key, end, start).
///
/// Safe to share between threads: calls are serialized by a read-write lock (reads proceed
/// together, a write waits for them and runs alone), waited for with the GIL released.
#[pyclass(name = "SessionStore", module = "windowstore._core", frozen)]
pub struct PySessionStore {
    inner: RwLock<SessionStore>,
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

/// A session copied out of the store: (start, end, value).
type OwnedSession = (i64, i64, Vec<u8>);
/// A session of some key copied out of the store: (key, start, end, value).
type OwnedKeyedSession = (Vec<u8>, i64, i64, Vec<u8>);

fn owned<'a>(sessions: impl Iterator<Item = Session<'a>>) -> Vec<OwnedSession> {
    sessions
        .map(|s| (s.start, s.end, s.value.to_vec()))
        .collect()
}

fn owned_keyed(sessions: Vec<KeyedSession<'_>>) -> Vec<OwnedKeyedSession> {
    sessions
        .into_iter()
        .map(|k| {
            (
                k.key.to_vec(),
                k.session.start,
                k.session.end,
                k.session.value.to_vec(),
            )
        })
        .collect()
}

fn session_list(py: Python<'_>, sessions: Vec<OwnedSession>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(
        py,
        sessions
            .iter()
            .map(|(start, end, value)| (*start, *end, PyBytes::new(py, value))),
    )
}

fn keyed_list(py: Python<'_>, sessions: Vec<OwnedKeyedSession>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(
        py,
        sessions.iter().map(|(key, start, end, value)| {
            (PyBytes::new(py, key), *start, *end, PyBytes::new(py, value))
        }),
    )
}

/// The error of a call on a store whose write lock a panic poisoned.
fn poisoned() -> Error {
    Error::Internal(
        "an earlier call panicked while changing this SessionStore, which may be half-changed; \
         it refuses every call (restore it from a snapshot)"
            .into(),
    )
}

impl PySessionStore {
    /// Runs `f` under the shared lock, waited for and held with the GIL released.
    fn read<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&SessionStore) -> windowstore_core::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(&*self.inner.read().map_err(|_| poisoned())?))
            .py()
    }

    /// Runs `f` under the exclusive lock, waited for and held with the GIL released.
    fn write<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut SessionStore) -> windowstore_core::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(&mut *self.inner.write().map_err(|_| poisoned())?))
            .py()
    }
}

#[pymethods]
impl PySessionStore {
    #[new]
    #[pyo3(signature = (retention, segment_interval=None))]
    fn new(retention: i64, segment_interval: Option<i64>) -> PyResult<Self> {
        guard(|| {
            Ok(Self {
                inner: RwLock::new(SessionStore::new(retention, segment_interval).py()?),
            })
        })
    }

    #[getter]
    fn retention(&self, py: Python<'_>) -> PyResult<i64> {
        guard(|| self.read(py, |s| Ok(s.retention())))
    }

    #[getter]
    fn segment_interval(&self, py: Python<'_>) -> PyResult<i64> {
        guard(|| self.read(py, |s| Ok(s.segment_interval())))
    }

    #[getter]
    fn store_time(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        guard(|| self.read(py, |s| Ok(s.store_time())))
    }

    /// Stores `value` for the session; returns "inserted", "updated" or "expired".
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        start: i64,
        end: i64,
        value: &[u8],
    ) -> PyResult<&'static str> {
        guard(|| {
            let key = key_bytes(key)?;
            let outcome = self.write(py, |s| s.put(&key, start, end, value))?;
            Ok(match outcome {
                PutOutcome::Inserted => "inserted",
                PutOutcome::Updated => "updated",
                PutOutcome::Expired => "expired",
            })
        })
    }

    fn remove(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        start: i64,
        end: i64,
    ) -> PyResult<bool> {
        guard(|| {
            let key = key_bytes(key)?;
            self.write(py, |s| Ok(s.remove(&key, start, end)))
        })
    }

    fn fetch_session<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        start: i64,
        end: i64,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        guard(|| {
            let key = key_bytes(key)?;
            let found = self.read(py, |s| {
                Ok(s.fetch_session(&key, start, end).map(<[u8]>::to_vec))
            })?;
            Ok(found.map(|v| PyBytes::new(py, &v)))
        })
    }

    fn find_sessions<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        earliest_end: i64,
        latest_start: i64,
    ) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let key = key_bytes(key)?;
            let found = self.read(py, |s| {
                Ok(owned(s.find_sessions(&key, earliest_end, latest_start)))
            })?;
            session_list(py, found)
        })
    }

    fn backward_find_sessions<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        earliest_end: i64,
        latest_start: i64,
    ) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let key = key_bytes(key)?;
            let found = self.read(py, |s| {
                Ok(owned(s.backward_find_sessions(
                    &key,
                    earliest_end,
                    latest_start,
                )))
            })?;
            session_list(py, found)
        })
    }

    fn fetch<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let key = key_bytes(key)?;
            let found = self.read(py, |s| Ok(owned(s.fetch(&key))))?;
            session_list(py, found)
        })
    }

    fn fetch_range<'py>(
        &self,
        py: Python<'py>,
        key_from: &Bound<'py, PyAny>,
        key_to: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let (from, to) = (key_bytes(key_from)?, key_bytes(key_to)?);
            let found = self.read(py, |s| Ok(owned_keyed(s.fetch_range(&from, &to))))?;
            keyed_list(py, found)
        })
    }

    fn find_sessions_by_end<'py>(
        &self,
        py: Python<'py>,
        earliest_end: i64,
        latest_end: i64,
    ) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let found = self.read(py, |s| {
                Ok(owned_keyed(
                    s.find_sessions_by_end(earliest_end, latest_end),
                ))
            })?;
            keyed_list(py, found)
        })
    }

    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let (pairs, store_time) =
                self.read(py, |s| Ok((s.metrics().pairs(), s.store_time())))?;
            let dict = PyDict::new(py);
            for (name, value) in pairs {
                dict.set_item(name, value)?;
            }
            dict.set_item("store_time", store_time)?;
            Ok(dict)
        })
    }

    /// Every live session as a pyarrow Table (key, start, end, value), by key, end, start.
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let batches = self.read(py, snapshot::entries_batches)?;
            PyTable::try_new(batches, Arc::new(snapshot::entries_schema()))?.into_pyarrow(py)
        })
    }

    fn snapshot(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        guard(|| self.read(py, |s| s.snapshot(&path)))
    }

    #[staticmethod]
    fn restore(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        guard(|| {
            let inner = py.detach(|| SessionStore::restore(&path)).py()?;
            Ok(Self {
                inner: RwLock::new(inner),
            })
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            self.read(py, |s| {
                let m = s.metrics();
                Ok(format!(
                    "SessionStore(retention={}, segment_interval={}, store_time={}, \
                     live_sessions={}, segments={})",
                    s.retention(),
                    s.segment_interval(),
                    s.store_time().map_or("None".to_string(), |t| t.to_string()),
                    m.live_sessions,
                    m.segments
                ))
            })
        })
    }
}
