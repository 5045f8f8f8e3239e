//! Sliding windows as a window kind of the streaming processor: KIP-450's two-new-windows
//! algorithm, record by record, over the segmented store.
//!
//! Windows live in the store as `[start, start + D]` (so its segments, indexed by end, are
//! indexed by start too); a window's value is its window time (the largest record time in it,
//! 8 bytes little-endian) followed by its aggregate state. Per record at `t` (docs/semantics.md
//! section 4, streaming), with `close = stream time - grace`:
//!
//! 1. a record with `t + D < close` is late and dropped whole;
//! 2. the key's windows starting in `[t - 2D, t + 1]` are read in start order: those ending
//!    before `t` tell the previous record's time and its left window's aggregate; the one
//!    ending at `t` is the record's own left window; those containing `t` are updated; one
//!    starting at `t + 1` is the record's right window;
//! 3. every window containing `t` gets the record; new windows are each seeded from an
//!    existing aggregate, never from raw records: the previous record's right window if it now
//!    holds this record, the record's left window (the previous left aggregate plus the
//!    record), and its right window (the aggregate of the latest window containing `t`, if it
//!    holds a later record);
//! 4. a record none of whose windows is open is in no window at all: it is rejected as late
//!    and changes nothing (Kafka drops it with only the skipped updates counted).
//!
//! **Stored windows are exact.** Every window in the store holds exactly the accepted records
//! of its key with time in `[start, end]`, closed or not. The seeds of step 3 are right only
//! then: the latest window ending before `t` holds the records in `[t - D, t)` only when no
//! window is missing. So an accepted record also updates, and creates, those of its windows
//! that have closed, silently: their change is never emitted or logged (each is counted as
//! `late_window_update`, as the output skipped it), and in `final` mode everything closed is
//! emitted before a closed window is put, so that it lies below `emitted_below` and is never
//! emitted again. Kafka skips closed windows instead, and then seeds later windows from the
//! wrong neighbours (docs/semantics.md section 7). A record rejected as late changes nothing; Kafka
//! still creates its right window (which repeats a set of records another window holds).
//!
//! A call whose records are all within the grace (`final` mode) takes the processor's batched
//! path: each key's records are applied at once to a copy of its windows (`super::run`),
//! with the step's outcome byte for byte.
//!
//! Changes come as updates of existing windows in ascending start order, then the new windows
//! in the order above. Kafka 4.x iterates its store backwards and updates latest start first;
//! the conformance tests map that (`sliding_order_within_record`).

use arrow_schema::TimeUnit;

use super::check_record;
use super::spec::{Resolved, SlidingSpec};
use crate::emit::{EmitMode, Rows};
use crate::meta::{MetaReader, MetaWriter};
use crate::output::Layout;
use crate::processor::{Checked, KindCounters, Record, RunOutcome, Step, WindowKind};
use crate::reject::{OnInvalid, Reason};
use crate::state;
use crate::store::session_store::Reads;
use crate::time::{Duration, TimeBase};
use crate::{KeyedSession, Result};

/// The counters of sliding processors, beyond the processor's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlidingCounters {
    /// Windows of the definition that held a record but had closed when it arrived: their
    /// change is not in the output (one count per record and window).
    pub late_window_update: u64,
}

impl KindCounters for SlidingCounters {
    const NAMES: &'static [&'static str] = &["late_window_update"];
    fn values(&self) -> Vec<u64> {
        vec![self.late_window_update]
    }
    fn from_values(values: &[u64]) -> Self {
        Self {
            late_window_update: values.first().copied().unwrap_or(0),
        }
    }
}

impl WindowKind for SlidingSpec {
    type Ticks = Resolved;
    type Counters = SlidingCounters;
    type Prepared = ();
    type Scratch = super::record_step::Scratch;

    const KIND: &'static str = "sliding-processor/1";
    const PREFIX: &'static str = "windowstore.sliding.";
    const WHAT: &'static str = "sliding processor";
    const LAYOUT: Layout = super::LAYOUT;

    fn emit(&self) -> EmitMode {
        self.emit
    }

    fn on_invalid(&self) -> OnInvalid {
        self.on_invalid
    }

    fn validate(&self, time_unit: Option<TimeUnit>) -> Result<()> {
        SlidingSpec::validate(self, time_unit)
    }

    fn grace_spec(&self) -> Duration {
        self.grace
    }

