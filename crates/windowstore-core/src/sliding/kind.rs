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
//! Changes come as updates of existing windows in ascending start order, then the new windows
//! in the order above. Kafka 4.x iterates its store backwards and updates latest start first;
//! the conformance tests map that (`sliding_order_within_record`).

use arrow_schema::TimeUnit;

use super::check_record;
use super::spec::{Resolved, SlidingSpec};
use crate::emit::{Change, EmitMode};
use crate::meta::{MetaReader, MetaWriter};
use crate::output::Layout;
use crate::processor::{Checked, KindCounters, Record, Step, WindowKind};
use crate::reject::{OnInvalid, Reason};
use crate::state;
use crate::store::session_store::PutOutcome;
use crate::store::Session;
use crate::{Error, KeyedSession, Result};

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

/// An existing window read for a record: its start, window time, and state in scratch.
#[derive(Debug, Clone, Copy)]
struct Found {
    start: i64,
    time: i64,
    state: (usize, usize),
}

/// One window a record puts: its start, window time, whether it is new, and its state in
/// scratch.
#[derive(Debug, Clone, Copy)]
struct Put {
    start: i64,
    time: i64,
    new: bool,
    state: (usize, usize),
}

/// What one record does to its key's windows, worked out before any of it happens.
#[derive(Debug, Default)]
struct Plan {
    /// Existing windows that contain the record, in start order (indices into `found`).
    updates: Vec<usize>,
    /// The latest window ending before the record: the previous left aggregate.
    left_agg: Option<usize>,
    /// The time of the previous record, when a window tells it.
    previous: Option<i64>,
    left_exists: bool,
    /// The latest window containing the record that ends after it.
    right_agg: Option<usize>,
    right_exists: bool,
}

/// Buffers reused from record to record.
#[derive(Debug, Default)]
pub struct Scratch {
    plan: Plan,
    found: Vec<Found>,
    starts: Vec<i64>,
    /// Aggregate states: of the windows read, then of the windows to put.
    states: Vec<u8>,
    record: Vec<u8>,
    puts: Vec<Put>,
    value: Vec<u8>,
}

impl Scratch {
    fn state(&self, at: (usize, usize)) -> &[u8] {
        &self.states[at.0..at.1]
    }

    /// Plans a window: `merge_with` is an existing state the record joins (else the record's
    /// own state, or `seed` alone when `with_record` is false).
    fn plan_put(
        &mut self,
        step: &Step<'_, SlidingSpec>,
        key: &[u8],
        d: i64,
        (start, time, new): (i64, i64, bool),
        seed: Option<(usize, usize)>,
        with_record: bool,
    ) -> Result<()> {
        let at = self.states.len();
        match (seed, with_record) {
            (Some(s), true) => {
                let mut out = std::mem::take(&mut self.value);
                out.clear();
                step.merge(
                    key,
                    (start, start + d),
                    self.state(s),
                    &self.record,
                    &mut out,
                )?;
                self.states.extend_from_slice(&out);
                self.value = out;
            }
            (Some(s), false) => self.states.extend_from_within(s.0..s.1),
            (None, _) => self.states.extend_from_slice(&self.record),
        }
        self.puts.push(Put {
            start,
            time,
            new,
            state: (at, self.states.len()),
        });
        Ok(())
    }
}

impl WindowKind for SlidingSpec {
    type Ticks = Resolved;
    type Counters = SlidingCounters;
    type Prepared = ();
    type Scratch = Scratch;

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

    fn validate(&self) -> Result<()> {
        SlidingSpec::validate(self)
    }

