//! What the streaming processor needs of the store a window kind keeps its windows in: a
//! transaction, the windows due in `final` mode, reads, metrics and the snapshot container.
//!
//! Sessions keep theirs in the segmented [`SessionStore`] (KIP-94); sliding windows in a layout
//! of their own (`sliding::store`). Every layout writes and reads the one snapshot container
//! ([`super::snapshot_format`]): a restore decodes it into a [`SessionStore`], which a layout
//! takes its windows from ([`WindowStore::restore_from`]).

use std::collections::HashMap;
use std::fmt::Debug;

use super::key_schema::KeyedSession;
use super::key_table::KeyTable;
use super::session_store::{Reads, SessionStore};
use super::snapshot_format::{self, Table};
use super::StoreMetrics;
use crate::{Error, Result};

/// A window kind's store, as the processor uses it.
pub trait WindowStore: Debug + Send + Sync + Sized {
    /// Retention in ticks.
    fn retention(&self) -> i64;
    /// Takes the windows of a restored `store` (the store is empty: the processor was just
    /// bound); refuses a store of another retention.
    fn restore_from(&mut self, store: SessionStore) -> Result<()>;

    /// Opens a transaction (see [`SessionStore::begin`]).
    fn begin(&mut self);
    /// Makes the open transaction's changes permanent.
    fn commit(&mut self);
    /// Undoes every change since [`Self::begin`].
    fn rollback(&mut self) -> Result<()>;

    /// Counters and sizes.
    fn metrics(&self) -> StoreMetrics;
    /// The ids of the keys with windows stored (records mode's held rows share them).
    fn keys(&self) -> &KeyTable;
    /// [`Self::keys`], to take or let go of a reference.
    fn keys_mut(&mut self) -> &mut KeyTable;
    /// The stored windows (expired ones not dropped yet included) whose stored end lies in
    /// `[earliest_end, latest_end]`, in (end, start, key) order. Changes nothing.
    fn stored_sessions_by_end(&self, earliest_end: i64, latest_end: i64) -> Vec<KeyedSession<'_>>;
    /// The windows due in `final` mode: [`Self::stored_sessions_by_end`], within a transaction,
    /// where a store may keep track of what it has handed out (`earliest_end` only grows from
    /// call to call).
    fn take_due(&mut self, earliest_end: i64, latest_end: i64) -> Vec<KeyedSession<'_>> {
        self.stored_sessions_by_end(earliest_end, latest_end)
    }
    /// The smallest stored end at or after `earliest_end` of any stored window.
    fn earliest_stored_end(&self, earliest_end: i64) -> Option<i64>;
    /// The stored windows whose end is at least `earliest_end`, of the keys in `[from, to]`
    /// (byte order, both inclusive; `None`: every key), in no particular order.
    fn stored_sessions(
        &self,
        keys: Option<(&[u8], &[u8])>,
        earliest_end: i64,
    ) -> Vec<KeyedSession<'_>>;
    /// Every live window, in no particular order.
    fn entries_unordered(&self) -> Vec<KeyedSession<'_>>;
    /// Snapshot bytes of the store with the caller's `extra` metadata and `tables`.
    fn encode_tables(&self, extra: &HashMap<String, String>, tables: &[Table]) -> Result<Vec<u8>>;

    /// The `puts` and `removes` counters (the processor's batched path, which only session
    /// stores take).
    fn change_counts(&self) -> (u64, u64) {
        (0, 0)
    }
    /// Sets the `puts` and `removes` counters (see `SessionStore::set_change_counts`).
    fn set_change_counts(&mut self, _puts: u64, _removes: u64) {}
    /// Whether reads ahead pay (see `SessionStore::reads_ahead`).
    fn reads_ahead(&self) -> bool {
        false
    }
    /// Reads the memory of `lookups` into the cache (see `SessionStore::warm`).
    fn warm(&self, _lookups: &[(&[u8], Reads)]) -> u64 {
        0
    }
    /// Advances store time to `t` if it is later (see `SessionStore::advance_time`).
    fn advance_time(&mut self, _t: i64) {}
}

impl WindowStore for SessionStore {
    fn retention(&self) -> i64 {
        SessionStore::retention(self)
    }

    fn restore_from(&mut self, store: SessionStore) -> Result<()> {
        if store.retention() != self.retention() {
            return Err(retention_mismatch());
        }
        *self = store;
        Ok(())
    }

    fn begin(&mut self) {
        SessionStore::begin(self);
    }

    fn commit(&mut self) {
        SessionStore::commit(self);
    }

    fn rollback(&mut self) -> Result<()> {
        SessionStore::rollback(self)
    }

    fn metrics(&self) -> StoreMetrics {
        SessionStore::metrics(self)
    }

    fn keys(&self) -> &KeyTable {
        &self.keys
    }

    fn keys_mut(&mut self) -> &mut KeyTable {
        &mut self.keys
    }

    fn stored_sessions_by_end(&self, earliest_end: i64, latest_end: i64) -> Vec<KeyedSession<'_>> {
        SessionStore::stored_sessions_by_end(self, earliest_end, latest_end)
    }

    fn earliest_stored_end(&self, earliest_end: i64) -> Option<i64> {
        SessionStore::earliest_stored_end(self, earliest_end)
    }

    fn stored_sessions(
        &self,
        keys: Option<(&[u8], &[u8])>,
        earliest_end: i64,
    ) -> Vec<KeyedSession<'_>> {
        SessionStore::stored_sessions(self, keys, earliest_end)
    }

    fn entries_unordered(&self) -> Vec<KeyedSession<'_>> {
        SessionStore::entries_unordered(self)
    }

    fn encode_tables(&self, extra: &HashMap<String, String>, tables: &[Table]) -> Result<Vec<u8>> {
        snapshot_format::encode_tables(self, extra, tables)
    }

    fn change_counts(&self) -> (u64, u64) {
        let c = self.counters();
        (c.puts, c.removes)
    }

    fn set_change_counts(&mut self, puts: u64, removes: u64) {
        SessionStore::set_change_counts(self, puts, removes);
    }

    fn reads_ahead(&self) -> bool {
        SessionStore::reads_ahead(self)
    }

    fn warm(&self, lookups: &[(&[u8], Reads)]) -> u64 {
        SessionStore::warm(self, lookups)
    }

    fn advance_time(&mut self, t: i64) {
        SessionStore::advance_time(self, t);
    }
}

/// The error of a restored store whose retention is not the processor's.
pub(crate) fn retention_mismatch() -> Error {
    Error::invalid(
        "retention",
        "the snapshot's store retention does not match its parameters",
    )
}
