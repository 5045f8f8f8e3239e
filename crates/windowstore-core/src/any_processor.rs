//! A processor of any window kind behind one object-safe trait, for callers that choose the
//! kind at run time (the Python bindings expose one class over it), and restoring a snapshot
//! of whichever kind it holds.

use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::processor::{Clock, Processor, Then, WindowKind, WindowQuery, IN_MEMORY};
use crate::reject::Reason;
use crate::session::{CappedSessionSpec, SessionSpec};
use crate::sliding::SlidingSpec;
use crate::store::snapshot_format as snapshot;
use crate::{Error, Result, StoreMetrics};

/// What every processor does, whatever its window kind (see [`Processor`]).
pub trait AnyProcessor: Send + Sync + std::fmt::Debug {
    /// The kind's snapshot tag (`session-processor/2`, `sliding-processor/1`, ...).
    fn kind_tag(&self) -> &'static str;
    /// See [`Processor::process_table_at`].
    fn process_table(
        &mut self,
        schema: SchemaRef,
        batches: &[RecordBatch],
        now: Option<i64>,
        then: &mut Then<'_>,
    ) -> Result<RecordBatch>;
    /// See [`Processor::flush_then`].
    fn flush(&mut self, then: &mut Then<'_>) -> Result<Option<RecordBatch>>;
    /// See [`Processor::advance_at`].
    fn advance(
        &mut self,
        t: i64,
        now: Option<i64>,
        then: &mut Then<'_>,
    ) -> Result<Option<RecordBatch>>;
    /// See [`Processor::poll_then`].
    fn poll(&mut self, now: Option<i64>, then: &mut Then<'_>) -> Result<Option<RecordBatch>>;
    /// See [`Processor::clock`].
    fn clock(&self) -> Clock;
    /// See [`Processor::resume_idle`].
    fn resume_idle(&mut self, run: Option<&str>);
    /// See [`Processor::held`].
    fn held(&self) -> Option<(usize, usize)>;
    /// See [`Processor::next_close`].
    fn next_close(&self) -> Option<i64>;
    /// See [`Processor::rejected`].
    fn rejected(&mut self) -> Result<Option<RecordBatch>>;
    /// Every counter by name (see [`crate::processor::Counters::pairs`]).
    fn counter_pairs(&self) -> Vec<(&'static str, u64)>;
    /// See [`Processor::rejected_count`].
    fn rejected_count(&self, reason: Reason) -> u64;
    /// See [`Processor::stream_time`].
    fn stream_time(&self) -> Option<i64>;
    /// See [`Processor::store_metrics`].
    fn store_metrics(&self) -> Option<StoreMetrics>;
    /// See [`Processor::output_schema`].
    fn output_schema(&self) -> Option<SchemaRef>;
    /// See [`Processor::key_schema`].
    fn key_schema(&self) -> Option<SchemaRef>;
    /// See [`Processor::windows`].
    fn windows(&self, query: &WindowQuery) -> Result<Option<RecordBatch>>;
    /// See [`Processor::snapshot`].
    fn snapshot(&self, path: &Path) -> Result<()>;
    /// See [`Processor::to_bytes`].
    fn to_bytes(&self) -> Result<Vec<u8>>;
    /// See [`Processor::set_batched`].
    fn set_batched(&mut self, on: bool);
    /// See [`Processor::batched_calls`].
    fn batched_calls(&self) -> u64;
}

impl<K: WindowKind> AnyProcessor for Processor<K> {
    fn kind_tag(&self) -> &'static str {
        K::KIND
    }
    fn process_table(
        &mut self,
        schema: SchemaRef,
        batches: &[RecordBatch],
        now: Option<i64>,
        then: &mut Then<'_>,
    ) -> Result<RecordBatch> {
        Processor::process_table_at(self, schema, batches, now, then)
    }
    fn flush(&mut self, then: &mut Then<'_>) -> Result<Option<RecordBatch>> {
        Processor::flush_then(self, then)
    }
    fn advance(
        &mut self,
        t: i64,
        now: Option<i64>,
        then: &mut Then<'_>,
    ) -> Result<Option<RecordBatch>> {
        Processor::advance_at(self, t, now, then)
    }
    fn poll(&mut self, now: Option<i64>, then: &mut Then<'_>) -> Result<Option<RecordBatch>> {
        Processor::poll_then(self, now, then)
    }
    fn clock(&self) -> Clock {
        Processor::clock(self)
    }
    fn resume_idle(&mut self, run: Option<&str>) {
        Processor::resume_idle(self, run);
    }
    fn held(&self) -> Option<(usize, usize)> {
        Processor::held(self)
    }
    fn next_close(&self) -> Option<i64> {
        Processor::next_close(self)
    }
    fn rejected(&mut self) -> Result<Option<RecordBatch>> {
        Processor::rejected(self)
    }
    fn counter_pairs(&self) -> Vec<(&'static str, u64)> {
        self.counters().pairs()
    }
    fn rejected_count(&self, reason: Reason) -> u64 {
        Processor::rejected_count(self, reason)
    }
    fn stream_time(&self) -> Option<i64> {
        Processor::stream_time(self)
    }
    fn store_metrics(&self) -> Option<StoreMetrics> {
        Processor::store_metrics(self)
    }
    fn output_schema(&self) -> Option<SchemaRef> {
        Processor::output_schema(self)
    }
    fn key_schema(&self) -> Option<SchemaRef> {
        Processor::key_schema(self)
    }
    fn windows(&self, query: &WindowQuery) -> Result<Option<RecordBatch>> {
        Processor::windows(self, query)
    }
    fn snapshot(&self, path: &Path) -> Result<()> {
        Processor::snapshot(self, path)
    }
    fn to_bytes(&self) -> Result<Vec<u8>> {
        Processor::to_bytes(self)
    }
    fn set_batched(&mut self, on: bool) {
        Processor::set_batched(self, on);
    }
    fn batched_calls(&self) -> u64 {
        Processor::batched_calls(self)
    }
}

/// The processor in snapshot `bytes` (of a file at `path`, or `None` for bytes from memory),
/// whatever its kind; `expect` (a kind tag) refuses any other kind (sessions with and
/// without `max_duration` count as one).
pub fn restore_any(
    bytes: &[u8],
    path: Option<&Path>,
    expect: Option<&str>,
) -> Result<Box<dyn AnyProcessor>> {
    let name = path.unwrap_or(Path::new(IN_MEMORY));
    let decoded = snapshot::decode_tables(name, bytes)?;
    let meta = &decoded.1;
    let tagged =
        |tag: &str, prefix: &str| meta.get(&format!("{prefix}kind")).is_some_and(|v| v == tag);
    let kind = if tagged(SessionSpec::KIND, SessionSpec::PREFIX) {
        SessionSpec::KIND
    } else if tagged(CappedSessionSpec::KIND, CappedSessionSpec::PREFIX) {
        CappedSessionSpec::KIND
    } else if tagged(SlidingSpec::KIND, SlidingSpec::PREFIX) {
        SlidingSpec::KIND
    } else {
        return Err(Error::snapshot(name, "not a processor snapshot"));
    };
    // Sessions with and without a cap are one kind to the caller (one Python class).
    let family = |tag: &str| match tag {
        t if t == SessionSpec::KIND || t == CappedSessionSpec::KIND => SessionSpec::WHAT,
        t if t == SlidingSpec::KIND => SlidingSpec::WHAT,
        _ => "",
    };
    if let Some(expected) = expect.filter(|&e| family(e) != family(kind)) {
        return Err(Error::snapshot(
            name,
            format!("a {kind} snapshot, not a {expected} one"),
        ));
    }
    Ok(if kind == SessionSpec::KIND {
        Box::new(Processor::<SessionSpec>::from_parts(name, decoded)?)
    } else if kind == CappedSessionSpec::KIND {
        Box::new(Processor::<CappedSessionSpec>::from_parts(name, decoded)?)
    } else {
        Box::new(Processor::<SlidingSpec>::from_parts(name, decoded)?)
    })
}
