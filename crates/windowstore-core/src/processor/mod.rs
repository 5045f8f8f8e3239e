//! The streaming processor, written once for every window kind (as Flink's `WindowOperator`
//! takes a window assigner): input binding, lifecycle, stream time, the transaction, rejected
//! rows, snapshots, flush, advance and next close. A [`WindowKind`] (sessions, sliding windows)
//! supplies only what differs: how a record is checked and applied, which windows are due, and
//! its own counters and snapshot fields.
//!
//! **A call is a transaction.** [`Processor::process_all`] first binds and checks every chunk
//! of the input (schema, types, every record under `on_invalid="error"`) without touching
//! state; then applies the records to the store under an undo log (`store::journal`), builds
//! the output and the rejected rows, and commits last. Everything a call may change beside the
//! store is one value, `call::CallState`, begun, committed and rolled back with the store: any
//! error on the way rolls all of it back, so that the processor's bytes
//! ([`Processor::to_bytes`]) are exactly what they were before the call.
//!
//! The processor's [`Clock`] decides what gives a record its time and what else moves stream
//! time (the wall clock's reading `now`, given to the calls): its advance runs inside the
//! same transaction, before the call's records.
//!
//! A caller can run code of its own on a call's output inside the transaction (a [`Then`]:
//! the Python bindings finish user-defined aggregates this way); if it fails, the call rolls
//! back like any other failure.

mod batched;
mod bound;
mod call;
mod clock;
mod held;
mod kind;
mod lifecycle;
mod query;
mod records;
mod snapshot;
mod validate;

use arrow_array::RecordBatch;
use arrow_buffer::ScalarBuffer;
use arrow_schema::SchemaRef;

pub use bound::check_durations;
pub use clock::{system_now, Clock};
pub use kind::{Applying, KindCounters, Record, RunOutcome, Unchecked, WindowKind};
pub use query::WindowQuery;
pub use records::{id_fields, Output, LAST, ROW, TAGS};
pub(crate) use records::{ids_of, sort_order, tagged_schema};
pub(crate) use snapshot::IN_MEMORY;

use crate::agg::inputs::Inputs;
use crate::agg::AggSpec;
use crate::emit::{EmitMode, Rows};
use crate::input::key_codec::BatchKeys;
use crate::input::InputSpec;
use crate::reject::{OnInvalid, Reason};
use crate::store::WindowStore;
use crate::{Error, KeyedSession, Result, StoreMetrics};
use bound::Bound;
use call::CallState;
use clock::IdleMark;
use held::{Bounds, Closed, Held};

/// What a caller runs on a call's output before the call commits (`*_then` methods of
/// [`Processor`]); an error from it ([`Error::Callback`] for the caller's own failures) rolls the
/// call back.
pub type Then<'a> = dyn FnMut(&RecordBatch) -> Result<()> + Send + 'a;

/// What applying a call works on ([`Processor::apply_parts`]).
type ApplyParts<'p, K> = (
    &'p K,
    &'p mut Bound<K>,
    &'p mut CallState<<K as WindowKind>::Counters>,
    Counters<<K as WindowKind>::Counters>,
);

/// Appends to `rows`, as final rows, the stored windows not emitted yet whose closing bound (the
/// stored end: see [`WindowKind`]) lies in `[emitted_below, latest]`, in (end, start, key)
/// order.
pub(crate) fn emit_pending<K: WindowKind>(
    store: &K::Store,
    emitted_below: i64,
    latest: i64,
    rows: &mut Rows,
) {
    push_finals::<K>(&store.stored_sessions_by_end(emitted_below, latest), rows);
}

/// Appends the stored windows `due` to `rows` as final rows.
pub(crate) fn push_finals<K: WindowKind>(due: &[KeyedSession<'_>], rows: &mut Rows) {
    rows.reserve_for(due.iter());
    for window in due {
        K::final_row(window, rows);
    }
}

/// A processor's counters: its own, and its window kind's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters<C> {
    /// Input records seen.
    pub records: u64,
    /// Records aggregated into at least one window.
    pub accepted: u64,
    /// Output rows emitted (final windows, or changelog rows).
    pub emitted: u64,
    /// The window kind's counters.
    pub kind: C,
}