    fn resolve(&self, unit: TimeUnit) -> Result<Resolved> {
        SlidingSpec::resolve(self, unit)
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
        sc: &mut Scratch,
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
            .encode_row(r.batch, r.row, t, r.seq, &mut sc.record);
        sc.puts.clear();

        for i in 0..sc.plan.updates.len() {
            let f = sc.found[sc.plan.updates[i]];
            sc.plan_put(
                step,
                key,
                d,
                (f.start, f.time.max(t), false),
                Some(f.state),
                true,
            )?;
        }
        if let Some(p) = sc.plan.previous {
            // The previous record's right window, if missing and now not empty.
            let start = p + 1;
            if !sc.starts.contains(&start) && start + d >= t {
                sc.plan_put(step, key, d, (start, t, true), None, true)?;
            }
        }
        if !sc.plan.left_exists {
            let seed = sc
                .plan
                .left_agg
                .filter(|_| sc.plan.previous.is_some_and(|p| t - d <= p))
                .map(|i| sc.found[i].state);
            sc.plan_put(step, key, d, (t - d, t, true), seed, true)?;
        }
        if let Some(i) = sc
            .plan
            .right_agg
            .filter(|&i| !sc.plan.right_exists && sc.found[i].time > t)
        {
            // The record's right window holds what the latest window containing t holds
            // after t: that window's aggregate before this record.
            let f = sc.found[i];
            sc.plan_put(step, key, d, (t + 1, f.time, true), Some(f.state), false)?;
        }

        // The record's own right window never holds it (and never is closed).
        // One count per closed window: when the previous record's right window is the
        // record's left window (`p + 1 == t - D`), it is planned twice, as Kafka puts it twice.
        let closed = (0..sc.puts.len())
            .filter(|&i| {
                let start = sc.puts[i].start;
                start + d < step.close && sc.puts[..i].iter().all(|q| q.start != start)
            })
            .count();
        step.counters.late_window_update += closed as u64;
        let landed = sc
            .puts
            .iter()
            .any(|p| p.start <= t && p.start + d >= step.close);
        if !landed {
            // In no open window: rejected as late, so it is in no window and makes none (its
            // right window would repeat a set of records another window holds).
            return Ok(false);
        }
        for i in 0..sc.puts.len() {
            let p = sc.puts[i];
            let end = p.start + d;
            let open = end >= step.close;
            if !open && step.mode == EmitMode::Final && end >= step.emitted_below {
                // Everything closed goes out first, so this window lies below emitted_below
                // and is never emitted.
                step.emit_closed();
            }
            sc.value.clear();
            state::join(p.time, &sc.states[p.state.0..p.state.1], &mut sc.value);
            let outcome = step.put(key, p.start, end, &sc.value)?;
            if outcome == PutOutcome::Expired {
                // Unreachable: retention covers every window a non-late record can reach.
                return Err(Error::Internal(format!(
                    "window [{}, {end}] expired in the store although a record reached it",
                    p.start
                )));
            }
            if open && step.mode != EmitMode::Final {
                let change = Change {
                    key: key.to_vec(),
                    start: p.start,
                    end,
                    time: p.time,
                    state: sc.state(p.state).to_vec(),
                    delete: false,
                };
                step.changelog
                    .push(change, p.new && outcome == PutOutcome::Inserted);
            }
        }
        Ok(landed)
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

    fn final_row(s: &KeyedSession<'_>) -> Change {
        let (time, agg_state) = state::split(s.session.value);
        Change {
            key: s.key.to_vec(),
            start: s.session.start,
            end: s.session.end,
            time,
            state: agg_state.to_vec(),
            delete: false,
        }
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

impl Scratch {
    /// Reads a record's windows (the key's windows starting in `[t - 2D, t + 1]`, in start
    /// order) and classifies them as KIP-450 does. Only the values the record needs are read
    /// and copied (listed in `found`): the windows it joins and the latest window ending before
    /// it; of the others the start is enough (reading every value costs a cache miss per
    /// window).
    fn read<'s>(&mut self, windows: impl Iterator<Item = Session<'s>>, t: i64, d: i64) {
        let mut updates = std::mem::take(&mut self.plan.updates);
        updates.clear();
        self.plan = Plan {
            updates,
            ..Plan::default()
        };
        self.found.clear();
        self.starts.clear();
        self.states.clear();
        let mut before = None;
        let mut exact_previous = None;
        for s in windows {
            self.starts.push(s.start);
            let end = s.start + d;
            if end < t {
                before = Some(s);
                continue;
            }
            if s.start > t {
                // Only [t + 1, t + 1 + D] starts after t within the range read.
                self.plan.right_exists = true;
                continue;
            }
            let f = self.copy(s);
            if end == t {
                self.plan.left_exists = true;
                if f.time < t {
                    exact_previous = Some(f.time);
                }
            } else {
                self.plan.right_agg = Some(self.found.len());
            }
            self.plan.updates.push(self.found.len());
            self.found.push(f);
        }
        // The previous record's time: told by the window ending at t if it holds an earlier
        // record, else by the latest window ending before t.
        if let Some(s) = before {
            let f = self.copy(s);
            self.plan.previous = Some(f.time);
            self.plan.left_agg = Some(self.found.len());
            self.found.push(f);
        }
        if exact_previous.is_some() {
            self.plan.previous = exact_previous;
        }
    }

    /// A window's start and window time, with its state copied to the end of `states`.
    fn copy(&mut self, s: Session<'_>) -> Found {
        let (time, agg_state) = state::split(s.value);
        let at = self.states.len();
        self.states.extend_from_slice(agg_state);
        Found {
            start: s.start,
            time,
            state: (at, self.states.len()),
        }
    }
}

/// The streaming sliding window processor.
pub type SlidingProcessor = crate::processor::Processor<SlidingSpec>;
