//! Session windows (SEMANTICS.md section 2): fixed or dynamic gaps, grace, emit modes.
//!
//! - [`spec`]: the parameters and their checks;
//! - [`processor`]: the streaming processor over the session store, record by record;
//! - [`complete`]: the fast path for bounded input (sort by key and time, one pass);
//! - [`partial`]: map-side partial sessions of a part of the input, and their merge.

pub mod complete;
pub mod partial;
pub mod processor;
mod record;
mod snapshot_meta;
pub mod spec;

pub use complete::session_windows;
pub use processor::SessionProcessor;
pub use spec::{GapSpec, SessionSpec};