impl<C: KindCounters> Counters<C> {
    /// Every counter by name, the processor's first.
    pub fn pairs(&self) -> Vec<(&'static str, u64)> {
        let mut out = vec![
            ("records", self.records),
            ("accepted", self.accepted),
            ("emitted", self.emitted),
        ];
        out.extend(C::NAMES.iter().copied().zip(self.kind.values()));
        out
    }
}

/// A streaming window processor over Arrow record batches, for window kind `K`.
#[derive(Debug)]
pub struct Processor<K: WindowKind> {
    kind: K,
    input: InputSpec,
    agg_specs: Vec<AggSpec>,
    bound: Option<Bound<K>>,
    /// What a call may change beside the store (see `call`).
    call: CallState<K::Counters>,
    /// What gives records their time, and what else moves stream time.
    clock: Clock,
    /// With an idle timeout: when the last record arrived, and stream time just after it.
    idle: Option<IdleMark>,
    /// The idle mark a restored snapshot carried, and the run that wrote it:
    /// [`Self::resume_idle`] keeps it for that run.
    saved_idle: Option<(IdleMark, String)>,
    /// Who drives the processor ([`Self::resume_idle`]), written with the idle mark.
    run: Option<String>,
    /// Whether calls may take the batched path (`batched`); the record path is its model.
    batched: bool,
    /// Calls that took the batched path since the processor was made or restored (not part of
    /// its state: a diagnostic).
    batched_calls: u64,
}

/// A call's input, bound and checked, with the kind's counters after checking.
type CheckedCall<K> = (
    Vec<Chunk<<K as WindowKind>::Prepared>>,
    <K as WindowKind>::Counters,
);

/// One chunk of a call's input, bound and checked.
struct Chunk<P> {
    batch: RecordBatch,
    keys: BatchKeys,
    ticks: ScalarBuffer<i64>,
    checked: Vec<std::result::Result<P, Reason>>,
    /// The batch's aggregate inputs, resolved once.
    inputs: Inputs,
}

impl<K: WindowKind> Processor<K> {
    /// A processor of window kind `kind` over input columns `input`, computing `aggs`.
    pub fn new(kind: K, input: InputSpec, aggs: Vec<AggSpec>) -> Result<Self> {
        kind.validate(input.time_unit)?;
        let input = InputSpec {
            gap: kind.gap_column().map(str::to_string),
            markers: kind.markers(),
            ..input
        };
        Ok(Self {
            kind,
            input,
            agg_specs: aggs,
            bound: None,
            call: CallState::default(),
            clock: Clock::Event,
            idle: None,
            saved_idle: None,
            run: None,
            batched: true,
            batched_calls: 0,
        })
    }

    /// The processor in records mode (`output="records"`, see `records`): a window that
    /// closes comes out as its input rows tagged with `session_start`, `session_end` and
    /// `session_id`. Needs a kind whose rows belong to one window each (sessions), `final`
    /// mode and no aggregations.
    pub fn with_records(mut self) -> Result<Self> {
        if !K::RECORDS {
            return Err(Error::invalid(
                "output",
                format!(
                    "\"records\" tags rows with their session; a {} has none",
                    K::WHAT
                ),
            ));
        }
        Output::Records.check(self.agg_specs.len(), self.kind.emit())?;
        if self.bound.is_some() {
            return Err(Error::invalid("output", "set before the first batch"));
        }
        self.agg_specs = vec![records::last_agg()];
        self.call.held = Some(Held::default());
        Ok(self)
    }

    /// In records mode, how many rows the processor holds and their Arrow size in bytes.
    pub fn held(&self) -> Option<(usize, usize)> {
        self.call.held.as_ref().map(|h| (h.rows(), h.bytes()))
    }

