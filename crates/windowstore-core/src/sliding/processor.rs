//! The streaming sliding-window processor: KIP-450's two-new-windows algorithm, record by
//! record, over the segmented store.
//!
//! Windows live in a [`SessionStore`] as `[start, start + D]` (so its segments, indexed by
//! end, are indexed by start too); a window's value is its window time (the largest record time
//! in it, 8 bytes little-endian) followed by its aggregate state. Per record at `t`
//! (SEMANTICS.md section 4, streaming), with `close = stream time - grace`:
//!
//! 1. a record with `t + D < close` is late and dropped whole;
//! 2. the key's windows starting in `[t - 2D, t + 1]` are read in start order: those ending
//!    before `t` tell the previous record's time and its left window's aggregate; the one
//!    ending at `t` is the record's own left window; those containing `t` are updated; one
//!    starting at `t + 1` is the record's right window;
//! 3. every window containing `t` gets the record, unless it is closed (`end < close`: counted
//!    as `late_window_update`);
//! 4. new windows, each seeded from an existing aggregate, never from raw records: the
//!    previous record's right window if it now holds this record, the record's left window
//!    (the previous left aggregate plus the record), and its right window (the aggregate of
//!    the latest window containing `t`, if it holds a later record).
//!
//! A record none of whose windows is open any more is in no window at all: it is rejected as
//! late (Kafka drops it with only the skipped updates counted). Changes come as updates of
//! existing windows in ascending start order, then the new windows in the order above. Kafka 4.x
//! iterates its store backwards and updates latest start first; the conformance tests map that
//! (`sliding_order_within_record`). `final` emits a window once it closes: at the end of each
//! batch, and before any put that would drop segments.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use super::check_record;
use super::snapshot_meta;
use super::spec::{Resolved, SlidingSpec};
use crate::agg::{fill_overflow, AggSpec, Aggregator};
use crate::emit::{Change, Changelog, EmitMode};
use crate::engine::{
    encode_snapshot, processor_common, write_snapshot, Bound, Lifecycle, Restored, IN_MEMORY,
};
use crate::input::InputSpec;
use crate::output::Layout;
use crate::reject::{OnInvalid, Reason};
use crate::state;
use crate::store::session_store::PutOutcome;
use crate::store::{snapshot, Session};
use crate::{Error, Result, SessionStore};

/// Counters of a processor, beyond the rejections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Input records seen.
    pub records: u64,
    /// Records aggregated into at least one window.
    pub accepted: u64,
    /// Window updates skipped because the window had closed (the record itself was accepted).
    pub late_window_update: u64,
    /// Output rows emitted (final windows, or changelog rows).
    pub emitted: u64,
}

/// A sliding window processor over a stream of Arrow record batches.
#[derive(Debug)]
pub struct SlidingProcessor {
    spec: SlidingSpec,
    input: InputSpec,
    agg_specs: Vec<AggSpec>,
    bound: Option<Bound<Resolved>>,
    /// Stream time, arrivals, rejections; `emitted_below`: every window with a smaller end has
    /// been emitted (final mode).
    life: Lifecycle,
    counters: Counters,
}

/// An existing window read for a record: its start, window time, and state in scratch.
#[derive(Debug, Clone, Copy)]
struct Found {
    start: i64,
    time: i64,
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

impl SlidingProcessor {
    /// A processor for `spec` over input columns `input`, computing `aggs`.
    pub fn new(spec: SlidingSpec, input: InputSpec, aggs: Vec<AggSpec>) -> Result<Self> {
        spec.validate()?;
        Ok(Self {
            spec,
            input: InputSpec { gap: None, ..input },
            agg_specs: aggs,
            bound: None,
            life: Lifecycle::default(),
            counters: Counters::default(),
        })
    }

    /// Binds the processor to an input schema now (the first batch does it otherwise).
    pub fn bind(&mut self, schema: SchemaRef) -> Result<()> {
        if self.bound.is_none() {
            let layout = Layout {
                op: self.spec.emit != EmitMode::Final,
                ..super::LAYOUT
            };
            let spec = &self.spec;
            self.bound = Some(Bound::try_new(
                &self.input,
                &self.agg_specs,
                &schema,
                layout,
                |unit| spec.resolve(unit),
                |ticks| ticks.retention,
            )?);
        }
        Ok(())
    }

