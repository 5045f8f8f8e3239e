//! Everything a processor has once the input schema is known: the bound input columns, the
//! aggregates, the output builder, the store, and the parameters in ticks.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::kind::WindowKind;
use super::records;
use super::Clock;
use crate::agg::inputs::Inputs;
use crate::agg::{AggSpec, Aggregator};
use crate::emit::{EmitMode, Rows};
use crate::input::time::TimeColumn;
use crate::input::{plain_schema, BoundInput, InputSpec};
use crate::output::{Layout, OutputBuilder};
use crate::{Error, Result, SessionStore};

/// The kind's durations and the clock's idle timeout in ticks of the time column `time`: the
/// one check of every duration against the column (docs/semantics.md section 1), which
/// binding runs and [`super::check_durations`] offers the other layers.
pub(crate) fn resolve_durations<K: WindowKind>(
    kind: &K,
    clock: Clock,
    time: &TimeColumn,
) -> Result<K::Ticks> {
    let base = time.base();
    let ticks = kind.resolve(&base)?;
    clock.check(&base)?;
    Ok(ticks)
}

/// A processor's parts that exist once the input schema is known.
#[derive(Debug)]
pub(crate) struct Bound<K: WindowKind> {
    pub input: BoundInput,
    pub aggs: Aggregator,
    pub output: OutputBuilder,
    pub store: SessionStore,
    pub ticks: K::Ticks,
    /// Records mode: the schema of the tagged rows it outputs.
    pub records: Option<SchemaRef>,
}

impl<K: WindowKind> Bound<K> {
    /// Binds `input` and `aggs` to `schema` (view types read as plain types) for `kind` and
    /// `clock` (a processing-time clock's record times are arrival times).
    pub fn try_new(
        kind: &K,
        input: &InputSpec,
        aggs: &[AggSpec],
        schema: &SchemaRef,
        clock: Clock,
        records: bool,
    ) -> Result<Self> {
        let schema = plain_schema(schema);
        let input = BoundInput::bind(input, schema.clone(), clock == Clock::Processing)?;
        let ticks = resolve_durations(kind, clock, &input.time)?;
        let (aggs, records) = if records {
            let tagged = records::tagged_schema(input.schema(), &input.time.output_type())?;
            let numbered = records::with_row_field(input.schema());
            (Aggregator::try_new(aggs.to_vec(), &numbered)?, Some(tagged))
        } else {
            (Aggregator::try_new(aggs.to_vec(), &schema)?, None)
        };
        let layout = Layout {
            op: kind.emit() != EmitMode::Final,
            ..K::LAYOUT
        };
        let output = OutputBuilder::try_new(&input.keys, &input.time, &aggs, layout)?;
        let store = SessionStore::new(K::retention(&ticks), None)?;
        Ok(Self {
            input,
            aggs,
            output,
            store,
            ticks,
            records,
        })
    }

    /// The schema of what the processor outputs: tagged rows in records mode, else windows.
    pub fn out_schema(&self) -> &SchemaRef {
        self.records.as_ref().unwrap_or(self.output.schema())
    }

    /// The aggregate inputs of `batch`, whose first row arrives `first` (records mode numbers
    /// the rows for its hidden aggregate).
    pub fn inputs(&self, batch: &RecordBatch, first: u64) -> Result<Inputs> {
        if self.records.is_none() {
            return Ok(self.aggs.inputs(batch));
        }
        let first = i64::try_from(first).unwrap_or(i64::MAX);
        Ok(self.aggs.inputs(&records::numbered(batch, first)?))
    }

    /// The output batch of `rows`.
    pub fn build(&self, rows: &Rows) -> Result<RecordBatch> {
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