    /// Calls that took the batched path since the processor was made or restored.
    pub fn batched_calls(&self) -> u64 {
        self.batched_calls
    }

    /// Lets calls take the batched path where it applies (the default), or keeps every call
    /// record by record. Both give the same output, state and counters; the record path is
    /// the model the batched one is tested against.
    pub fn set_batched(&mut self, on: bool) {
        self.batched = on;
    }

    /// The window kind's parameters.
    pub fn kind(&self) -> &K {
        &self.kind
    }

    /// Binds the processor to an input schema now (the first batch does it otherwise). A
    /// processor already bound keeps its schema, and refuses a `schema` whose batches it could
    /// not read (an empty input is checked as a batch with rows would be).
    pub fn bind(&mut self, schema: SchemaRef) -> Result<()> {
        self.bind_as(schema, false)
    }

    /// Binds a processor restored from a snapshot (see `Bound::try_new`).
    fn bind_restored(&mut self, schema: SchemaRef) -> Result<()> {
        self.bind_as(schema, true)
    }

    fn bind_as(&mut self, schema: SchemaRef, restored: bool) -> Result<()> {
        if let Some(bound) = self.bound.as_ref() {
            bound.input.check_schema(schema)?;
        } else {
            self.bound = Some(Bound::try_new(
                &self.kind,
                &self.input,
                &self.agg_specs,
                &schema,
                self.clock,
                self.call.held.is_some(),
                restored,
            )?);
        }
        Ok(())
    }

    /// The output schema (of tagged rows in records mode), once bound.
    pub fn output_schema(&self) -> Option<SchemaRef> {
        self.bound.as_ref().map(|b| b.out_schema().clone())
    }

    /// The input schema, once bound.
    pub fn input_schema(&self) -> Option<SchemaRef> {
        self.bound.as_ref().map(|b| b.input.schema().clone())
    }

    /// Stream time: the largest record time looked at.
    pub fn stream_time(&self) -> Option<i64> {
        self.call.life.stream_time
    }

    /// The processor's counters.
    pub fn counters(&self) -> Counters<K::Counters> {
        self.call.counters
    }

    /// Rejected records counted under `reason`.
    pub fn rejected_count(&self, reason: Reason) -> u64 {
        self.call.life.rejections.count(reason)
    }

    /// Metrics of the underlying store, once bound.
    pub fn store_metrics(&self) -> Option<StoreMetrics> {
        self.bound.as_ref().map(|b| b.store.metrics())
    }

    /// Takes the rejected rows kept so far (input columns plus `reason`), once bound.
    pub fn rejected(&mut self) -> Result<Option<RecordBatch>> {
        match &self.bound {
            Some(b) => self.call.life.rejections.drain(b.input.schema()).map(Some),
            None => Ok(None),
        }
    }

    /// Processes one batch, record by record in row order; returns the batch's output.
    pub fn process(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        self.process_all(std::slice::from_ref(batch))
    }

    /// Processes the chunks of one input in order, as one transaction (see the module doc);
    /// returns their output as one batch. Errors name rows by their number in the whole input.
    pub fn process_all(&mut self, batches: &[RecordBatch]) -> Result<RecordBatch> {
        match batches.first() {
            Some(first) => self.process_table(first.schema(), batches),
            None => Err(Error::invalid(
                "process",
                "no batch to process: give a batch or a table with a schema",
            )),
        }
    }

    /// [`Self::process_all`] of a table of `schema` (which may have no chunk at all): the
    /// first call binds the processor to `schema`, and a failed first call leaves it unbound.
    pub fn process_table(
        &mut self,
        schema: SchemaRef,
        batches: &[RecordBatch],
    ) -> Result<RecordBatch> {
        self.process_table_then(schema, batches, &mut |_| Ok(()))
    }

