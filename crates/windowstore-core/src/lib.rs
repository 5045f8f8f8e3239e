//! windowstore-core: Kafka-Streams-grade windows over Arrow record batches.
//!
//! The crate is pure Rust and knows nothing of Python or Spark. One streaming processor
//! (`processor`) serves every window kind: sessions keep their windows in the segmented
//! [`SessionStore`] of KIP-94 (`store`), sliding windows in a store of their own (`sliding`).
#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod agg;
pub mod any_processor;
pub mod emit;
pub mod error;
pub mod input;
pub mod meta;
pub mod output;
pub mod processor;
pub mod reject;
pub mod session;
pub mod sliding;
pub mod state;
pub mod store;
pub mod time;

pub use any_processor::{restore_any, AnyProcessor};
pub use error::{Error, Result};
pub use store::{KeyedSession, Session, SessionStore, StoreMetrics};
