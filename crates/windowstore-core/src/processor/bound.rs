//! Everything a processor has once the input schema is known: the bound input columns, the
//! aggregates, the output builder, the store, and the parameters in ticks.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::kind::WindowKind;
use crate::agg::{AggSpec, Aggregator};
use crate::emit::{EmitMode, Rows};
use crate::input::{plain_schema, BoundInput, InputSpec};
use crate::output::{Layout, OutputBuilder};
use crate::{Error, Result, SessionStore};

/// A processor's parts that exist once the input schema is known.
#[derive(Debug)]
pub(crate) struct Bound<K: WindowKind> {
    pub input: BoundInput,
    pub aggs: Aggregator,
    pub output: OutputBuilder,
    pub store: SessionStore,
    pub ticks: K::Ticks,
}

impl<K: WindowKind> Bound<K> {
    /// Binds `input` and `aggs` to `schema` (view types read as plain types) for `kind`; with
    /// `arrival`, record times are arrival times (a processing-time clock).
    pub fn try_new(
        kind: &K,
        input: &InputSpec,
        aggs: &[AggSpec],
        schema: &SchemaRef,
        arrival: bool,
    ) -> Result<Self> {
        let schema = plain_schema(schema);
        let input = BoundInput::bind(input, schema.clone(), arrival)?;
        let ticks = kind.resolve(input.time.unit())?;
        let aggs = Aggregator::try_new(aggs.to_vec(), &schema)?;
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
        })
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