    /// [`Self::process_table`], running `then` on the output before the call commits.
    pub fn process_table_then(
        &mut self,
        schema: SchemaRef,
        batches: &[RecordBatch],
        then: &mut Then<'_>,
    ) -> Result<RecordBatch> {
        self.process_table_at(schema, batches, None, then)
    }

    /// [`Self::process_table_then`] at the wall clock's reading `now` (epoch milliseconds;
    /// `None`: the system clock), which only the processing-time and idle clocks read: the
    /// clock's advance of stream time comes first, then the records (arrival times
    /// `max(now, stream time)` with a processing-time clock).
    pub fn process_table_at(
        &mut self,
        schema: SchemaRef,
        batches: &[RecordBatch],
        now: Option<i64>,
        then: &mut Then<'_>,
    ) -> Result<RecordBatch> {
        self.call.life.check_usable("process")?;
        let was_bound = self.bound.is_some();
        self.bind(schema)?;
        let wall = self.wall(now);
        let (advance, arrival) = match (self.clock, wall) {
            (Clock::Processing, Some(wall)) => {
                let at = self.arrival(wall);
                (Some(at), at)
            }
            (Clock::Idle(_), Some(wall)) => (self.idle_target(wall), 0),
            _ => (None, 0),
        };
        let result = self.transaction(batches, advance, arrival, then);
        if result.is_err() && !was_bound {
            self.bound = None;
        }
        let out = result?;
        if let (Clock::Idle(_), Some(wall), Some(st)) =
            (self.clock, wall, self.call.life.stream_time)
        {
            // The idle period starts again with records (or starts at the first call).
            if self.idle.is_none() || batches.iter().any(|b| b.num_rows() > 0) {
                self.restart_idle(wall, st);
            }
        }
        match (out, self.output_schema()) {
            (Some(out), _) => Ok(out),
            (None, Some(schema)) => Ok(RecordBatch::new_empty(schema)),
            (None, None) => Err(Error::invalid("process", "the processor has no schema")),
        }
    }

    /// End of input: in `final` mode emits every window not emitted yet. The processor takes
    /// no more input afterwards. `None` before the processor has seen a schema.
    pub fn flush(&mut self) -> Result<Option<RecordBatch>> {
        self.flush_then(&mut |_| Ok(()))
    }

    /// [`Self::flush`], running `then` on the output (if any) before the processor is marked
    /// flushed: if it fails, the processor is as it was and can flush again.
    pub fn flush_then(&mut self, then: &mut Then<'_>) -> Result<Option<RecordBatch>> {
        self.call.life.check_usable("flush")?;
        let Some(bound) = self.bound.as_ref() else {
            self.call.life.flushed = true;
            return Ok(None);
        };
        let mut rows = Rows::default();
        if self.kind.emit() == EmitMode::Final {
            emit_pending::<K>(
                &bound.store,
                self.call.life.emitted_below,
                i64::MAX,
                &mut rows,
            );
        }
        let mark = self.begin_call();
        let out = match self
            .output_of(&rows)
            .and_then(|out| then(&out).map(|()| out))
        {
            Ok(out) => out,
            Err(e) => {
                self.rollback_call(&mark)?;
                return Err(e);
            }
        };
        self.call.life.flushed = true;
        if self.kind.emit() == EmitMode::Final {
            self.call.life.emitted_below = i64::MAX;
        }
        self.call.counters.emitted += rows.len() as u64;
        self.commit_call();
        Ok(Some(out))
    }

    /// In `final` mode, the earliest stream time at which a window not emitted yet closes
    /// (stream time then exceeds its closing bound plus grace); `None` when none is stored, and
    /// in the changelog modes, which emit nothing at close.
    pub fn next_close(&self) -> Option<i64> {
        let bound = self
            .bound
            .as_ref()
            .filter(|_| self.kind.emit() == EmitMode::Final)?;
        let first = bound
            .store
            .earliest_stored_end(self.call.life.emitted_below)?;
        Some(
            first
                .saturating_add(K::grace(&bound.ticks))
                .saturating_add(1),
        )
    }

