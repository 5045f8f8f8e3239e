//! Store metrics: a plain snapshot of counters and sizes, read by `SessionStore::metrics`.

use super::key_table::KeyTable;

/// Counters of what a store did and the size of what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreMetrics {
    /// Sessions stored, including expired ones whose segment is not dropped yet.
    pub live_sessions: u64,
    /// Distinct keys with at least one session stored.
    pub live_keys: u64,
    /// Segments in the store.
    pub segments: u64,
    /// Bytes of the distinct live keys.
    pub key_bytes: u64,
    /// Bytes of the live session values.
    pub value_bytes: u64,
    /// Estimated heap bytes of the whole store (keys, index, value arenas).
    pub bytes: u64,
    /// Sessions put (new or overwritten).
    pub puts: u64,
    /// Sessions removed.
    pub removes: u64,
    /// Puts refused because the session had already expired.
    pub expired_puts: u64,
    /// Sessions dropped by segment expiry (a snapshot counts those it leaves out as expired:
    /// see [`crate::SessionStore::snapshot`]).
    pub expired_sessions: u64,
    /// Value bytes written by puts and in-place edits (bytes moved included) since the store
    /// was made or restored. Not in [`Self::pairs`] nor snapshots: a deterministic measure of
    /// work for tests of growth.
    pub bytes_written: u64,
    /// Bytes the undo journal recorded since the store was made or restored (as
    /// `bytes_written`).
    pub bytes_journaled: u64,
}

/// The counters a store keeps itself; sizes are computed on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counters {
    pub puts: u64,
    pub removes: u64,
    pub expired_puts: u64,
    pub expired_sessions: u64,
}

impl Counters {
    /// The metrics of a store with these counters and key table `keys`, holding `sessions`
    /// sessions in `segments` segments, `value_bytes` of values in `heap_bytes` of heap of its
    /// own (the key table's is added), having written and journaled `written` bytes.
    pub(crate) fn metrics(
        self,
        keys: &KeyTable,
        (sessions, segments): (u64, u64),
        (value_bytes, heap_bytes): (usize, usize),
        written: (u64, u64),
    ) -> StoreMetrics {
        StoreMetrics {
            live_sessions: sessions,
            live_keys: keys.len() as u64,
            segments,
            key_bytes: keys.key_bytes() as u64,
            value_bytes: value_bytes as u64,
            bytes: (heap_bytes + keys.heap_bytes()) as u64,
            puts: self.puts,
            removes: self.removes,
            expired_puts: self.expired_puts,
            expired_sessions: self.expired_sessions,
            bytes_written: written.0,
            bytes_journaled: written.1,
        }
    }
}

impl StoreMetrics {
    /// The metrics as `(name, value)` pairs, in a fixed order.
    pub fn pairs(&self) -> [(&'static str, u64); 10] {
        [
            ("live_sessions", self.live_sessions),
            ("live_keys", self.live_keys),
            ("segments", self.segments),
            ("key_bytes", self.key_bytes),
            ("value_bytes", self.value_bytes),
            ("bytes", self.bytes),
            ("puts", self.puts),
            ("removes", self.removes),
            ("expired_puts", self.expired_puts),
            ("expired_sessions", self.expired_sessions),
        ]
    }
}
