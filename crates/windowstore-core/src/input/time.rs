//! The time column: read as `i64` ticks; window bounds written back as a timestamp of the
//! column's type, or as `Int64` ticks for an integer column.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, Int64Array, PrimitiveArray, RecordBatch};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Schema, TimeUnit};

use super::column_index;
use crate::time::{unit_name, TimeBase};
use crate::{Error, Result};

/// The time column of the input and the unit of its ticks.
#[derive(Debug, Clone)]
pub struct TimeColumn {
    /// The column's position; `None` for arrival times ([`TimeColumn::arrival`]).
    index: Option<usize>,
    name: String,
    data_type: DataType,
    unit: TimeUnit,
}

/// The times of one batch: the column's own values where it is 64-bit (no copy).
#[derive(Debug)]
pub struct BatchTimes {
    /// Ticks per row (unspecified where [`BatchTimes::problem`] is `Some`).
    pub ticks: ScalarBuffer<i64>,
    nulls: Option<NullBuffer>,
    overflow: Vec<bool>,
}

impl BatchTimes {
    /// `rows` times all equal to `t` (arrival times of a processing-time call).
    pub fn all(t: i64, rows: usize) -> Self {
        Self {
            ticks: vec![t; rows].into(),
            nulls: None,
            overflow: Vec::new(),
        }
    }

    /// Why row `row`'s time cannot be used, if it cannot.
    #[inline]
    pub fn problem(&self, row: usize) -> Option<TimeProblem> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            Some(TimeProblem::Null)
        } else if self.overflow.get(row).copied().unwrap_or(false) {
            Some(TimeProblem::Overflow)
        } else {
            None
        }
    }
}

/// Why a row's time cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeProblem {
    /// The time is null.
    Null,
    /// The time does not fit an `i64` tick count.
    Overflow,
}