    processor_common!(snapshot_meta);

    fn process_bound(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let bound = self.bound.as_mut().expect("bound above");
        let batch = &bound.input.conform(batch)?;
        let n = batch.num_rows();
        let keys = bound.input.keys.encode(batch)?;
        let times = bound.input.time.read(batch);
        let Resolved {
            time_difference: d,
            grace,
            ..
        } = bound.ticks;

        // Validate every record first: under on_invalid="error" a bad record fails the call
        // before any state changes.
        let mut invalid: Vec<Option<Reason>> = vec![None; n];
        for (row, slot) in invalid.iter_mut().enumerate() {
            *slot = check_record(keys.null[row], times.problem(row), times.ticks[row], d);
            if let (Some(reason), OnInvalid::Error) = (*slot, self.spec.on_invalid) {
                return Err(Error::InvalidRecord {
                    row,
                    reason: reason.as_str().to_string(),
                });
            }
        }

        let mode = self.spec.emit;
        let mut out = Emitter {
            mode,
            changelog: Changelog::new(mode),
            finals: Vec::new(),
            emitted_below: self.life.emitted_below,
            late_window_update: 0,
            value: Vec::new(),
        };
        let mut found: Vec<Found> = Vec::new();
        let mut starts: Vec<i64> = Vec::new();
        let mut scratch: Vec<u8> = Vec::new();
        let (mut record, mut merged) = (Vec::new(), Vec::new());
        let mut plan = Plan::default();

        for (row, reason) in invalid.iter().enumerate() {
            let seq = self.life.seq;
            self.life.seq += 1;
            self.counters.records += 1;
            if let Some(reason) = *reason {
                self.life.rejections.reject(row, reason);
                continue;
            }
            let key = keys.rows.row(row);
            let key = key.as_ref();
            let t = times.ticks[row];
            let st = self.life.observe(t);
            let close = st.saturating_sub(grace);
            // check_record guarantees t - D and t + 1 + D fit.
            if t + d < close {
                self.life.rejections.reject(row, Reason::Late);
                continue;
            }

            // Windows starting in [t - 2D, t + 1], i.e. ending in [t - D, t + 1 + D].
            let windows = bound.store.find_sessions(key, t - d, t + 1);
            plan.read(windows, t, d, &mut found, &mut starts, &mut scratch);
            // Whether a window holding the record was stored (they may all be closed).
            let mut landed = false;

            record.clear();
            bound.aggs.encode_row(batch, row, t, seq, &mut record);
            let ctx = Ctx {
                key,
                d,
                close,
                render: &bound.input.keys,
            };
            let state_of = |f: &Found| &scratch[f.state.0..f.state.1];

            for &i in &plan.updates {
                let f = found[i];
                merged.clear();
                ctx.merge(&bound.aggs, &record, state_of(&f), f.start, &mut merged)?;
                landed |= out.put(
                    &mut bound.store,
                    &ctx,
                    f.start,
                    f.time.max(t),
                    &merged,
                    false,
                )?;
            }
            if let Some(p) = plan.previous {
                // The previous record's right window, if missing and now not empty.
                let start = p + 1;
                if !starts.contains(&start) && start + d >= t {
                    landed |= out.put(&mut bound.store, &ctx, start, t, &record, true)?;
                }
            }
            if !plan.left_exists {
                let seed = plan
                    .left_agg
                    .filter(|_| plan.previous.is_some_and(|p| t - d <= p));
                let left = match seed {
                    Some(i) => {
                        merged.clear();
                        ctx.merge(
                            &bound.aggs,
                            &record,
                            state_of(&found[i]),
                            t - d,
                            &mut merged,
                        )?;
                        &merged
                    }
                    None => &record,
                };
                landed |= out.put(&mut bound.store, &ctx, t - d, t, left, true)?;
            }
            if let Some(i) = plan
                .right_agg
                .filter(|&i| !plan.right_exists && found[i].time > t)
            {
                // The record's right window holds what the latest window containing t holds
                // after t: that window's aggregate before this record.
                let f = found[i];
                out.put(&mut bound.store, &ctx, t + 1, f.time, state_of(&f), true)?;
            }
            if !landed {
                // Every window the record belongs to had closed: it is in no window at all, so
                // it is rejected as late rather than lost (the skipped updates are counted too).
                self.life.rejections.reject(row, Reason::Late);
            } else {
                self.counters.accepted += 1;
            }
        }
        self.life.rejections.finish_batch(batch)?;
        self.counters.late_window_update += out.late_window_update;

        let rows = if mode == EmitMode::Final {
            if let Some(st) = self.life.stream_time {
                out.emit_closed(&bound.store, st.saturating_sub(grace));
            }
            self.life.emitted_below = out.emitted_below;
            out.finals
        } else {
            out.changelog.take()
        };
        self.counters.emitted += rows.len() as u64;
        bound.build(&rows)
    }

