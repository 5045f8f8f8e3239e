//! What the streaming processors share around their algorithms: the parts that exist once the
//! input schema is known, and the lifecycle (stream time, arrival counter, rejections, end of
//! input, failure).

use std::collections::HashMap;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{SchemaRef, TimeUnit};

use crate::agg::{AggSpec, Aggregator};
use crate::emit::Change;
use crate::input::{plain_schema, BoundInput, InputSpec};
use crate::output::{Layout, OutputBuilder};
use crate::reject::{Reason, Rejections};
use crate::store::snapshot;
use crate::{Error, Result, SessionStore};

/// Everything that exists once the input schema is known; `T` is the engine's parameters in
/// ticks of the time column.
#[derive(Debug)]
pub(crate) struct Bound<T> {
    pub input: BoundInput,
    pub aggs: Aggregator,
    pub output: OutputBuilder,
    pub store: SessionStore,
    pub ticks: T,
}

impl<T> Bound<T> {
    /// Binds `input` and `aggs` to `schema` (view types read as plain types): `resolve` turns
    /// the parameters into ticks of the time column, `retention` gives the store's retention.
    pub fn try_new(
        input: &InputSpec,
        aggs: &[AggSpec],
        schema: &SchemaRef,
        layout: Layout,
        resolve: impl FnOnce(TimeUnit) -> Result<T>,
        retention: impl FnOnce(&T) -> i64,
    ) -> Result<Self> {
        let schema = plain_schema(schema);
        let input = BoundInput::try_new(input, schema.clone())?;
        let ticks = resolve(input.time.unit())?;
        let aggs = Aggregator::try_new(aggs.to_vec(), &schema)?;
        let output = OutputBuilder::try_new(&input.keys, &input.time, &aggs, layout)?;
        let store = SessionStore::new(retention(&ticks), None)?;
        Ok(Self {
            input,
            aggs,
            output,
            store,
            ticks,
        })
    }

    /// The output batch of `rows`.
    pub fn build(&self, rows: &[Change]) -> Result<RecordBatch> {
        self.output
            .build(&self.input.keys, &self.input.time, &self.aggs, rows)
    }

    /// Replaces the (empty) store with a restored one of the same retention.
    pub fn restore_store(&mut self, store: SessionStore) -> Result<()> {
        if store.retention() != self.store.retention() {
            return Err(Error::invalid(
                "retention",
                "the snapshot's store retention does not match its parameters",
            ));
        }
        self.store = store;
        Ok(())
    }
}

/// Writes `store` (or an empty one, before binding) and the processor's metadata to `path`.
pub(crate) fn write_snapshot<T>(
    bound: Option<&Bound<T>>,
    path: &Path,
    meta: &HashMap<String, String>,
) -> Result<()> {
    let bytes = encode_snapshot(bound, meta)?;
    let staged = snapshot::stage(path, &bytes)?;
    snapshot::commit(&staged, path)
}

/// The snapshot bytes of `store` (or an empty one, before binding) and the processor's
/// metadata: the same bytes a snapshot file holds.
pub(crate) fn encode_snapshot<T>(
    bound: Option<&Bound<T>>,
    meta: &HashMap<String, String>,
) -> Result<Vec<u8>> {
    match bound {
        Some(b) => snapshot::encode(&b.store, meta),
        None => snapshot::encode(&SessionStore::new(1, None)?, meta),
    }
}

/// What names snapshot bytes that came from memory in errors (a file's path names a file).
pub(crate) const IN_MEMORY: &str = "<snapshot bytes>";

/// A processor's progress through its input, beside its windows.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    /// The largest record time looked at.
    pub stream_time: Option<i64>,
    /// Every window below this bound has been emitted (final mode; what "below" means is the
    /// engine's: sessions by reach, sliding windows by end).
    pub emitted_below: i64,
    /// The next record's arrival number.
    pub seq: u64,
    pub rejections: Rejections,
    /// End of input was signalled: no more input.
    pub flushed: bool,
    /// Why an earlier batch failed half-way, leaving partial state.
    pub failed: Option<String>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self {
            stream_time: None,
            emitted_below: i64::MIN,
            seq: 0,
            rejections: Rejections::default(),
            flushed: false,
            failed: None,
        }
    }
}

