//! A call's transaction: what a call may change, kept in one value ([`CallState`], and the
//! store beside it) that is begun before the call, committed when it succeeds and rolled back
//! whole when it fails. A field added to [`CallState`] is rolled back with the rest, or the
//! code does not compile ([`CallState::rollback`] names every field).

use super::held::Held;
use super::kind::WindowKind;
use super::lifecycle::{LifeMark, Lifecycle};
use super::{Counters, Processor};
use crate::store::key_table::KeyTable;
use crate::store::WindowStore;
use crate::Result;

/// What a call may change beside the store.
#[derive(Debug, Default)]
pub(super) struct CallState<C> {
    /// Stream time, arrival numbers, emitted bounds, rejected rows.
    pub life: Lifecycle,
    /// The processor's counters and its kind's.
    pub counters: Counters<C>,
    /// Records mode: the accepted rows of open sessions.
    pub held: Option<Held>,
    /// Calls left to take the record path because the last batched call found the keys sparse
    /// (see `batched`; only the time of a call depends on it).
    pub sparse_calls: u32,
}

/// Where a [`CallState`] stood when a call began (the held rows keep their own journal).
pub(super) struct CallMark<C> {
    life: LifeMark,
    counters: Counters<C>,
    sparse_calls: u32,
}

impl<C: Copy> CallState<C> {
    /// Begins a call.
    fn begin(&mut self) -> CallMark<C> {
        if let Some(held) = self.held.as_mut() {
            held.begin();
        }
        CallMark {
            life: self.life.mark(),
            counters: self.counters,
            sparse_calls: self.sparse_calls,
        }
    }

    /// Keeps what the call changed.
    fn commit(&mut self) {
        if let Some(held) = self.held.as_mut() {
            held.commit();
        }
    }

    /// Puts everything back as it stood at `mark`, before the store's rollback (the held rows'
    /// references go back to its key `table`).
    fn rollback(&mut self, mark: &CallMark<C>, table: Option<&mut KeyTable>) -> Result<()> {
        let Self {
            life,
            counters,
            held,
            sparse_calls,
        } = self;
        life.rollback(&mark.life);
        *counters = mark.counters;
        *sparse_calls = mark.sparse_calls;
        match (held.as_mut(), table) {
            (Some(held), Some(table)) => held.rollback(table),
            _ => Ok(()),
        }
    }
}

impl<K: WindowKind> Processor<K> {
    /// Begins a call: the store's journal and the call state's mark.
    pub(super) fn begin_call(&mut self) -> CallMark<K::Counters> {
        if let Some(bound) = self.bound.as_mut() {
            bound.store.begin();
        }
        self.call.begin()
    }

    /// Commits a call that succeeded.
    pub(super) fn commit_call(&mut self) {
        if let Some(bound) = self.bound.as_mut() {
            bound.store.commit();
        }
        self.call.commit();
    }

    /// Rolls a call back to `mark`: the store and the call state as they stood.
    pub(super) fn rollback_call(&mut self, mark: &CallMark<K::Counters>) -> Result<()> {
        // The held rows first: they name keys by the ids the call left (see `held::index`).
        let table = self.bound.as_mut().map(|b| b.store.keys_mut());
        self.call.rollback(mark, table)?;
        if let Some(bound) = self.bound.as_mut() {
            bound.store.rollback()?;
        }
        Ok(())
    }
}
