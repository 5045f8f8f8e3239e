//! Maps each windowstore-core error to its Python exception, on purpose, one arm per variant.
//!
//! The exception classes are defined in `windowstore/exceptions.py` (so that `InvalidWindowSpec`
//! can subclass both `WindowStoreError` and `ValueError`) and imported lazily here.

use pyo3::prelude::*;
use windowstore_core::Error;

mod py {
    pyo3::import_exception!(windowstore.exceptions, WindowStoreError);
    pyo3::import_exception!(windowstore.exceptions, InvalidWindowSpec);
    pyo3::import_exception!(windowstore.exceptions, SnapshotError);
    pyo3::import_exception!(windowstore.exceptions, StoreCapacityError);
    pyo3::import_exception!(windowstore.exceptions, SchemaError);
    pyo3::import_exception!(windowstore.exceptions, SessionOverflowError);
    pyo3::import_exception!(windowstore.exceptions, AggregateOverflowError);
    pyo3::import_exception!(windowstore.exceptions, InvalidRecordError);
    pyo3::import_exception!(windowstore.exceptions, BatchTooLargeError);
    pyo3::import_exception!(windowstore.exceptions, ArrowError);
    pyo3::import_exception!(windowstore.exceptions, InternalError);
    pyo3::import_exception!(windowstore.exceptions, ProcessorClosedError);
}

/// Converts a core error into the matching Python exception.
///
/// | core variant        | Python exception                               |
/// |---------------------|------------------------------------------------|
/// | `InvalidWindowSpec` | `InvalidWindowSpec` (a `ValueError`)           |
/// | `Schema`            | `SchemaError` (a `ValueError`)                 |
/// | `InvalidRecord`     | `InvalidRecordError` (a `ValueError`)          |
/// | `CollectOverflow`   | `SessionOverflowError`                         |
/// | `AggregateOverflow` | `AggregateOverflowError` (an `ArithmeticError`)|
/// | `ProcessorClosed`   | `ProcessorClosedError`                         |
/// | `Snapshot`          | `SnapshotError`                                |
/// | `Capacity`          | `StoreCapacityError`                           |
/// | `BatchTooLarge`     | `BatchTooLargeError`                           |
/// | `Arrow`             | `ArrowError`                                   |
/// | `Internal`          | `InternalError` (as a panic, see `guard`)      |
/// | `Callback`          | the caller's own exception, untouched          |
/// | a later variant     | `WindowStoreError`                             |
pub fn to_py(err: Error) -> PyErr {
    let message = err.to_string();
    match err {
        Error::InvalidWindowSpec { parameter, .. } => {
            py::InvalidWindowSpec::new_err((message, parameter))
        }
        Error::ProcessorClosed { method } => py::ProcessorClosedError::new_err((message, method)),
        Error::Snapshot { path, .. } => {
            py::SnapshotError::new_err((message, path.to_string_lossy().into_owned()))
        }
        Error::Capacity(_) => py::StoreCapacityError::new_err(message),
        Error::BatchTooLarge(_) => py::BatchTooLargeError::new_err(message),
        Error::Arrow { context, .. } => py::ArrowError::new_err((message, context)),
        Error::Internal(_) => py::InternalError::new_err(message),
        Error::Callback(cause) => match cause.downcast::<PyErr>() {
            Ok(raised) => *raised,
            Err(other) => py::WindowStoreError::new_err(other.to_string()),
        },
        Error::Schema { column, .. } => py::SchemaError::new_err((message, column)),
        Error::CollectOverflow {
            key, start, end, ..
        } => py::SessionOverflowError::new_err((message, key, start, end)),
        Error::AggregateOverflow {
            aggregate,
            column,
            key,
            start,
            end,
            ..
        } => {
            // An empty key: the failing layer did not know the window.
            let window = (!key.is_empty()).then_some((key, start, end));
            let (key, start, end) = match window {
                Some((k, s, e)) => (Some(k), Some(s), Some(e)),
                None => (None, None, None),
            };
            py::AggregateOverflowError::new_err((message, aggregate, column, key, start, end))
        }
        Error::InvalidRecord { row, reason } => {
            py::InvalidRecordError::new_err((message, row, reason))
        }
        // A variant added to the core later still reaches Python under the common base.
        _ => py::WindowStoreError::new_err(message),
    }
}

/// An `InternalError` with `message`: for panics caught at the boundary (see `guard`).
pub(crate) fn internal(message: String) -> PyErr {
    py::InternalError::new_err(message)
}

/// `Result<T, core::Error>` into `PyResult<T>`.
pub trait IntoPyResult<T> {
    /// Maps the error with [`to_py`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for windowstore_core::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