    /// End of input: in `final` mode emits every window not emitted yet. The processor takes
    /// no more input afterwards.
    pub fn flush(&mut self) -> Result<Option<RecordBatch>> {
        self.life.check_usable()?;
        self.life.flushed = true;
        let Some(bound) = self.bound.as_ref() else {
            return Ok(None);
        };
        let mut rows = Vec::new();
        if self.spec.emit == EmitMode::Final {
            for s in bound
                .store
                .held_sessions_by_end(self.life.emitted_below, i64::MAX)
            {
                rows.push(final_change(
                    s.key,
                    s.session.start,
                    s.session.end,
                    s.session.value,
                ));
            }
            self.life.emitted_below = i64::MAX;
        }
        self.counters.emitted += rows.len() as u64;
        bound.build(&rows).map(Some)
    }

    /// In `final` mode, the earliest stream time at which a window not emitted yet closes
    /// (stream time then exceeds its end plus grace); `None` when none is held, and in the
    /// changelog modes, which emit nothing at close.
    pub fn next_close(&self) -> Option<i64> {
        let bound = self
            .bound
            .as_ref()
            .filter(|_| self.spec.emit == EmitMode::Final)?;
        let end = bound
            .store
            .held_sessions_by_end(self.life.emitted_below, i64::MAX)
            .iter()
            .map(|s| s.session.end)
            .min()?;
        Some(end.saturating_add(bound.ticks.grace).saturating_add(1))
    }

    pub(crate) fn parts(&self) -> Parts<'_> {
        Parts {
            spec: &self.spec,
            input: &self.input,
            aggs: &self.agg_specs,
            schema: self.bound.as_ref().map(|b| b.input.schema().as_ref()),
            life: &self.life,
            counters: self.counters,
        }
    }

    pub(crate) fn from_parts(
        spec: SlidingSpec,
        input: InputSpec,
        aggs: Vec<AggSpec>,
        schema: Option<SchemaRef>,
        store: SessionStore,
        state: Restored,
        counters: Counters,
    ) -> Result<Self> {
        let mut p = Self::new(spec, input, aggs)?;
        if let Some(schema) = schema {
            p.bind(schema)?;
            p.bound
                .as_mut()
                .expect("bound just now")
                .restore_store(store)?;
        }
        p.life.restore(state);
        p.counters = counters;
        Ok(p)
    }
}

impl Plan {
    /// Reads a record's windows (the key's windows starting in `[t - 2D, t + 1]`, in start
    /// order) and classifies them as KIP-450 does. Only the values the record needs are read
    /// and copied to `scratch` (listed in `found`): the windows it joins and the latest window
    /// ending before it; of the others the start is enough (reading every value costs a cache
    /// miss per window).
    fn read<'s>(
        &mut self,
        windows: impl Iterator<Item = Session<'s>>,
        t: i64,
        d: i64,
        found: &mut Vec<Found>,
        starts: &mut Vec<i64>,
        scratch: &mut Vec<u8>,
    ) {
        *self = Self {
            updates: std::mem::take(&mut self.updates),
            ..Self::default()
        };
        self.updates.clear();
        found.clear();
        starts.clear();
        scratch.clear();
        let mut before = None;
        let mut exact_previous = None;
        for s in windows {
            starts.push(s.start);
            let end = s.start + d;
            if end < t {
                before = Some(s);
                continue;
            }
            if s.start > t {
                // Only [t + 1, t + 1 + D] starts after t within the range read.
                self.right_exists = true;
                continue;
            }
            let f = Found::copy(s, scratch);
            if end == t {
                self.left_exists = true;
                if f.time < t {
                    exact_previous = Some(f.time);
                }
            } else {
                self.right_agg = Some(found.len());
            }
            self.updates.push(found.len());
            found.push(f);
        }
        // The previous record's time: told by the window ending at t if it holds an earlier
        // record, else by the latest window ending before t.
        if let Some(s) = before {
            let f = Found::copy(s, scratch);
            self.previous = Some(f.time);
            self.left_agg = Some(found.len());
            found.push(f);
        }
        if exact_previous.is_some() {
            self.previous = exact_previous;
        }
    }
}