    fn resolve(&self, base: &TimeBase) -> Result<Resolved> {
        SlidingSpec::resolve(self, base)
    }

    fn retention(ticks: &Resolved) -> i64 {
        ticks.retention
    }

    fn grace(ticks: &Resolved) -> i64 {
        ticks.grace
    }

    fn check(
        ticks: &Resolved,
        r: Checked,
        _counters: &mut SlidingCounters,
    ) -> std::result::Result<(), Reason> {
        match check_record(r.null_key, r.time, r.t, ticks.time_difference) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    fn step(
        ticks: &Resolved,
        step: &mut Step<'_, Self>,
        sc: &mut Self::Scratch,
        r: Record<'_, ()>,
    ) -> Result<bool> {
        let (key, t, d) = (r.key, r.t, ticks.time_difference);
        // check_record guarantees that t - D and t + 1 + D fit.
        if t + d < step.close {
            return Ok(false);
        }
        // Windows starting in [t - 2D, t + 1], i.e. ending in [t - D, t + 1 + D].
        let windows = step.store.find_sessions(key, t - d, t + 1);
        sc.read(windows, t, d);
        sc.record.clear();
        step.aggs
            .encode_input(r.inputs, r.row, t, r.seq, &mut sc.record);
        sc.plan_new(t, d);
        let close = step.close;
        let (closed, landed) = sc.closed_and_landed(t, d, close);
        if !landed {
            // In no open window: rejected as late, so it is in no window and makes none (its
            // right window would repeat a set of records another window holds).
            sc.check_merges(step, key, t, d)?;
            step.counters.late_window_update += closed;
            return Ok(false);
        }
        step.counters.late_window_update += closed;
        if step.mode == EmitMode::Final && sc.updates_unemitted_closed(d, close, step.emitted_below)
        {
            // Everything closed goes out before a closed window changes, so that it lies below
            // emitted_below and is never emitted.
            step.emit_closed();
        }
        // The existing windows containing t first, in start order, then the new ones.
        sc.update(step, &r, close)?;
        sc.fill(step, key, d)?;
        sc.put_new(step, key, d)?;
        Ok(true)
    }

    fn run_safe(ticks: &Resolved, t: i64, stream_time: i64) -> bool {
        // Such a record is not late, changes only open windows, reads only visible ones, and
        // what it does depends on its key's windows alone (see `super::run`).
        t >= stream_time.saturating_sub(ticks.grace)
    }

    fn step_run(
        ticks: &Resolved,
        step: &mut Step<'_, Self>,
        sc: &mut Self::Scratch,
        records: &[Record<'_, ()>],
    ) -> Result<RunOutcome> {
        super::run::step_run(ticks.time_difference, step, &mut sc.run, records)
    }

    fn run_reads(ticks: &Resolved, records: &[Record<'_, ()>]) -> Option<Reads> {
        let (lowest, highest) = super::run::time_range(records)?;
        // check_record guarantees that t - D and t + 1 fit. Of the windows ending before the
        // earliest record, the run copies only the latest (`super::run`).
        Some(Reads {
            earliest_end: lowest - ticks.time_difference,
            latest_start: highest + 1,
            values_from: lowest,
        })
    }

    fn check_stored(
        ticks: &Resolved,
        start: i64,
        end: i64,
        time: i64,
    ) -> std::result::Result<(), String> {
        if end.checked_sub(start) != Some(ticks.time_difference) {
            return Err("its length is not the time difference".into());
        }
        if !(start <= time && time <= end) {
            return Err(format!("window time {time} is outside it"));
        }
        Ok(())
    }

    fn final_row(s: &KeyedSession<'_>, rows: &mut Rows) {
        let (time, agg_state) = state::split(s.session.value);
        rows.push(
            s.key,
            (s.session.start, s.session.end, time),
            agg_state,
            false,
        );
    }

    fn write_meta(&self, w: &mut MetaWriter<'_>) {
        w.duration("time_difference", self.time_difference);
        w.duration("grace", self.grace);
    }

    fn read_meta(r: &MetaReader<'_>, emit: EmitMode, on_invalid: OnInvalid) -> Result<Self> {
        Ok(SlidingSpec {
            time_difference: r.duration("time_difference")?,
            grace: r.duration("grace")?,
            emit,
            on_invalid,
        })
    }
}

/// The streaming sliding window processor.
pub type SlidingProcessor = crate::processor::Processor<SlidingSpec>;
