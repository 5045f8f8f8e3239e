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
//! late (Kafka drops it with only the skipped updates counted). The order of the changes is
//! Kafka's: updates in start order, then the new windows in the
//! order above. `final` emits a window once it closes: at the end of each batch, and before any
//! put that would drop segments.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use super::check_record;
use super::spec::{Resolved, SlidingSpec};
use crate::agg::{fill_overflow, AggSpec, Aggregator};
use crate::emit::{Change, Changelog, EmitMode};
use crate::input::{plain_batch, plain_schema, BoundInput, InputSpec};
use crate::output::{Layout, OutputBuilder};
use crate::reject::{OnInvalid, Reason, Rejections};
use crate::state;
use crate::store::session_store::PutOutcome;
use crate::store::snapshot;
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

/// Everything that exists once the input schema is known.
#[derive(Debug)]
struct Bound {
    input: BoundInput,
    aggs: Aggregator,
    output: OutputBuilder,
    store: SessionStore,
    ticks: Resolved,
}

/// A sliding window processor over a stream of Arrow record batches.
#[derive(Debug)]
pub struct SlidingProcessor {
    spec: SlidingSpec,
    input: InputSpec,
    agg_specs: Vec<AggSpec>,
    bound: Option<Bound>,
    stream_time: Option<i64>,
    /// Every window with `end < emitted_below` has been emitted (final mode).
    emitted_below: i64,
    seq: u64,
    rejections: Rejections,
    counters: Counters,
    flushed: bool,
    failed: Option<String>,
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
    /// Existing windows that contain the record, in start order (indices into the found list).
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
            stream_time: None,
            emitted_below: i64::MIN,
            seq: 0,
            rejections: Rejections::default(),
            counters: Counters::default(),
            flushed: false,
            failed: None,
        })
    }

    /// Binds the processor to an input schema now (the first batch does it otherwise).
    pub fn bind(&mut self, schema: SchemaRef) -> Result<()> {
        if self.bound.is_some() {
            return Ok(());
        }
        let schema = plain_schema(&schema);
        let input = BoundInput::try_new(&self.input, schema.clone())?;
        let ticks = self.spec.resolve(input.time.unit())?;
        let aggs = Aggregator::try_new(self.agg_specs.clone(), &schema)?;
        let layout = Layout {
            op: self.spec.emit != EmitMode::Final,
            ..super::LAYOUT
        };
        let output = OutputBuilder::try_new(&input.keys, &input.time, &aggs, layout)?;
        let store = SessionStore::new(ticks.retention, None)?;
        self.bound = Some(Bound {
            input,
            aggs,
            output,
            store,
            ticks,
        });
        Ok(())
    }

    /// The output schema, once bound.
    pub fn output_schema(&self) -> Option<SchemaRef> {
        self.bound.as_ref().map(|b| b.output.schema().clone())
    }

    /// The input schema, once bound.
    pub fn input_schema(&self) -> Option<SchemaRef> {
        self.bound.as_ref().map(|b| b.input.schema().clone())
    }

    /// Stream time: the largest record time looked at.
    pub fn stream_time(&self) -> Option<i64> {
        self.stream_time
    }

    /// The processor's counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Rejected records counted under `reason`.
    pub fn rejected_count(&self, reason: Reason) -> u64 {
        self.rejections.count(reason)
    }

    /// Metrics of the underlying window store, once bound.
    pub fn store_metrics(&self) -> Option<crate::StoreMetrics> {
        self.bound.as_ref().map(|b| b.store.metrics())
    }

    /// Processes one batch, record by record in row order; returns the batch's output.
    pub fn process(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        self.check_usable()?;
        self.bind(batch.schema())?;
        let result = self.process_bound(batch);
        if let Err(Error::SessionOverflow { .. }) = &result {
            self.failed = Some(format!("{:?}", result.as_ref().err()));
        }
        result
    }

    fn check_usable(&self) -> Result<()> {
        if let Some(why) = &self.failed {
            return Err(Error::invalid(
                "process",
                format!("the processor failed earlier and holds a partial batch ({why}); restore a snapshot"),
            ));
        }
        if self.flushed {
            return Err(Error::invalid(
                "process",
                "the processor was flushed (end of input); create a new one for more input",
            ));
        }
        Ok(())
    }

    fn process_bound(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let bound = self.bound.as_mut().expect("bound above");
        let batch = &plain_batch(batch)?;
        bound.input.check(batch)?;
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
            emitted_below: self.emitted_below,
            late_window_update: 0,
        };
        let mut found: Vec<Found> = Vec::new();
        let mut starts: Vec<i64> = Vec::new();
        let mut scratch: Vec<u8> = Vec::new();
        let (mut record, mut merged) = (Vec::new(), Vec::new());
        let mut plan = Plan::default();

        for (row, reason) in invalid.iter().enumerate() {
            let seq = self.seq;
            self.seq += 1;
            self.counters.records += 1;
            if let Some(reason) = *reason {
                self.rejections.reject(row, reason);
                continue;
            }
            let key = keys.rows.row(row);
            let key = key.as_ref();
            let t = times.ticks[row];
            let st = self.stream_time.map_or(t, |s| s.max(t));
            self.stream_time = Some(st);
            let close = st.saturating_sub(grace);
            // check_record guarantees t - D and t + 1 + D fit.
            if t + d < close {
                self.rejections.reject(row, Reason::Late);
                continue;
            }

            // Windows starting in [t - 2D, t + 1], i.e. ending in [t - D, t + 1 + D].
            found.clear();
            starts.clear();
            scratch.clear();
            for s in bound.store.find_sessions(key, t - d, t + 1) {
                let (time, agg_state) = state::split(s.value);
                let at = scratch.len();
                scratch.extend_from_slice(agg_state);
                found.push(Found {
                    start: s.start,
                    time,
                    state: (at, scratch.len()),
                });
                starts.push(s.start);
            }
            plan.read(&found, t, d);
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
                self.rejections.reject(row, Reason::Late);
            } else {
                self.counters.accepted += 1;
            }
        }
        self.rejections.finish_batch(batch)?;
        self.counters.late_window_update += out.late_window_update;

        let rows = if mode == EmitMode::Final {
            if let Some(st) = self.stream_time {
                out.emit_closed(&bound.store, st.saturating_sub(grace));
            }
            self.emitted_below = out.emitted_below;
            out.finals
        } else {
            out.changelog.take()
        };
        self.counters.emitted += rows.len() as u64;
        bound
            .output
            .build(&bound.input.keys, &bound.input.time, &bound.aggs, &rows)
    }

    /// End of input: in `final` mode emits every window not emitted yet. The processor takes
    /// no more input afterwards.
    pub fn flush(&mut self) -> Result<Option<RecordBatch>> {
        self.check_usable()?;
        self.flushed = true;
        let Some(bound) = self.bound.as_ref() else {
            return Ok(None);
        };
        let mut rows = Vec::new();
        if self.spec.emit == EmitMode::Final {
            for s in bound
                .store
                .held_sessions_by_end(self.emitted_below, i64::MAX)
            {
                rows.push(final_change(
                    s.key,
                    s.session.start,
                    s.session.end,
                    s.session.value,
                ));
            }
            self.emitted_below = i64::MAX;
        }
        self.counters.emitted += rows.len() as u64;
        bound
            .output
            .build(&bound.input.keys, &bound.input.time, &bound.aggs, &rows)
            .map(Some)
    }

    /// Takes the rejected rows kept so far (input columns plus `reason`), once bound.
    pub fn rejected(&mut self) -> Result<Option<RecordBatch>> {
        match &self.bound {
            Some(b) => self.rejections.drain(b.input.schema()).map(Some),
            None => Ok(None),
        }
    }

    /// Writes the processor's whole state to `path` atomically (see `store::snapshot`).
    pub fn snapshot(&self, path: impl AsRef<Path>) -> Result<()> {
        let mut meta = HashMap::new();
        super::snapshot_meta::write(self, &mut meta);
        let empty;
        let store = match &self.bound {
            Some(b) => &b.store,
            None => {
                empty = SessionStore::new(1, None)?;
                &empty
            }
        };
        snapshot::write(store, path.as_ref(), &meta)
    }

    /// Restores a processor written by [`SlidingProcessor::snapshot`].
    pub fn restore(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (store, meta) = snapshot::read(path)?;
        super::snapshot_meta::read(path, store, meta)
    }

    pub(crate) fn parts(&self) -> Parts<'_> {
        Parts {
            spec: &self.spec,
            input: &self.input,
            aggs: &self.agg_specs,
            schema: self.bound.as_ref().map(|b| b.input.schema().as_ref()),
            stream_time: self.stream_time,
            emitted_below: self.emitted_below,
            seq: self.seq,
            counters: self.counters,
            rejections: &self.rejections,
            flushed: self.flushed,
        }
    }

    pub(crate) fn from_parts(
        spec: SlidingSpec,
        input: InputSpec,
        aggs: Vec<AggSpec>,
        schema: Option<SchemaRef>,
        store: SessionStore,
        state: RestoredState,
    ) -> Result<Self> {
        let mut p = Self::new(spec, input, aggs)?;
        if let Some(schema) = schema {
            p.bind(schema)?;
            let bound = p.bound.as_mut().expect("bound just now");
            if store.retention() != bound.store.retention() {
                return Err(Error::invalid(
                    "retention",
                    "the snapshot's store retention does not match its parameters",
                ));
            }
            bound.store = store;
        }
        p.stream_time = state.stream_time;
        p.emitted_below = state.emitted_below;
        p.seq = state.seq;
        p.counters = state.counters;
        p.flushed = state.flushed;
        for (reason, count) in state.rejected {
            p.rejections.set_count(reason, count);
        }
        Ok(p)
    }
}

