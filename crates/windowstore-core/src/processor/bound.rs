//! Everything a processor has once the input schema is known: the bound input columns, the
//! aggregates, the output builder, the store, and the parameters in ticks, resolved against
//! the time column by the one duration check ([`check_durations`] runs it before any data).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::kind::{Applying, WindowKind};
use super::lifecycle::Lifecycle;
use super::records;
use super::{Clock, Processor};
use crate::agg::inputs::Inputs;
use crate::agg::{AggSpec, Aggregator};
use crate::emit::{Changelog, EmitMode, Rows};
use crate::input::time::TimeColumn;
use crate::input::{plain_schema, BoundInput, InputSpec};
use crate::output::{Layout, OutputBuilder};
use crate::store::WindowStore;
use crate::time::TimeBase;
use crate::{Error, Result, SessionStore};

/// The kind's durations and the clock's idle timeout in ticks of the time column `time`: the
/// one check of every duration against the column (docs/semantics.md section 1), which
/// binding runs and [`super::check_durations`] offers the other layers.
pub(crate) fn resolve_durations<K: WindowKind>(
    kind: &K,
    clock: Clock,
    base: &TimeBase,
) -> Result<K::Ticks> {
    let ticks = kind.resolve(base)?;
    clock.check(base)?;
    Ok(ticks)
}

/// Checks `kind`'s durations and `clock`'s idle timeout as a processor of `input` would
/// against a time column of type `time_type` (`None` with a processing-time clock, which reads
/// no column): the errors construction and the first call would raise, raised now, for layers
/// that know the column's type before any data (a Spark plan, the CLI's file). Complete mode
/// checks as a processor does (grace and retention at their defaults).
pub fn check_durations<K: WindowKind>(
    kind: K,
    clock: Clock,
    input: InputSpec,
    time_type: Option<&arrow_schema::DataType>,
) -> Result<()> {
    let p = Processor::new(kind, input, Vec::new())?.with_clock(clock)?;
    let time = match (time_type, clock) {
        (None, Clock::Processing) => TimeColumn::arrival(),
        (Some(t), clock) if clock != Clock::Processing => {
            let field = arrow_schema::Field::new(&p.input.time, t.clone(), true);
            let schema = arrow_schema::Schema::new(vec![field]);
            TimeColumn::try_new(&p.input.time, p.input.time_unit, &schema)?
        }
        (Some(_), _) => {
            return Err(Error::invalid(
                "time_type",
                "a processing-time processor reads no time column; give no type",
            ))
        }
        (None, _) => {
            return Err(Error::invalid(
                "time_type",
                "an event-time processor needs the type of its time column",
            ))
        }
    };
    resolve_durations(&p.kind, p.clock, &time.base()).map(drop)
}

/// A processor's parts that exist once the input schema is known.
#[derive(Debug)]
pub(crate) struct Bound<K: WindowKind> {
    pub input: BoundInput,
    pub aggs: Aggregator,
    pub output: OutputBuilder,
    pub store: K::Store,
    pub ticks: K::Ticks,
    /// Records mode: the schema of the tagged rows it outputs.
    pub records: Option<SchemaRef>,
}

