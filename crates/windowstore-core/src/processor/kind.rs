//! What a window kind supplies to the one streaming processor: its parameters, how a record is
//! checked and applied, which windows are due, and its own counters and snapshot fields; and
//! what it works with while a call's records are applied ([`Applying`]: the store, the
//! aggregates, the call's output so far, and the one rule every kind shares for putting a
//! window: in `final` mode, windows that close are emitted before a put can expire them).

use std::fmt::Debug;

use arrow_schema::TimeUnit;

use crate::agg::inputs::Inputs;
use crate::agg::{fill_overflow, Aggregator};
use crate::emit::{Changelog, EmitMode, Rows};
use crate::input::time::TimeProblem;
use crate::input::KeyCodec;
use crate::meta::{MetaReader, MetaWriter};
use crate::output::Layout;
use crate::reject::{OnInvalid, Reason};
use crate::store::session_store::{PutOutcome, Reads};
use crate::store::WindowStore;
use crate::time::{Duration, TimeBase};
use crate::{KeyedSession, Result, SessionStore};

/// A record's fields that decide whether it can be used at all, as [`WindowKind::check`] gets
/// them: not checked yet, and read before any state is.
#[derive(Debug, Clone, Copy)]
pub struct Unchecked {
    /// A key column is null.
    pub null_key: bool,
    /// Why the time cannot be used, if it cannot.
    pub time: Option<TimeProblem>,
    /// The time in ticks (meaningless where `time` is `Some`).
    pub t: i64,
    /// The record's gap column value in ticks, where the kind reads one (`None`: null or
    /// unreadable).
    pub column_gap: Option<i64>,
    /// The record's marker flags (`input::markers::STARTS`, `ENDS`), where the kind reads
    /// marker columns; else 0.
    pub flags: u8,
}

/// What [`WindowKind::step_run`] did that the store does not count the way record steps do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOutcome {
    /// The puts the record steps would have made (a rewrite of a stored window counts as one).
    pub puts: u64,
    /// The removes the record steps would have made.
    pub removes: u64,
    /// The largest stored end put (store time must reach it).
    pub max_end: Option<i64>,
    /// Records that met no window of their key (each made windows of its own): a run of such
    /// records costs more than their record steps (see `processor::batched`).
    pub isolated: u64,
}

/// The counters a window kind keeps beyond the processor's own.
pub trait KindCounters: Copy + Default + Debug + PartialEq + Send + Sync {
    /// The names of the counters, in a fixed order (metrics and snapshot fields).
    const NAMES: &'static [&'static str];
    /// The values, in the order of [`Self::NAMES`].
    fn values(&self) -> Vec<u64>;
    /// Counters from values in the order of [`Self::NAMES`].
    fn from_values(values: &[u64]) -> Self;
}

