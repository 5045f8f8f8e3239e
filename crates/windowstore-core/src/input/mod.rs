//! Input binding: which columns of an Arrow batch are the key, the time, the gap and the markers,
//! checked once against the schema, then read batch by batch into plain slices the engines loop
//! over.

mod conform;
pub mod gap;
pub mod key_codec;
pub mod markers;
pub(crate) mod order;
pub mod time;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema, SchemaRef, TimeUnit};

use crate::{Error, Result};

pub use conform::{plain_batch, plain_schema};
pub use gap::GapColumn;
pub use key_codec::{KeyCodec, KeyView};
pub use markers::{MarkerColumns, Markers};
pub use time::TimeColumn;

/// The columns an engine reads, by name, as the caller gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSpec {
    /// Key columns (one or more).
    pub key: Vec<String>,
    /// The time column.
    pub time: String,
    /// The tick of an integer time column (refused for a timestamp column); default
    /// milliseconds.
    pub time_unit: Option<TimeUnit>,
    /// The dynamic-gap column, if any.
    pub gap: Option<String>,
    /// The columns that mark records starting or ending a session, if any.
    pub markers: Markers,
}

/// An [`InputSpec`] checked against a schema.
#[derive(Debug)]
pub struct BoundInput {
    schema: SchemaRef,
    /// The key columns and their byte encoding.
    pub keys: KeyCodec,
    /// The time column and its unit.
    pub time: TimeColumn,
    /// The gap column, for dynamic gaps.
    pub gap: Option<GapColumn>,
    /// The marker columns, for sessions that a record starts or ends.
    pub markers: Option<MarkerColumns>,
}

impl BoundInput {
    /// Checks `spec` against `schema` (the first batch's): every column exists with a usable
    /// type, and no column name appears twice. The bound schema is `schema` decoded (see
    /// [`plain_schema`]) with every column nullable.
    pub fn try_new(spec: &InputSpec, schema: SchemaRef) -> Result<Self> {
        Self::bind(spec, schema, false, false)
    }

    /// [`Self::try_new`]; with `arrival`, the records' times are their arrival times
    /// ([`TimeColumn::arrival`]) and `spec.time` names no column. A `restored` processor's
    /// input keeps what a snapshot written before they were refused ran with: a `time_unit`
    /// with a timestamp column (it was ignored) and integer gaps next to one (ticks of it).
    pub(crate) fn bind(
        spec: &InputSpec,
        schema: SchemaRef,
        arrival: bool,
        restored: bool,
    ) -> Result<Self> {
        if spec.key.is_empty() {
            return Err(Error::invalid("key", "at least one key column is required"));
        }
        let schema = conform::bound_schema(&schema)?;
        let keys = KeyCodec::try_new(&spec.key, &schema)?;
        let time = if arrival {
            TimeColumn::arrival()
        } else {
            let timestamp = schema
                .field_with_name(&spec.time)
                .is_ok_and(|f| matches!(f.data_type(), DataType::Timestamp(..)));
            let unit = if restored && timestamp {
                None
            } else {
                spec.time_unit
            };
            TimeColumn::try_new(&spec.time, unit, &schema)?
        };
        let gap = spec
            .gap
            .as_deref()
            .map(|name| GapColumn::try_new(name, &time, &schema, restored))
            .transpose()?;
        let markers = MarkerColumns::try_new(&spec.markers, &schema)?;
        Ok(Self {
            schema,
            keys,
            time,
            gap,
            markers,
        })
    }

    /// Refuses a `schema` whose batches [`Self::conform`] would refuse, naming the column: so
    /// that an input without rows is checked as one with rows would be.
    pub fn check_schema(&self, schema: SchemaRef) -> Result<()> {
        self.conform(&RecordBatch::new_empty(schema)).map(drop)
    }

    /// The schema the input was bound to.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// `batch` read into the bound schema, ready for the engines (which find columns by their
    /// bound position): columns taken by name whatever their order, nullability or metadata,
    /// views and dictionaries decoded, `null`-typed columns made all-null of the bound type. A
    /// missing, extra, retyped or doubly named column is a schema error naming it. No copy of a
    /// batch that already has the bound schema.
    pub fn conform(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        conform::conform(&self.schema, batch)
    }
}

/// Index of column `name` in `schema`, or a schema error listing the columns there are.
pub fn column_index(schema: &Schema, name: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        Error::schema(name, format!("no such column; the input has {names:?}"))
    })
}