/// The scalar state a snapshot restores, besides the engine's counters.
#[derive(Debug)]
pub(crate) struct Restored {
    pub stream_time: Option<i64>,
    pub emitted_below: i64,
    pub seq: u64,
    pub flushed: bool,
    pub rejected: Vec<(Reason, u64)>,
}

impl Lifecycle {
    /// Refuses input after a failure or after the end of input.
    pub fn check_usable(&self) -> Result<()> {
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

    /// Notes a batch's result: a `collect` overflow under `fail` stops the batch half-way, so
    /// the processor takes no more input until restored.
    pub fn note(&mut self, result: &Result<RecordBatch>) {
        if let Err(e @ Error::SessionOverflow { .. }) = result {
            self.failed = Some(format!("{e:?}"));
        }
    }

    /// The state a snapshot carried.
    pub fn restore(&mut self, state: Restored) {
        self.stream_time = state.stream_time;
        self.emitted_below = state.emitted_below;
        self.seq = state.seq;
        self.flushed = state.flushed;
        for (reason, count) in state.rejected {
            self.rejections.set_count(reason, count);
        }
    }

    /// Advances stream time to `t`; returns it.
    #[inline]
    pub fn observe(&mut self, t: i64) -> i64 {
        let st = self.stream_time.map_or(t, |s| s.max(t));
        self.stream_time = Some(st);
        st
    }
}

/// The methods both processors have over their shared parts (`bound`, `life`, `counters`),
/// with the same bodies; `$meta` is the processor's snapshot metadata module.
macro_rules! processor_common {
    ($meta:ident) => {
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
            self.life.stream_time
        }

        /// The processor's counters.
        pub fn counters(&self) -> Counters {
            self.counters
        }

        /// Rejected records counted under `reason`.
        pub fn rejected_count(&self, reason: Reason) -> u64 {
            self.life.rejections.count(reason)
        }

        /// Metrics of the underlying store, once bound.
        pub fn store_metrics(&self) -> Option<crate::StoreMetrics> {
            self.bound.as_ref().map(|b| b.store.metrics())
        }

        /// Processes one batch, record by record in row order; returns the batch's output.
        pub fn process(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
            self.life.check_usable()?;
            self.bind(batch.schema())?;
            let result = self.process_bound(batch);
            self.life.note(&result);
            result
        }

        /// Takes the rejected rows kept so far (input columns plus `reason`), once bound.
        pub fn rejected(&mut self) -> Result<Option<RecordBatch>> {
            match &self.bound {
                Some(b) => self.life.rejections.drain(b.input.schema()).map(Some),
                None => Ok(None),
            }
        }

        /// Writes the processor's whole state to `path` atomically (see `store::snapshot`).
        pub fn snapshot(&self, path: impl AsRef<Path>) -> Result<()> {
            let mut meta = HashMap::new();
            $meta::write(self, &mut meta);
            write_snapshot(self.bound.as_ref(), path.as_ref(), &meta)
        }

        /// Restores a processor written by `snapshot`.
        pub fn restore(path: impl AsRef<Path>) -> Result<Self> {
            let path = path.as_ref();
            let (store, meta) = snapshot::read(path)?;
            $meta::read(path, store, meta)
        }

        /// The processor's whole state as bytes (the bytes `snapshot` writes).
        pub fn to_bytes(&self) -> Result<Vec<u8>> {
            let mut meta = HashMap::new();
            $meta::write(self, &mut meta);
            encode_snapshot(self.bound.as_ref(), &meta)
        }

        /// Restores a processor from `to_bytes`; refuses damaged bytes whole.
        pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
            let path = Path::new(IN_MEMORY);
            let (store, meta) = snapshot::decode(path, bytes)?;
            $meta::read(path, store, meta)
        }

        /// Advances stream time to `t` (if later) without a record, as when an external clock,
        /// such as Spark's watermark, says that time has passed. Returns what that emits: in
        /// `final` mode the windows it closes; nothing in the changelog modes. `None` before the
        /// processor has seen a schema (it then holds no window).
        pub fn advance(&mut self, t: i64) -> Result<Option<RecordBatch>> {
            self.life.check_usable()?;
            self.life.observe(t);
            let Some(schema) = self.input_schema() else {
                return Ok(None);
            };
            self.process(&RecordBatch::new_empty(schema)).map(Some)
        }
    };
}

pub(crate) use processor_common;