impl Plan {
    /// Classifies the windows found for a record at `t` (in start order), as KIP-450 does.
    fn read(&mut self, found: &[Found], t: i64, d: i64) {
        *self = Self {
            updates: std::mem::take(&mut self.updates),
            ..Self::default()
        };
        self.updates.clear();
        for (i, f) in found.iter().enumerate() {
            let end = f.start + d;
            if end < t {
                self.left_agg = Some(i);
                self.previous = Some(f.time);
            } else if end == t {
                self.left_exists = true;
                if f.time < t {
                    self.previous = Some(f.time);
                }
                self.updates.push(i);
            } else if f.start <= t {
                self.right_agg = Some(i);
                self.updates.push(i);
            } else {
                // Only [t + 1, t + 1 + D] starts after t within the range read.
                self.right_exists = true;
            }
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
        let mut value = Vec::with_capacity(8 + agg_state.len());
        state::join(time, agg_state, &mut value);
        let outcome = store.put(ctx.key, start, end, &value)?;
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
    pub stream_time: Option<i64>,
    pub emitted_below: i64,
    pub seq: u64,
    pub counters: Counters,
    pub rejections: &'a Rejections,
    pub flushed: bool,
}

/// The scalar state a snapshot restores.
#[derive(Debug)]
pub(crate) struct RestoredState {
    pub stream_time: Option<i64>,
    pub emitted_below: i64,
    pub seq: u64,
    pub counters: Counters,
    pub flushed: bool,
    pub rejected: Vec<(Reason, u64)>,
}