/// A window kind: sessions or sliding windows. The kind's parameters are the implementing
/// value; everything else a streaming processor does is written once, in
/// [`super::Processor`].
///
/// A kind stores each window in the store under its closing bound (a session's reach, a
/// sliding window's end) in the place of the end, so that the windows `final` mode must emit
/// once stream time passes `x + grace` are exactly those stored with end `x`
/// (see `emit_pending`).
pub trait WindowKind: Clone + Debug + Send + Sync + Sized + 'static {
    /// The parameters in ticks of the time column.
    type Ticks: Copy + Debug + Send + Sync;
    /// The kind's own counters.
    type Counters: KindCounters;
    /// What checking a record leaves for applying it (a session record's gap).
    type Prepared: Copy + Debug + Default + Send + Sync;
    /// Buffers a kind reuses from record to record within a call.
    type Scratch: Default;
    /// The store the kind keeps its windows in.
    type Store: WindowStore;

    /// The kind's tag in snapshots (`session-processor/2`, ...).
    const KIND: &'static str;
    /// The prefix of the kind's snapshot metadata (`windowstore.session.`, ...).
    const PREFIX: &'static str;
    /// The kind's name in messages ("session processor", ...).
    const WHAT: &'static str;
    /// The output's window columns (without `op`).
    const LAYOUT: Layout;
    /// Whether the kind can tag input rows with their window (`output="records"`): each row
    /// must belong to exactly one window, as with sessions.
    const RECORDS: bool = false;

    /// When windows are emitted.
    fn emit(&self) -> EmitMode;
    /// What to do with unusable records.
    fn on_invalid(&self) -> OnInvalid;
    /// Checks what can be checked before the time column is known, for an integer column of
    /// `time_unit` (see `TimeBase::before_binding`).
    fn validate(&self, time_unit: Option<TimeUnit>) -> Result<()>;
    /// The dynamic-gap column the kind reads, if any.
    fn gap_column(&self) -> Option<&str> {
        None
    }
    /// The marker columns the kind reads (sessions that a record starts or ends); none by
    /// default.
    fn markers(&self) -> crate::input::Markers {
        crate::input::Markers::default()
    }
    /// The grace as the caller gave it (a processing-time clock takes none).
    fn grace_spec(&self) -> Duration;
    /// The parameters in ticks of `base` (the time column's).
    fn resolve(&self, base: &TimeBase) -> Result<Self::Ticks>;
    /// The store's retention: every window a non-late record can reach stays in the store.
    fn retention(ticks: &Self::Ticks) -> i64;
    /// Grace in ticks.
    fn grace(ticks: &Self::Ticks) -> i64;
    /// An empty store for windows of these parameters.
    fn new_store(&self, ticks: &Self::Ticks) -> Result<Self::Store>;

    /// Whether a record can be used at all (never depends on state): what applying it needs,
    /// or why it is rejected. Counts what checking counts (clamped gaps) in `counters`.
    fn check(
        ticks: &Self::Ticks,
        record: Unchecked,
        counters: &mut Self::Counters,
    ) -> std::result::Result<Self::Prepared, Reason>;

    /// Applies one usable record, with stream time already advanced to its time; returns
    /// whether it was accepted (`false`: late, which the processor rejects).
    fn step(
        ticks: &Self::Ticks,
        step: &mut Applying<'_, Self>,
        scratch: &mut Self::Scratch,
        record: Record<'_, Self::Prepared>,
    ) -> Result<bool>;

    /// Once a call's records are applied one by one, the changelog rows of the call if the
    /// kind kept them itself (`None`, the default: those of `step.changelog`).
    fn changelog_rows(
        _step: &Applying<'_, Self>,
        _scratch: &mut Self::Scratch,
    ) -> Result<Option<Rows>> {
        Ok(None)
    }

    /// Before a chunk's records are applied one by one: lets the kind look up what they will
    /// need together (`keys`: each row's encoded key), so that the cache misses of different
    /// records overlap. Reads only; the default reads nothing.
    fn read_ahead(_store: &Self::Store, _scratch: &mut Self::Scratch, _keys: &arrow_row::Rows) {}

    /// Whether a record at `t`, stream time being `stream_time` once it is looked at, can be
    /// applied together with its key's other records of the call ([`Self::step_run`]): such a
    /// record is never late, and nothing it meets depends on other keys' records. `false`
    /// (the default) keeps every call of the kind on the record-by-record path.
    fn run_safe(_ticks: &Self::Ticks, _t: i64, _stream_time: i64) -> bool {
        false
    }

    /// Whether [`Self::step_run`] also writes the changelog modes' rows (stamped with each
    /// record's arrival number, `Changelog::at`); if not, only `final` calls are batched.
    const RUN_LOGS: bool = false;

    /// Applies `records` (one key's records of a call, all run-safe, in arrival order) as
    /// [`Self::step`] applies them one by one, with two differences the caller makes good:
    /// puts go through `SessionStore::put_keeping_time` (store time does not move), and the store's
    /// `puts` and `removes` counters are not what the steps would have counted; the
    /// [`RunOutcome`] says what they would have. Like the steps, it keeps `step.latest_end`
    /// up to date if the kind tracks it. A kind that has no such path keeps
    /// [`Self::run_safe`] `false`.
    fn step_run(
        _ticks: &Self::Ticks,
        _step: &mut Applying<'_, Self>,
        _scratch: &mut Self::Scratch,
        _records: &[Record<'_, Self::Prepared>],
    ) -> Result<RunOutcome> {
        Err(crate::Error::Internal(format!(
            "the {} applies records one by one",
            Self::WHAT
        )))
    }

    /// What [`Self::step_run`] reads in the store for `records` (one key's run). The batched
    /// path reads the lookups of the next runs into the cache together
    /// (`SessionStore::warm`), which overlaps their cache misses; `None` (the default) warms
    /// nothing.
    fn run_reads(_ticks: &Self::Ticks, _records: &[Record<'_, Self::Prepared>]) -> Option<Reads> {
        None
    }

    /// Whether a restored store entry `[start, stored_end]` whose value begins with `prefix`
    /// is one the kind could have written; says why not.
    fn check_stored(
        ticks: &Self::Ticks,
        start: i64,
        stored_end: i64,
        prefix: i64,
    ) -> std::result::Result<(), String>;

    /// Checks a restored store entry `[start, stored_end]` with `value` the way the kind will
    /// read it, and adds the aggregate states it holds to `states` (the processor checks that
    /// they are readable); says what is wrong. By default the value is the 8-byte prefix of
    /// [`crate::state`] (see [`Self::check_stored`]) followed by one aggregate state.
    fn stored_states<'v>(
        ticks: &Self::Ticks,
        start: i64,
        stored_end: i64,
        value: &'v [u8],
        states: &mut Vec<&'v [u8]>,
    ) -> std::result::Result<(), String> {
        if value.len() < 8 {
            return Err("no bound".into());
        }
        let (prefix, agg_state) = crate::state::split(value);
        Self::check_stored(ticks, start, stored_end, prefix)?;
        states.push(agg_state);
        Ok(())
    }

    /// Appends a stored window to `rows` as a final output row.
    fn final_row(window: &KeyedSession<'_>, rows: &mut Rows);

    /// Writes the parameters into snapshot metadata.
    fn write_meta(&self, w: &mut MetaWriter<'_>);
    /// Reads the parameters back; `emit` and `on_invalid` are read by the processor.
    fn read_meta(r: &MetaReader<'_>, emit: EmitMode, on_invalid: OnInvalid) -> Result<Self>;
}

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

/// A call's records being applied: the state they change (the store, through the bound
/// aggregates, with the call's emit mode and close time) and the call's output so far. A kind's
/// `step` and `step_run` get one per call; see "applying" in docs/glossary.md.
#[derive(Debug)]
pub struct Applying<'a, K: WindowKind> {
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

impl<K: WindowKind> Applying<'_, K> {
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

impl<K: WindowKind<Store = SessionStore>> Applying<'_, K> {
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
