//! The dynamic-gap column: per-record gaps as `i64` ticks of the time column's unit.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema, TimeUnit};

use super::column_index;
use super::TimeColumn;
use crate::time::{convert_ticks, nanos_per_tick, unit_name};
use crate::{Error, Result};

/// The gap column: an Arrow duration converted into ticks, or integer ticks of an integer
/// time column.
#[derive(Debug, Clone)]
pub struct GapColumn {
    index: usize,
    name: String,
    time_unit: TimeUnit,
}

impl GapColumn {
    /// Binds column `name`, whose gaps are converted into ticks of the time column `time`.
    /// Integer gaps are ticks, taken only next to an integer time column (whose ticks the
    /// caller writes): next to a timestamp they would silently be ticks of its unit (a Spark
    /// `bigint` next to a Spark timestamp, microseconds), unless `restored` (a snapshot written
    /// before they were refused ran with them; see `Bound::try_new`).
    pub fn try_new(name: &str, time: &TimeColumn, schema: &Schema, restored: bool) -> Result<Self> {
        let index = column_index(schema, name)?;
        match schema.field(index).data_type() {
            t if t.is_integer() && time.is_timestamp() && !restored => {
                return Err(Error::schema(
                    name,
                    format!(
                        "type {t} cannot be a gap column next to the time column {:?}, a \
                         timestamp[{}]: its integers would silently be {} ticks; give gaps as \
                         an Arrow duration (Spark: interval day to second), or use an integer \
                         time column",
                        time.name(),
                        unit_name(time.unit()),
                        unit_name(time.unit()),
                    ),
                ))
            }
            t if t.is_integer() => {}
            DataType::Duration(_) => {}
            other => {
                return Err(Error::schema(
                    name,
                    format!(
                        "type {other} cannot be a gap column; use an Arrow duration (Spark: \
                         interval day to second), or integer ticks with an integer time column"
                    ),
                ))
            }
        }
        Ok(Self {
            index,
            name: name.to_string(),
            time_unit: time.unit(),
        })
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The gaps of `batch` in ticks; `None` where the gap is null or not a whole tick count. A
    /// gap beyond the `i64` range of ticks reads as `i64::MAX` (or `i64::MIN` if negative), so
    /// that it is clamped to `max_gap` (or refused as not positive) like any gap above it.
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
                    .map(|&v| duration_ticks(v, unit, self.time_unit))
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

/// `value` ticks of `from` as ticks of `to`, saturating where it exceeds the `i64` range (only a
/// conversion into a finer unit can, and its result is whole); `None` for a fraction of a tick.
fn duration_ticks(value: i64, from: TimeUnit, to: TimeUnit) -> Option<i64> {
    convert_ticks(value, from, to).or_else(|| {
        let whole = (i128::from(value) * nanos_per_tick(from)) % nanos_per_tick(to) == 0;
        whole.then_some(if value < 0 { i64::MIN } else { i64::MAX })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, DurationSecondArray, Int64Array};
    use arrow_schema::Field;
    use std::sync::Arc;

    fn schema(gap: &DataType, time: DataType) -> Arc<Schema> {
        Arc::new(Schema::new(vec![
            Field::new("g", gap.clone(), true),
            Field::new("t", time, true),
        ]))
    }

    /// The gaps of `column` next to an integer time column of `time_unit`.
    fn gaps(column: ArrayRef, time_unit: TimeUnit) -> Vec<Option<i64>> {
        let schema = schema(column.data_type(), DataType::Int64);
        let time = TimeColumn::try_new("t", Some(time_unit), &schema).unwrap();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                column.clone(),
                Arc::new(Int64Array::from(vec![0; column.len()])),
            ],
        )
        .unwrap();
        GapColumn::try_new("g", &time, &schema, false)
            .unwrap()
            .read(&batch)
    }

    #[test]
    fn integer_gaps_are_refused_next_to_a_timestamp_naming_its_unit() {
        let ts = DataType::Timestamp(TimeUnit::Microsecond, None);
        let schema = schema(&DataType::Int64, ts.clone());
        let time = TimeColumn::try_new("t", None, &schema).unwrap();
        let err = GapColumn::try_new("g", &time, &schema, false).unwrap_err();
        assert!(
            matches!(&err, Error::Schema { column, .. } if column == "g"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "column \"g\": type Int64 cannot be a gap column next to the time column \"t\", \
             a timestamp[us]: its integers would silently be us ticks; give gaps as an Arrow \
             duration (Spark: interval day to second), or use an integer time column"
        );
        // A snapshot that ran with them keeps them; durations are taken.
        assert!(GapColumn::try_new("g", &time, &schema, true).is_ok());
        let durations = self::schema(&DataType::Duration(TimeUnit::Second), ts);
        assert!(GapColumn::try_new("g", &time, &durations, false).is_ok());
    }

    #[test]
    fn durations_beyond_the_tick_range_saturate_so_they_clamp() {
        let huge: ArrayRef = Arc::new(DurationSecondArray::from(vec![
            Some(i64::MAX / 2),
            Some(-i64::MAX / 2),
            Some(3),
            None,
        ]));
        assert_eq!(
            gaps(huge, TimeUnit::Nanosecond),
            vec![Some(i64::MAX), Some(i64::MIN), Some(3_000_000_000), None]
        );
    }

    #[test]
    fn fractions_of_a_tick_stay_invalid() {
        let ms: ArrayRef = Arc::new(arrow_array::DurationMillisecondArray::from(vec![
            1500, 2000,
        ]));
        assert_eq!(gaps(ms, TimeUnit::Second), vec![None, Some(2)]);
        let ticks: ArrayRef = Arc::new(Int64Array::from(vec![7]));
        assert_eq!(gaps(ticks, TimeUnit::Second), vec![Some(7)]);
    }
}
