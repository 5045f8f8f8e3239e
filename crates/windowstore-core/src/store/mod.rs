//! The segmented session store of KIP-94, decomposed as Kafka Streams does it.
//!
//! - [`key_schema`]: what identifies a session (key bytes, end, start) and how a lookup's
//!   bounds map onto segments;
//! - [`key_table`]: the key table that stores each distinct key's bytes once;
//! - [`edits`]: in-place splices of a stored value, and their inverse for the journal;
//! - [`segment`]: one time bucket of sessions, by key;
//! - [`segments`]: the ordered segments, segment ids and whole-segment expiry;
//! - [`session_store`]: the store, which tracks observed time and counts what it drops, with
//!   an undo log (`journal`) that makes a processor's call all or nothing;
//! - [`metrics`] and [`snapshot_format`]: layers around the store; [`atomic_file`] writes snapshot
//!   files atomically;
//! - [`window_store`]: what the streaming processor needs of any window kind's store.

pub mod atomic_file;
pub mod edits;
mod journal;
pub mod key_schema;
pub mod key_table;
pub mod metrics;
pub mod segment;
pub mod segments;
pub mod session_store;
pub mod snapshot_format;
pub mod window_store;

pub use key_schema::{KeyedSession, Session};
pub use metrics::StoreMetrics;
pub use session_store::SessionStore;
pub use window_store::WindowStore;
