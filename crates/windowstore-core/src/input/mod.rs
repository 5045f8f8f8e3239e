//! Input binding: which columns of an Arrow batch are the key, the time and the gap, checked
//! once against the schema, then read batch by batch into plain slices the engines loop over.

pub mod gap;
pub mod keys;
pub mod time;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef, TimeUnit};

use crate::{Error, Result};

pub use gap::GapColumn;
pub use keys::{KeyCodec, KeyView};
pub use time::TimeColumn;

/// The columns an engine reads, by name, as the caller gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSpec {
    /// Key columns (one or more).
    pub key: Vec<String>,
    /// The time column.
    pub time: String,
    /// The tick of an integer time column (ignored for timestamp columns); default milliseconds.
    pub time_unit: Option<TimeUnit>,
    /// The dynamic-gap column, if any.
    pub gap: Option<String>,
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
}

impl BoundInput {
    /// Checks `spec` against `schema`: every column exists with a usable type.
    pub fn try_new(spec: &InputSpec, schema: SchemaRef) -> Result<Self> {
        if spec.key.is_empty() {
            return Err(Error::invalid("key", "at least one key column is required"));
        }
        let keys = KeyCodec::try_new(&spec.key, &schema)?;
        let time = TimeColumn::try_new(&spec.time, spec.time_unit, &schema)?;
        let gap = spec
            .gap
            .as_deref()
            .map(|name| GapColumn::try_new(name, time.unit(), &schema))
            .transpose()?;
        Ok(Self {
            schema,
            keys,
            time,
            gap,
        })
    }

    /// The schema the input was bound to.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Checks that `batch` has the bound schema (column names and types; metadata ignored).
    pub fn check(&self, batch: &RecordBatch) -> Result<()> {
        if batch.schema().fields() == self.schema.fields() {
            return Ok(());
        }
        Err(schema_change(&self.schema, &batch.schema()))
    }
}

/// Index of column `name` in `schema`, or a schema error listing the columns there are.
pub fn column_index(schema: &Schema, name: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        Error::schema(name, format!("no such column; the input has {names:?}"))
    })
}

fn schema_change(bound: &Schema, got: &Schema) -> Error {
    for field in bound.fields() {
        match got.field_with_name(field.name()) {
            Err(_) => return Error::schema(field.name(), "missing from this batch"),
            Ok(f) if f.data_type() != field.data_type() => {
                return Error::schema(
                    field.name(),
                    format!(
                        "type {} in this batch, {} in earlier ones",
                        f.data_type(),
                        field.data_type()
                    ),
                )
            }
            Ok(_) => {}
        }
    }
    let extra = got
        .fields()
        .iter()
        .find(|f| bound.field_with_name(f.name()).is_err())
        .map_or("?".to_string(), |f| f.name().clone());
    Error::schema(extra, "not in the schema of earlier batches")
}
