//! Session windows (docs/semantics.md section 2): fixed or dynamic gaps, grace, emit modes.
//!
//! - [`spec`]: the parameters and their checks;
//! - [`kind`]: sessions as a window kind of the streaming processor;
//! - `rule`: the session rule, what a record does to its key's sessions, applied to one record
//!   (the processor's record path) or to a key's records of a call (its batched path);
//! - `record_checks`: the rules that make a record usable, shared by the processor and complete
//!   mode;
//! - `cuts`: the rule that cuts a key's records into sessions (gap, markers, maximum duration);
//! - [`capped`]: sessions with a maximum duration or marker columns, record by record, re-cutting
//!   open sessions;
//! - [`complete`]: complete mode, the sessions of bounded input (sort by key and time, one pass);
//! - [`partial`]: map-side partial sessions of a part of the input, and their merge.

pub mod capped;
pub mod complete;
mod cuts;
pub mod kind;
pub mod partial;
mod record_checks;
mod rule;
pub mod spec;

pub use capped::{CappedCounters, CappedSessionSpec};
pub use complete::{session_records, session_windows};
pub use kind::{SessionCounters, SessionProcessor};
pub use spec::{GapSpec, SessionSpec};
