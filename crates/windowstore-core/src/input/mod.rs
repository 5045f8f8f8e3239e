//! Input binding: which columns of an Arrow batch are the key, the time and the gap, checked
//! once against the schema, then read batch by batch into plain slices the engines loop over.

pub mod gap;
pub mod keys;
pub(crate) mod order;
pub mod time;

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

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

/// The schema the engines work on: view types (Utf8View, BinaryView: what polars produces) read as
/// Utf8 and Binary, which every aggregation and the output accept. Other types are unchanged.
pub fn plain_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Arc<Field>> = schema
        .fields()
        .iter()
        .map(|f| match plain_type(f.data_type()) {
            Some(t) => Arc::new(f.as_ref().clone().with_data_type(t)),
            None => f.clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` with its view columns cast to their plain types (no copy when it has none).
pub fn plain_batch(batch: &RecordBatch) -> Result<RecordBatch> {
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| plain_type(f.data_type()).is_some())
    {
        return Ok(batch.clone());
    }
    let schema = plain_schema(&batch.schema());
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(c.clone())
            } else {
                arrow_cast::cast(c, f.data_type())
                    .map_err(|e| Error::schema(f.name(), format!("cannot read view type: {e}")))
            }
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(schema, columns).map_err(Error::arrow("reading view columns"))
}

fn plain_type(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Utf8View => Some(DataType::Utf8),
        DataType::BinaryView => Some(DataType::Binary),
        _ => None,
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