    /// Applies an advance of stream time to `advance`, then `batches` (with `arrival` as the
    /// records' times if they are arrival times), all or nothing.
    fn transaction(
        &mut self,
        batches: &[RecordBatch],
        advance: Option<i64>,
        arrival: i64,
        then: &mut Then<'_>,
    ) -> Result<Option<RecordBatch>> {
        let (chunks, checked_counters) = self.prepare(batches, arrival)?;
        if self.bound.is_none() {
            return Err(Error::invalid(
                "process",
                "the processor has no input schema yet",
            ));
        }
        let mut mark = self.begin_call();
        let mut batched = if self.call.sparse_calls > 0 {
            self.call.sparse_calls -= 1;
            false
        } else {
            self.batchable(&chunks, advance)
        };
        let mut applied = if batched {
            self.apply_batched(&chunks, checked_counters, advance)
        } else {
            self.apply(&chunks, checked_counters, advance)
        };
        if batched && applied.is_err() {
            // The record path gives the call's exact outcome, or its error naming the record.
            self.rollback_call(&mark)?;
            mark = self.begin_call();
            batched = false;
            applied = self.apply(&chunks, checked_counters, advance);
        }
        let applied = applied
            .and_then(|(rows, counters)| Ok((self.output_of(&rows)?, counters)))
            .and_then(|(out, counters)| then(&out).map(|()| (out, counters)));
        match applied {
            Ok((out, counters)) => {
                self.call.counters = counters;
                self.commit_call();
                self.batched_calls += u64::from(batched);
                Ok(Some(out))
            }
            Err(e) => {
                self.rollback_call(&mark)?;
                Err(e)
            }
        }
    }

    /// The output batch of `rows`: the windows, or in records mode the tagged rows of these
    /// closed sessions, taken out of the held rows (journaled: the caller commits or rolls
    /// back).
    fn output_of(&mut self, rows: &Rows) -> Result<RecordBatch> {
        let bound = self
            .bound
            .as_mut()
            .ok_or_else(|| Error::invalid("process", "the processor has no input schema yet"))?;
        let windows = bound.build(rows)?;
        let Some(held) = self.call.held.as_mut() else {
            return Ok(windows);
        };
        let bounds: Vec<Bounds<'_>> = held::bounds(rows).collect();
        let schema = bound.out_schema().clone();
        let closed = Closed {
            windows: &windows,
            bounds: &bounds,
            keys: bound.input.keys.fields().len(),
            schema: &schema,
        };
        held.take(bound.store.keys_mut(), &closed)
    }

    /// Binds and checks every chunk without changing any state; returns them with the kind's
    /// counters after checking (clamped gaps), for the commit.
    fn prepare(&self, batches: &[RecordBatch], arrival: i64) -> Result<CheckedCall<K>> {
        let mut scratch = self.call.counters.kind;
        let Some(bound) = self.bound.as_ref() else {
            return Ok((Vec::new(), scratch));
        };
        let mut offset = 0;
        let mut chunks = Vec::with_capacity(batches.len());
        for batch in batches {
            let batch = bound.input.conform(batch)?;
            let keys = bound.input.keys.encode(&batch)?;
            let times = bound.input.time.read_at(&batch, arrival);
            let gaps = bound.input.gap.as_ref().map(|g| g.read(&batch));
            let flags = bound.input.markers.as_ref().map(|m| m.read(&batch));
            let mut checked = Vec::with_capacity(batch.num_rows());
            for row in 0..batch.num_rows() {
                let record = Unchecked {
                    null_key: keys.null[row],
                    time: times.problem(row),
                    t: times.ticks[row],
                    column_gap: gaps.as_ref().and_then(|g| g[row]),
                    flags: flags.as_ref().map_or(0, |f| f[row]),
                };
                let result = K::check(&bound.ticks, record, &mut scratch);
                if let (Err(reason), OnInvalid::Error) = (result, self.kind.on_invalid()) {
                    return Err(Error::InvalidRecord {
                        row: offset + row,
                        reason: reason.as_str().to_string(),
                    });
                }
                checked.push(result);
            }
            let inputs = bound.inputs(&batch, self.call.life.seq + offset as u64)?;
            offset += batch.num_rows();
            chunks.push(Chunk {
                inputs,
                batch,
                keys,
                ticks: times.ticks,
                checked,
            });
        }
        Ok((chunks, scratch))
    }

