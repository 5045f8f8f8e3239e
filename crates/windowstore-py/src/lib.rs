//! The `windowstore._core` extension module: converts types and maps errors, nothing else.

#![deny(rustdoc::broken_intra_doc_links)]

mod convert;
mod errors;
mod guard;
mod partial;
mod processor;
mod sessions;
mod sliding;
mod store;

use pyo3::prelude::*;

/// mimalloc keeps freed pages for reuse: per-batch buffers (encoded keys, row vectors) then
/// cost no page faults on every batch, as they do with the system allocator's mmap/munmap of
/// large blocks. It serves only this module's Rust allocations.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Compiled core of windowstore.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<store::PySessionStore>()?;
    m.add_class::<processor::PyProcessor>()?;
    m.add_function(wrap_pyfunction!(sessions::session_windows, m)?)?;
    m.add_function(wrap_pyfunction!(partial::session_partials, m)?)?;
    m.add_function(wrap_pyfunction!(partial::merge_session_partials, m)?)?;
    m.add_function(wrap_pyfunction!(sliding::sliding_windows, m)?)?;
    m.add_function(wrap_pyfunction!(sessions::check_session_durations, m)?)?;
    m.add_function(wrap_pyfunction!(sliding::check_sliding_durations, m)?)?;
    m.add_function(wrap_pyfunction!(sessions::check_output, m)?)?;
    m.add_function(wrap_pyfunction!(guard::panic_for_tests, m)?)?;
    // Records mode's column names, which the Python layer checks inputs against.
    m.add("RECORDS_ROW", windowstore_core::processor::ROW)?;
    m.add("RECORDS_LAST", windowstore_core::processor::LAST)?;
    m.add(
        "SESSION_COLUMNS",
        pyo3::types::PyTuple::new(m.py(), windowstore_core::processor::TAGS)?,
    )?;
    Ok(())
}
