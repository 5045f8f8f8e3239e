//! The output batch of an engine: key columns, window bounds (in the time column's timestamp
//! type, or `Int64` ticks for an integer time column), the aggregates, and `op` in changelog
//! modes.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use crate::agg::Aggregator;
use crate::emit::Rows;
use crate::input::{KeyCodec, TimeColumn};
use crate::{Error, Result};

/// The names of an engine's window columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Name of the window start column.
    pub start: &'static str,
    /// Name of the window end column.
    pub end: &'static str,
    /// Name of the extra time column (sliding windows' `window_time`), if any.
    pub time: Option<&'static str>,
    /// Whether rows carry an `op` column (`upsert` / `delete`).
    pub op: bool,
}

/// Name of the changelog operation column.
pub const OP_COLUMN: &str = "op";

/// Builds output batches of one layout for one bound input.
#[derive(Debug)]
pub struct OutputBuilder {
    schema: SchemaRef,
    layout: Layout,
}

impl OutputBuilder {
    /// The output schema for `keys`, `time` and `aggs`; refuses duplicate column names.
    pub fn try_new(
        keys: &KeyCodec,
        time: &TimeColumn,
        aggs: &Aggregator,
        layout: Layout,
    ) -> Result<Self> {
        let time_field = |name: &str| Arc::new(Field::new(name, time.output_type(), false));
        let mut fields: Vec<FieldRef> = keys.fields().to_vec();
        fields.push(time_field(layout.start));
        fields.push(time_field(layout.end));
        if let Some(name) = layout.time {
            fields.push(time_field(name));
        }
        fields.extend(aggs.output_fields());
        if layout.op {
            fields.push(Arc::new(Field::new(OP_COLUMN, DataType::Utf8, false)));
        }
        let window_columns = [Some(layout.start), Some(layout.end), layout.time]
            .into_iter()
            .flatten()
            .chain(layout.op.then_some(OP_COLUMN));
        for name in window_columns {
            if let Some(key) = keys.fields().iter().find(|f| f.name() == name) {
                return Err(Error::schema(
                    key.name(),
                    format!(
                        "a key column may not be named {name:?}: the output has a column of \
                         that name of its own; rename the key column in the input (pyarrow: \
                         table.rename_columns, polars: df.rename, Spark: withColumnRenamed) \
                         and key= with it"
                    ),
                ));
            }
        }
        let mut seen = HashSet::new();
        for f in &fields {
            if !seen.insert(f.name().clone()) {
                return Err(Error::invalid(
                    "aggs",
                    format!(
                        "output column {:?} appears twice (a key column, a window column or an \
                         aggregate); give the aggregate another name with .alias()",
                        f.name()
                    ),
                ));
            }
        }
        Ok(Self {
            schema: Arc::new(Schema::new(fields)),
            layout,
        })
    }

    /// The output schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// One row per change.
    pub fn build(
        &self,
        keys: &KeyCodec,
        time: &TimeColumn,
        aggs: &Aggregator,
        rows: &Rows,
    ) -> Result<RecordBatch> {
        if rows.is_empty() {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        let mut columns: Vec<ArrayRef> = keys.decode(rows.keys())?;
        columns.push(time.to_array(rows.starts().to_vec()));
        columns.push(time.to_array(rows.ends().to_vec()));
        if self.layout.time.is_some() {
            columns.push(time.to_array(rows.times().to_vec()));
        }
        let states: Vec<&[u8]> = rows.states().collect();
        columns.extend(aggs.finish(&states)?);
        if self.layout.op {
            columns.push(Arc::new(StringArray::from_iter_values(
                rows.deletes()
                    .iter()
                    .map(|&d| if d { "delete" } else { "upsert" }),
            )));
        }
        RecordBatch::try_new(self.schema.clone(), columns).map_err(Error::arrow("building output"))
    }
}