    /// What applying a call works on: the kind, the bound parts and the call state, and the
    /// counters to commit (the processor's, with the kind's `checked` ones).
    fn apply_parts(&mut self, checked: K::Counters) -> Result<ApplyParts<'_, K>> {
        let Self {
            kind, bound, call, ..
        } = self;
        let bound = bound
            .as_mut()
            .ok_or_else(|| Error::invalid("process", "the processor has no input schema yet"))?;
        let counters = Counters {
            kind: checked,
            ..call.counters
        };
        Ok((kind, bound, call, counters))
    }

    /// Applies checked chunks to the store (journaled by the caller); returns the output rows
    /// with the counters to commit.
    fn apply(
        &mut self,
        chunks: &[Chunk<K::Prepared>],
        checked: K::Counters,
        advance: Option<i64>,
    ) -> Result<(Rows, Counters<K::Counters>)> {
        let (kind, bound, call, mut counters) = self.apply_parts(checked)?;
        let CallState { life, held, .. } = call;
        let ticks = bound.ticks;
        let grace = K::grace(&ticks);
        let mode = kind.emit();
        let mut step = bound.step(mode, life, &mut counters.kind);
        let mut scratch = K::Scratch::default();
        if let Some(t) = advance {
            life.observe(t);
        }
        if let Some(held) = held.as_mut() {
            held.open(life.seq);
        }
        for chunk in chunks {
            K::read_ahead(step.store, &mut scratch, &chunk.keys.rows);
            for (row, checked) in chunk.checked.iter().enumerate() {
                let seq = life.seq;
                life.seq += 1;
                counters.records += 1;
                let prepared = match *checked {
                    Ok(p) => p,
                    Err(reason) => {
                        life.rejections.reject(row, reason);
                        continue;
                    }
                };
                let t = chunk.ticks[row];
                let stream_time = life.observe(t);
                step.close = stream_time.saturating_sub(grace);
                let key = chunk.keys.rows.row(row);
                let record = Record {
                    key: key.as_ref(),
                    inputs: &chunk.inputs,
                    row,
                    t,
                    seq,
                    stream_time,
                    prepared,
                };
                if !K::step(&ticks, &mut step, &mut scratch, record)? {
                    life.rejections.reject(row, Reason::Late);
                    continue;
                }
                counters.accepted += 1;
                if let Some(held) = held.as_mut() {
                    // Held now: its session may close and leave the store before the call ends.
                    let table = step.store.keys_mut();
                    let id = table.get(key.as_ref()).ok_or_else(held::unstored)?;
                    held.hold(table, id, seq);
                }
            }
            life.rejections.finish_batch(&chunk.batch)?;
        }
        if let Some(held) = held.as_mut() {
            held.close(chunks.iter().map(|c| (&c.batch, &c.ticks)))?;
        }
        life.latest_end = step.latest_end;
        let rows = if mode == EmitMode::Final {
            if let Some(st) = life.stream_time {
                step.close = st.saturating_sub(grace);
                step.emit_closed();
            }
            life.emitted_below = step.emitted_below;
            std::mem::take(&mut step.finals)
        } else {
            match K::changelog_rows(&step, &mut scratch)? {
                Some(rows) => rows,
                None => step.changelog.take(),
            }
        };
        counters.emitted += rows.len() as u64;
        Ok((rows, counters))
    }
}
