//! What a window kind works with while a call's records are applied: the store, the
//! aggregates, the call's output so far, and the one rule every kind shares for putting a
//! window (in `final` mode, windows that close are emitted before a put can expire them).

use super::bound::Bound;
use super::kind::WindowKind;
use super::lifecycle::Lifecycle;
use crate::agg::inputs::Inputs;
use crate::agg::{fill_overflow, Aggregator};
use crate::emit::{Changelog, EmitMode, Rows};
use crate::input::KeyCodec;
use crate::store::session_store::PutOutcome;
use crate::store::WindowStore;
use crate::{Result, SessionStore};

/// One usable record, as a kind's `step` gets it.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a, P> {
    /// The encoded key.
    pub key: &'a [u8],
    /// The aggregate inputs of the batch the record is in.
    pub inputs: &'a Inputs,
    /// The record's row in its batch.
    pub row: usize,
    /// The record's time in ticks.
    pub t: i64,
    /// The record's arrival number (orders ties in time).
    pub seq: u64,
    /// Stream time once the record is looked at (at least `t`).
    pub stream_time: i64,
    /// What checking the record left.
    pub prepared: P,
}

/// The state a call works on, and its output so far.
#[derive(Debug)]
pub struct Step<'a, K: WindowKind> {
    /// The store (journaled: the processor rolls it back if the call fails).
    pub store: &'a mut K::Store,
    /// The aggregates.
    pub aggs: &'a Aggregator,
    /// The key columns (to name a key in errors).
    pub keys: &'a KeyCodec,
    /// The emit mode.
    pub mode: EmitMode,
    /// `stream time - grace` after the current record: windows closing before it are closed.
    pub close: i64,
    /// The changelog of the call (changelog modes).
    pub changelog: Changelog,
    /// Final windows emitted by the call (final mode).
    pub finals: Rows,
    /// Every window whose closing bound lies below this has been emitted (final mode).
    pub emitted_below: i64,
    /// The largest window end put so far (see `Lifecycle::latest_end`); a kind that cares
    /// keeps it up to date.
    pub latest_end: Option<i64>,
    /// The kind's counters.
    pub counters: &'a mut K::Counters,
}

impl<'a, K: WindowKind> Step<'a, K> {
    /// The state a call of `mode` works on: `bound`'s store and aggregates, where `life` stands,
    /// and the kind's `counters` to count into.
    pub(crate) fn new(
        bound: &'a mut Bound<K>,
        mode: EmitMode,
        life: &Lifecycle,
        counters: &'a mut K::Counters,
    ) -> Self {
        Self {
            store: &mut bound.store,
            aggs: &bound.aggs,
            keys: &bound.input.keys,
            mode,
            close: i64::MIN,
            changelog: Changelog::new(mode),
            finals: Rows::default(),
            emitted_below: life.emitted_below,
            latest_end: life.latest_end,
            counters,
        }
    }

    /// Emits (final mode) every window not emitted yet whose closing bound is below `close`.
    pub fn emit_closed(&mut self) {
        if self.close <= self.emitted_below {
            return;
        }
        let due = self.store.take_due(self.emitted_below, self.close - 1);
        super::push_finals::<K>(&due, &mut self.finals);
        self.emitted_below = self.close;
    }

    /// `a` merged with `b` into `out`; an overflow names the key and window `[start, end]`.
    pub fn merge(
        &self,
        key: &[u8],
        (start, end): (i64, i64),
        a: &[u8],
        b: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.aggs
            .merge(a, b, out)
            .map_err(|e| fill_overflow(e, self.keys.render(key), start, end))
    }
}

impl<K: WindowKind<Store = SessionStore>> Step<'_, K> {
    /// Puts window `[start, end]` of `key` with stored `value`. In `final` mode, a put that
    /// would drop expired segments first emits every window that has closed, so expiry never
    /// takes a window that was not emitted.
    pub fn put(&mut self, key: &[u8], start: i64, end: i64, value: &[u8]) -> Result<PutOutcome> {
        if self.mode == EmitMode::Final && self.store.put_would_drop_segments(end) {
            self.emit_closed();
        }
        self.store.put(key, start, end, value)
    }
}
