//! The `windowstore._core` extension module: converts types and maps errors, nothing else.

mod convert;
mod errors;
mod sessions;
mod store;

use pyo3::prelude::*;

/// Compiled core of windowstore.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<store::PySessionStore>()?;
    m.add_class::<sessions::PySessionProcessor>()?;
    m.add_function(wrap_pyfunction!(sessions::session_windows, m)?)?;
    Ok(())
}
