//! `windowstore._core.SessionStore`: the segmented session store, converted to Python types.
//!
//! One store may be shared by threads. The class is `frozen` (no PyO3 borrow flag, so no
//! "Already borrowed") and keeps the store behind an `RwLock`: reads share it, writes take it
//! alone. Two rules make that deadlock-free:
//!
//! 1. the lock is never waited for with the GIL held: a call waits for it inside `py.detach`
//!    (a short call first tries it once with the GIL held, which never waits: see [`Hold`]),
//!    so a thread holding the GIL never waits on a thread that holds the lock;
//! 2. nothing Python runs while the lock is held, so a thread holding the lock never waits for
//!    the GIL: the closure given to [`PySessionStore::read`] or [`PySessionStore::write`] is
//!    plain Rust that copies what it needs into owned values, and Python objects are built
//!    after the lock is released. (Building them under the lock could also run a finalizer
//!    that calls this same store on this same thread: a self-deadlock.)
//!
//! A panic while the write lock is held poisons it: the store may be half-changed, so every
//! later call raises `InternalError` (restore it from a snapshot). A panic under a read lock
//! changes nothing and does not poison.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, LockResult, RwLock, TryLockError, TryLockResult};

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use pyo3_arrow::PyTable;
use windowstore_core::store::session_store::PutOutcome;
use windowstore_core::store::snapshot_format;
use windowstore_core::{Error, KeyedSession, Session, SessionStore};

use crate::errors::{to_py, IntoPyResult};
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

/// An integer argument as `i64`, or `Err(negative)` for an int beyond 64 bits; anything but an
/// integer is a `TypeError` naming `parameter`.
fn to_i64(value: &Bound<'_, PyAny>, parameter: &str) -> PyResult<Result<i64, bool>> {
    match value.extract::<i64>() {
        Ok(v) => Ok(Ok(v)),
        Err(e) if e.is_instance_of::<PyOverflowError>(value.py()) => Ok(Err(value.lt(0)?)),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{parameter} must be an int, not {}",
            value.get_type().name()?
        ))),
    }
}

/// A parameter or session bound that must fit 64 bits; beyond them, `InvalidWindowSpec` naming
/// it (not a bare `OverflowError`).
fn exact_i64(value: &Bound<'_, PyAny>, parameter: &'static str) -> PyResult<i64> {
    to_i64(value, parameter)?.map_err(|_| {
        to_py(Error::invalid(
            parameter,
            format!("{value} does not fit 64-bit ticks"),
        ))
    })
}

/// A session's `start` and `end` arguments (see [`exact_i64`]).
fn span(start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<(i64, i64)> {
    Ok((exact_i64(start, "start")?, exact_i64(end, "end")?))
}

/// A lookup bound: beyond 64 bits it is clamped, which selects the same sessions (every
/// session lies within them).
fn bound_i64(value: &Bound<'_, PyAny>, parameter: &str) -> PyResult<i64> {
    Ok(to_i64(value, parameter)?
        .unwrap_or_else(|negative| if negative { i64::MIN } else { i64::MAX }))
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
    sessions.iter().map(KeyedSession::to_owned_parts).collect()
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

/// How long a call holds the lock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// One key's lookup or update, well under a microsecond: the lock is tried once with the
    /// GIL held (`try_*` never waits), which saves releasing and taking back the GIL; only if
    /// it is taken does the call wait for it, with the GIL released.
    Short,
    /// A scan, a snapshot: the GIL is released for the whole call, so that other Python
    /// threads run meanwhile.
    Long,
}

impl PySessionStore {
    /// Runs `f` under the shared lock (see the module docs for the rules).
    fn read<T: Send>(
        &self,
        py: Python<'_>,
        hold: Hold,
        f: impl FnOnce(&SessionStore) -> windowstore_core::Result<T> + Send,
    ) -> PyResult<T> {
        let now = (hold == Hold::Short).then(|| self.inner.try_read());
        locked(py, now, || self.inner.read(), |store| f(&store))
    }

    /// Runs `f` under the exclusive lock (see the module docs for the rules).
    fn write<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut SessionStore) -> windowstore_core::Result<T> + Send,
    ) -> PyResult<T> {
        // Every write is short: one put or remove.
        let now = Some(self.inner.try_write());
        locked(py, now, || self.inner.write(), |mut store| f(&mut store))
    }

    /// The sessions of every key that `f` finds (a scan), as a list of (key, start, end, value).
    fn keyed<'py>(
        &self,
        py: Python<'py>,
        f: impl FnOnce(&SessionStore) -> Vec<KeyedSession<'_>> + Send,
    ) -> PyResult<Bound<'py, PyList>> {
        let found = self.read(py, Hold::Long, |s| Ok(owned_keyed(f(s))))?;
        keyed_list(py, found)
    }

    /// The sessions of `key` within the bounds, in the store's order or, `backward`, reversed.
    fn find<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        earliest_end: &Bound<'_, PyAny>,
        latest_start: &Bound<'_, PyAny>,
        backward: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let (earliest_end, latest_start) = (
                bound_i64(earliest_end, "earliest_end")?,
                bound_i64(latest_start, "latest_start")?,
            );
            let key = key_bytes(key)?;
            let found = self.read(py, Hold::Short, |s| {
                Ok(if backward {
                    owned(s.backward_find_sessions(&key, earliest_end, latest_start))
                } else {
                    owned(s.find_sessions(&key, earliest_end, latest_start))
                })
            })?;
            session_list(py, found)
        })
    }
}

