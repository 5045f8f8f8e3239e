//! Helpers shared by the integration tests.

use windowstore_core::KeyedSession;

/// A session copied out of the store: key, start, end, value.
pub type Row = (Vec<u8>, i64, i64, Vec<u8>);

/// Copies borrowed sessions into owned rows, for comparison after the store changes.
pub fn rows(sessions: &[KeyedSession<'_>]) -> Vec<Row> {
    sessions
        .iter()
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