impl<K: WindowKind> Bound<K> {
    /// Binds `input` and `aggs` to `schema` (view types read as plain types) for `kind` and
    /// `clock` (a processing-time clock's record times are arrival times). A `restored`
    /// processor keeps bare integer durations and integer gaps as ticks of a timestamp column,
    /// and a `time_unit` given with one: a snapshot written before they were refused there ran
    /// with them, and its windows depend on it.
    pub fn try_new(
        kind: &K,
        input: &InputSpec,
        aggs: &[AggSpec],
        schema: &SchemaRef,
        clock: Clock,
        records: bool,
        restored: bool,
    ) -> Result<Self> {
        let schema = plain_schema(schema);
        let arrival = clock == Clock::Processing;
        let input = BoundInput::bind(input, schema.clone(), arrival, restored)?;
        let base = if restored {
            TimeBase::integer(input.time.unit())
        } else {
            input.time.base()
        };
        let ticks = resolve_durations(kind, clock, &base)?;
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
        let store = kind.new_store(&ticks)?;
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

    /// The state a call of `mode` works on: the store and aggregates, where `life` stands, and
    /// the kind's `counters` to count into.
    pub fn step<'a>(
        &'a mut self,
        mode: EmitMode,
        life: &Lifecycle,
        counters: &'a mut K::Counters,
    ) -> Applying<'a, K> {
        Applying {
            store: &mut self.store,
            aggs: &self.aggs,
            keys: &self.input.keys,
            mode,
            close: i64::MIN,
            changelog: Changelog::new(mode),
            finals: Rows::default(),
            emitted_below: life.emitted_below,
            latest_end: life.latest_end,
            counters,
        }
    }

    /// Replaces the (empty) store with a restored one of the same retention.
    pub fn restore_store(&mut self, store: SessionStore) -> Result<()> {
        self.store.restore_from(store)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{RecordBatch, StringArray, TimestampMicrosecondArray};
    use arrow_schema::{DataType, Field, Schema, TimeUnit};

    use super::*;
    use crate::reject::OnInvalid;
    use crate::session::{GapSpec, SessionSpec};
    use crate::time::Duration;

    fn batch(times: Vec<i64>) -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        ]);
        let keys = StringArray::from(vec!["a"; times.len()]);
        let times = TimestampMicrosecondArray::from(times);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(keys), Arc::new(times)]).unwrap()
    }

    fn processor() -> Processor<SessionSpec> {
        let spec = SessionSpec {
            gap: GapSpec::Fixed(Duration::Ticks(10)),
            grace: Duration::Ticks(0),
            retention: None,
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        };
        let input = InputSpec {
            key: vec!["k".into()],
            time: "ts".into(),
            time_unit: None,
            gap: None,
            markers: Default::default(),
        };
        Processor::new(spec, input, vec![AggSpec::count()]).unwrap()
    }

    #[test]
    fn a_snapshot_with_bare_integers_on_a_timestamp_column_still_restores() {
        let mut fresh = processor();
        let before = fresh.to_bytes().unwrap();
        let err = fresh.process(&batch(vec![0, 5])).unwrap_err();
        assert!(err.to_string().contains("is a bare integer"), "{err}");
        assert_eq!(fresh.to_bytes().unwrap(), before);
        // A snapshot written before the rule: the integers were ticks of the column.
        let mut old = processor();
        old.bind_restored(batch(vec![]).schema()).unwrap();
        old.process(&batch(vec![0, 5])).unwrap();
        let bytes = old.to_bytes().unwrap();
        let mut restored = Processor::<SessionSpec>::from_bytes(&bytes).unwrap();
        assert_eq!(restored.to_bytes().unwrap(), bytes);
        // Gap 10 us: the session [0, 5] closes at stream time 100.
        assert_eq!(restored.process(&batch(vec![100])).unwrap().num_rows(), 1);
    }

    #[test]
    fn a_time_unit_with_a_timestamp_is_refused_fresh_and_kept_restored() {
        let with_unit = || {
            let mut p = processor();
            p.input.time_unit = Some(TimeUnit::Second);
            p.kind.gap = GapSpec::Fixed(Duration::Nanos(10_000));
            p
        };
        let mut fresh = with_unit();
        let before = fresh.to_bytes().unwrap();
        let err = fresh.process(&batch(vec![0, 5])).unwrap_err();
        assert_eq!(err.invalid_parameter(), Some("time_unit"), "{err:?}");
        assert_eq!(fresh.to_bytes().unwrap(), before);
        // A snapshot written before the rule (Spark records mode gave time_unit="us").
        let mut old = with_unit();
        old.bind_restored(batch(vec![]).schema()).unwrap();
        old.process(&batch(vec![0, 5])).unwrap();
        let bytes = old.to_bytes().unwrap();
        let mut restored = Processor::<SessionSpec>::from_bytes(&bytes).unwrap();
        assert_eq!(restored.process(&batch(vec![100])).unwrap().num_rows(), 1);
    }
}