impl Found {
    /// A window's start and window time, with its state copied to the end of `scratch`.
    fn copy(s: Session<'_>, scratch: &mut Vec<u8>) -> Self {
        let (time, agg_state) = state::split(s.value);
        let at = scratch.len();
        scratch.extend_from_slice(agg_state);
        Self {
            start: s.start,
            time,
            state: (at, scratch.len()),
        }
    }
}

/// What every window change of one record needs.
struct Ctx<'a> {
    key: &'a [u8],
    d: i64,
    close: i64,
    render: &'a crate::input::KeyCodec,
}

impl Ctx<'_> {
    /// `record` merged into `window`'s state, or the overflow error naming the window.
    fn merge(
        &self,
        aggs: &Aggregator,
        record: &[u8],
        window: &[u8],
        start: i64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        aggs.merge(window, record, out)
            .map_err(|e| fill_overflow(e, self.render.render(self.key), start, start + self.d))
    }
}

/// Collects a batch's output: the changelog, or final windows as they close.
struct Emitter {
    mode: EmitMode,
    changelog: Changelog,
    finals: Vec<Change>,
    emitted_below: i64,
    late_window_update: u64,
    /// The stored value being built (reused).
    value: Vec<u8>,
}

impl Emitter {
    /// Puts window `[start, start + D]` with window time `time` and state `agg_state`, unless
    /// it is closed (then the skipped update is counted); logs the change. Returns whether the
    /// window was stored.
    fn put(
        &mut self,
        store: &mut SessionStore,
        ctx: &Ctx<'_>,
        start: i64,
        time: i64,
        agg_state: &[u8],
        new: bool,
    ) -> Result<bool> {
        let end = start + ctx.d;
        if end < ctx.close {
            self.late_window_update += 1;
            return Ok(false);
        }
        if self.mode == EmitMode::Final && store.put_would_drop_segments(end) {
            self.emit_closed(store, ctx.close);
        }
        self.value.clear();
        state::join(time, agg_state, &mut self.value);
        let outcome = store.put(ctx.key, start, end, &self.value)?;
        if outcome == PutOutcome::Expired {
            // Unreachable: retention covers every window a non-late record can reach.
            return Err(Error::Capacity(format!(
                "window [{start}, {end}] expired in the store although it is open"
            )));
        }
        if self.mode != EmitMode::Final {
            self.changelog.push(
                Change {
                    key: ctx.key.to_vec(),
                    start,
                    end,
                    time,
                    state: agg_state.to_vec(),
                    delete: false,
                },
                new && outcome == PutOutcome::Inserted,
            );
        }
        Ok(true)
    }

    /// Emits the windows with `emitted_below <= end < close`.
    fn emit_closed(&mut self, store: &SessionStore, close: i64) {
        if close <= self.emitted_below {
            return;
        }
        for s in store.held_sessions_by_end(self.emitted_below, close - 1) {
            self.finals.push(final_change(
                s.key,
                s.session.start,
                s.session.end,
                s.session.value,
            ));
        }
        self.emitted_below = close;
    }
}

fn final_change(key: &[u8], start: i64, end: i64, value: &[u8]) -> Change {
    let (time, agg_state) = state::split(value);
    Change {
        key: key.to_vec(),
        start,
        end,
        time,
        state: agg_state.to_vec(),
        delete: false,
    }
}

/// A processor's state, borrowed for a snapshot.
#[derive(Debug)]
pub(crate) struct Parts<'a> {
    pub spec: &'a SlidingSpec,
    pub input: &'a InputSpec,
    pub aggs: &'a [AggSpec],
    pub schema: Option<&'a Schema>,
    pub life: &'a Lifecycle,
    pub counters: Counters,
}
