//! The panic boundary: no Rust panic reaches Python as `pyo3_runtime.PanicException` (a
//! `BaseException` that `except Exception` does not catch); it becomes `InternalError`.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::PyResult;

/// Runs `body`, the whole of an entry point, and turns a panic inside it into
/// `windowstore.InternalError` (a `WindowStoreError`) with the panic message and a request to
/// report it. Wrap every `#[pyfunction]` and `#[pymethods]` body:
/// `fn f(..) -> PyResult<T> { guard(|| { .. }) }`. A panic inside `py.detach` is caught too:
/// `detach` takes the GIL back before the unwind reaches this frame.
///
/// `AssertUnwindSafe` is sound only where a panic cannot leave state that outlives the call
/// half-changed and still in use. Function-local data is dropped by the unwind; state behind a
/// lock written during the panic is poisoned, and the caller refuses further calls on a
/// poisoned lock (see `store.rs`). A `&mut self` method must do likewise (or commit last, so
/// that the state it would leave is never half-written) before it relies on this guard.
pub(crate) fn guard<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(crate::errors::internal(format!(
            "internal error (a bug in windowstore, please report it): the Rust core panicked: {}",
            panic_message(payload.as_ref())
        )))
    })
}

/// The message of a panic payload (`panic!` gives a `&str` or a `String`).
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic without a message)")
}

/// `windowstore._core._panic(message)`: panics with `message` under [`guard`]. It exists for the
/// tests of the boundary alone (no entry point panics on purpose) and is not public API.
#[pyo3::pyfunction]
#[pyo3(name = "_panic")]
pub(crate) fn panic_for_tests(message: String) -> PyResult<()> {
    guard(|| panic!("{message}"))
}