/// Runs `f` on a guard of the store's lock: the one `now` got without waiting if it got one
/// (with the GIL held), else the one `wait` waits for with the GIL released. `now` is `None`
/// for a long call, which waits with the GIL released from the start.
fn locked<G, T: Send>(
    py: Python<'_>,
    now: Option<TryLockResult<G>>,
    wait: impl FnOnce() -> LockResult<G> + Send,
    f: impl FnOnce(G) -> windowstore_core::Result<T> + Send,
) -> PyResult<T> {
    match now {
        Some(Ok(store)) => return f(store).py(),
        Some(Err(TryLockError::Poisoned(_))) => return Err(poisoned()).py(),
        Some(Err(TryLockError::WouldBlock)) | None => {}
    }
    py.detach(|| f(wait().map_err(|_| poisoned())?)).py()
}

#[pymethods]
impl PySessionStore {
    #[new]
    #[pyo3(signature = (retention, segment_interval=None))]
    fn new(
        retention: &Bound<'_, PyAny>,
        segment_interval: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        guard(|| {
            let retention = exact_i64(retention, "retention")?;
            let interval = segment_interval
                .map(|i| exact_i64(i, "segment_interval"))
                .transpose()?;
            Ok(Self {
                inner: RwLock::new(SessionStore::new(retention, interval).py()?),
            })
        })
    }

    #[getter]
    fn retention(&self, py: Python<'_>) -> PyResult<i64> {
        guard(|| self.read(py, Hold::Short, |s| Ok(s.retention())))
    }

    #[getter]
    fn segment_interval(&self, py: Python<'_>) -> PyResult<i64> {
        guard(|| self.read(py, Hold::Short, |s| Ok(s.segment_interval())))
    }

    #[getter]
    fn store_time(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        guard(|| self.read(py, Hold::Short, |s| Ok(s.store_time())))
    }

    /// Stores `value` for the session; returns "inserted", "updated" or "expired".
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        value: &[u8],
    ) -> PyResult<&'static str> {
        guard(|| {
            let (start, end) = span(start, end)?;
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
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        guard(|| {
            let (start, end) = span(start, end)?;
            let key = key_bytes(key)?;
            self.write(py, |s| Ok(s.remove(&key, start, end)))
        })
    }

    fn fetch_session<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        guard(|| {
            let (start, end) = span(start, end)?;
            let key = key_bytes(key)?;
            let found = self.read(py, Hold::Short, |s| {
                Ok(s.fetch_session(&key, start, end).map(<[u8]>::to_vec))
            })?;
            Ok(found.map(|v| PyBytes::new(py, &v)))
        })
    }

    fn find_sessions<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        earliest_end: &Bound<'_, PyAny>,
        latest_start: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.find(py, key, earliest_end, latest_start, false)
    }

    fn backward_find_sessions<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        earliest_end: &Bound<'_, PyAny>,
        latest_start: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.find(py, key, earliest_end, latest_start, true)
    }

    fn fetch<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let key = key_bytes(key)?;
            let found = self.read(py, Hold::Short, |s| Ok(owned(s.fetch(&key))))?;
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
            self.keyed(py, |s| s.fetch_range(&from, &to))
        })
    }

    fn find_sessions_by_end<'py>(
        &self,
        py: Python<'py>,
        earliest_end: &Bound<'_, PyAny>,
        latest_end: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let (earliest_end, latest_end) = (
                bound_i64(earliest_end, "earliest_end")?,
                bound_i64(latest_end, "latest_end")?,
            );
            self.keyed(py, |s| s.find_sessions_by_end(earliest_end, latest_end))
        })
    }

    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let (pairs, store_time) = self.read(py, Hold::Short, |s| {
                Ok((s.metrics().pairs(), s.store_time()))
            })?;
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
            let batches = self.read(py, Hold::Long, snapshot_format::entries_batches)?;
            PyTable::try_new(batches, Arc::new(snapshot_format::entries_schema()))?.into_pyarrow(py)
        })
    }

    fn snapshot(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        guard(|| self.read(py, Hold::Long, |s| s.snapshot(&path)))
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
            self.read(py, Hold::Short, |s| {
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