impl TimeColumn {
    /// Binds column `name`; `unit` is the tick of an integer column (default milliseconds),
    /// refused for a timestamp column, which has its own unit: silently ignoring it would let
    /// a caller believe durations or times are read in the unit they gave.
    pub fn try_new(name: &str, unit: Option<TimeUnit>, schema: &Schema) -> Result<Self> {
        let index = column_index(schema, name)?;
        let data_type = schema.field(index).data_type().clone();
        let unit = match &data_type {
            DataType::Timestamp(own, _) => match unit {
                Some(given) => {
                    return Err(Error::invalid(
                        "time_unit",
                        format!(
                            "time_unit={:?} is the tick of an integer time column only; the \
                             time column {name:?} is a timestamp[{}], which has its own unit: \
                             leave time_unit out",
                            unit_name(given),
                            unit_name(*own)
                        ),
                    ))
                }
                None => *own,
            },
            t if t.is_integer() => unit.unwrap_or(TimeUnit::Millisecond),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                return Err(Error::schema(
                    name,
                    format!(
                        "type {data_type} is a string; parse it into a timestamp first \
                         (time columns are timestamps or integer epoch ticks)"
                    ),
                ))
            }
            other => {
                return Err(Error::schema(
                    name,
                    format!(
                        "type {other} cannot be a time column; use a timestamp of any unit or \
                         integer epoch ticks (milliseconds unless time_unit says otherwise)"
                    ),
                ))
            }
        };
        Ok(Self {
            index: Some(index),
            name: name.to_string(),
            data_type,
            unit,
        })
    }

    /// Arrival times: no input column; each record's time is the wall clock's reading when
    /// it arrives (epoch milliseconds), given by the caller, and window bounds are written as
    /// `timestamp[ms, UTC]`.
    pub fn arrival() -> Self {
        Self {
            index: None,
            name: "arrival".to_string(),
            data_type: DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            unit: TimeUnit::Millisecond,
        }
    }

    /// The unit of a tick.
    pub fn unit(&self) -> TimeUnit {
        self.unit
    }

    /// What durations resolve into on this column: a timestamp's ticks take lengths only;
    /// an integer column's ticks (and arrival times', epoch ms) take integers too.
    pub fn base(&self) -> TimeBase {
        if self.is_timestamp() {
            TimeBase::timestamp(&self.name, self.unit)
        } else {
            TimeBase::integer(self.unit)
        }
    }

    /// Whether the column is a timestamp (not integer ticks, nor arrival times).
    pub fn is_timestamp(&self) -> bool {
        self.index.is_some() && matches!(self.data_type, DataType::Timestamp(..))
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The column's type.
    pub fn data_type(&self) -> &DataType {
        &self.data_type
    }

    /// The type of the window bounds in the output (`session_start`, `window_end`, ...): the
    /// column's own type for a timestamp, `Int64` for an integer column. Ticks are `i64`, and a
    /// narrow or unsigned type cannot hold every bound (a sliding window `[t - D, t]` leaves
    /// `uint8` at `t < D`), so integer bounds are written in the type that holds them all.
    pub fn output_type(&self) -> DataType {
        match &self.data_type {
            DataType::Timestamp(..) => self.data_type.clone(),
            _ => DataType::Int64,
        }
    }

    /// Reads the times of `batch` from the time column (complete modes bind no arrival times).
    pub fn read(&self, batch: &RecordBatch) -> BatchTimes {
        self.read_at(batch, 0)
    }

    /// Reads the times of `batch`; arrival times ([`TimeColumn::arrival`]) are `arrival`.
    pub fn read_at(&self, batch: &RecordBatch, arrival: i64) -> BatchTimes {
        let Some(index) = self.index else {
            return BatchTimes::all(arrival, batch.num_rows());
        };
        let column = batch.column(index);
        let n = column.len();
        let mut overflow = Vec::new();
        let ticks: ScalarBuffer<i64> = match column.data_type() {
            DataType::UInt64 => {
                overflow = vec![false; n];
                let a = column.as_primitive::<UInt64Type>();
                a.values()
                    .iter()
                    .enumerate()
                    .map(|(row, &v)| {
                        i64::try_from(v).unwrap_or_else(|_| {
                            overflow[row] = true;
                            0
                        })
                    })
                    .collect::<Vec<i64>>()
                    .into()
            }
            // Timestamps and Int64 reinterpret without a copy; narrower integers widen.
            _ => match arrow_cast::cast(column, &DataType::Int64) {
                Ok(a) => a.as_primitive::<Int64Type>().values().clone(),
                // Every accepted type casts to Int64; a failure here would be an arrow bug.
                Err(_) => vec![0i64; n].into(),
            },
        };
        BatchTimes {
            ticks,
            nulls: column.logical_nulls(),
            overflow,
        }
    }

    /// An array of [`TimeColumn::output_type`] holding `ticks`.
    pub fn to_array(&self, ticks: Vec<i64>) -> ArrayRef {
        match &self.data_type {
            DataType::Timestamp(unit, tz) => {
                let tz = tz.clone();
                match unit {
                    TimeUnit::Second => Arc::new(
                        PrimitiveArray::<TimestampSecondType>::from(ticks).with_timezone_opt(tz),
                    ),
                    TimeUnit::Millisecond => Arc::new(
                        PrimitiveArray::<TimestampMillisecondType>::from(ticks)
                            .with_timezone_opt(tz),
                    ),
                    TimeUnit::Microsecond => Arc::new(
                        PrimitiveArray::<TimestampMicrosecondType>::from(ticks)
                            .with_timezone_opt(tz),
                    ),
                    TimeUnit::Nanosecond => Arc::new(
                        PrimitiveArray::<TimestampNanosecondType>::from(ticks)
                            .with_timezone_opt(tz),
                    ),
                }
            }
            _ => Arc::new(Int64Array::from(ticks)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, StringArray, TimestampMicrosecondArray, UInt64Array};
    use arrow_schema::Field;

    fn one(col: ArrayRef) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "ts",
            col.data_type().clone(),
            true,
        )]));
        RecordBatch::try_new(schema, vec![col]).unwrap()
    }

    #[test]
    fn timestamps_keep_unit_and_zone() {
        let col: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![Some(5), None]).with_timezone("Europe/Paris"),
        );
        let b = one(col);
        let t = TimeColumn::try_new("ts", None, &b.schema()).unwrap();
        assert_eq!(t.unit(), TimeUnit::Microsecond);
        let read = t.read(&b);
        assert_eq!(read.ticks[0], 5);
        assert_eq!(
            (read.problem(0), read.problem(1)),
            (None, Some(TimeProblem::Null))
        );
        assert_eq!(
            t.to_array(vec![7]).data_type(),
            b.schema().field(0).data_type()
        );
        assert_eq!(&t.output_type(), b.schema().field(0).data_type());
    }

    #[test]
    fn integers_are_ticks_in_the_given_unit() {
        let b = one(Arc::new(Int32Array::from(vec![1, 2])));
        let t = TimeColumn::try_new("ts", Some(TimeUnit::Second), &b.schema()).unwrap();
        assert_eq!(t.unit(), TimeUnit::Second);
        assert_eq!(t.read(&b).ticks.to_vec(), vec![1, 2]);
        assert_eq!(t.output_type(), DataType::Int64);
        assert_eq!(t.to_array(vec![-3]).data_type(), &DataType::Int64);
        let b = one(Arc::new(UInt64Array::from(vec![u64::MAX, 1])));
        let t = TimeColumn::try_new("ts", None, &b.schema()).unwrap();
        assert_eq!(t.read(&b).problem(0), Some(TimeProblem::Overflow));
        assert_eq!(t.read(&b).problem(1), None);
    }

    #[test]
    fn a_time_unit_is_refused_for_a_timestamp_column_naming_its_unit() {
        let col: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![5]));
        let b = one(col);
        let err = TimeColumn::try_new("ts", Some(TimeUnit::Second), &b.schema()).unwrap_err();
        assert_eq!(err.invalid_parameter(), Some("time_unit"), "{err:?}");
        assert_eq!(
            err.to_string(),
            "invalid time_unit: time_unit=\"s\" is the tick of an integer time column only; \
             the time column \"ts\" is a timestamp[us], which has its own unit: leave \
             time_unit out"
        );
    }

    #[test]
    fn strings_are_refused_with_advice() {
        let b = one(Arc::new(StringArray::from(vec!["2024-01-01"])));
        let err = TimeColumn::try_new("ts", None, &b.schema()).unwrap_err();
        assert!(
            err.to_string().contains("parse it into a timestamp"),
            "{err}"
        );
    }
}
