//! The dynamic-gap column: per-record gaps as `i64` ticks of the time column's unit.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema, TimeUnit};

use super::column_index;
use crate::time::convert_ticks;
use crate::{Error, Result};

/// The gap column: integer ticks, or an Arrow duration converted into ticks.
#[derive(Debug, Clone)]
pub struct GapColumn {
    index: usize,
    name: String,
    time_unit: TimeUnit,
}

impl GapColumn {
    /// Binds column `name`, whose gaps are converted into ticks of `time_unit`.
    pub fn try_new(name: &str, time_unit: TimeUnit, schema: &Schema) -> Result<Self> {
        let index = column_index(schema, name)?;
        match schema.field(index).data_type() {
            t if t.is_integer() => {}
            DataType::Duration(_) => {}
            other => {
                return Err(Error::schema(
                    name,
                    format!(
                        "type {other} cannot be a gap column; use integer ticks or an Arrow \
                         duration"
                    ),
                ))
            }
        }
        Ok(Self {
            index,
            name: name.to_string(),
            time_unit,
        })
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The gaps of `batch` in ticks; `None` where the gap is null or not a whole tick count.
    pub fn read(&self, batch: &RecordBatch) -> Vec<Option<i64>> {
        let column = batch.column(self.index);
        let mut gaps: Vec<Option<i64>> = match column.data_type() {
            DataType::Duration(unit) => {
                let unit = *unit;
                let raw: &[i64] = match unit {
                    TimeUnit::Second => column.as_primitive::<DurationSecondType>().values(),
                    TimeUnit::Millisecond => {
                        column.as_primitive::<DurationMillisecondType>().values()
                    }
                    TimeUnit::Microsecond => {
                        column.as_primitive::<DurationMicrosecondType>().values()
                    }
                    TimeUnit::Nanosecond => {
                        column.as_primitive::<DurationNanosecondType>().values()
                    }
                };
                raw.iter()
                    .map(|&v| convert_ticks(v, unit, self.time_unit))
                    .collect()
            }
            DataType::UInt64 => column
                .as_primitive::<UInt64Type>()
                .values()
                .iter()
                .map(|&v| Some(i64::try_from(v).unwrap_or(i64::MAX)))
                .collect(),
            _ => match arrow_cast::cast(column, &DataType::Int64) {
                Ok(a) => a
                    .as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .map(|&v| Some(v))
                    .collect(),
                Err(_) => vec![None; column.len()],
            },
        };
        if let Some(nulls) = column.logical_nulls() {
            for (row, valid) in nulls.iter().enumerate() {
                if !valid {
                    gaps[row] = None;
                }
            }
        }
        gaps
    }
}
