//! Rejected records: why a record was not used, counts per reason, and the rows themselves.
//!
//! Nothing is dropped silently: every rejected input row is counted under its reason and kept,
//! with a `reason` column, until the caller drains it.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::{Error, Result};

/// Why a record was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// It arrived after its window closed.
    Late,
    /// Its dynamic gap is null, zero, negative or not a whole number of ticks.
    InvalidGap,
    /// A key column is null.
    NullKey,
    /// The time is null.
    NullTime,
    /// Its time arithmetic (`t + gap`, ...) overflows `i64`.
    TimeOverflow,
}

impl Reason {
    /// Every reason, in the order of their counters.
    pub const ALL: [Reason; 5] = [
        Reason::Late,
        Reason::InvalidGap,
        Reason::NullKey,
        Reason::NullTime,
        Reason::TimeOverflow,
    ];

    /// The reason's name, as it appears in the `reason` column and in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Late => "late",
            Reason::InvalidGap => "invalid_gap",
            Reason::NullKey => "null_key",
            Reason::NullTime => "null_time",
            Reason::TimeOverflow => "time_overflow",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Name of the column that carries the reason in rejected output.
pub const REASON_COLUMN: &str = "reason";

/// What to do with a record that cannot be used (null key or time, invalid gap, time overflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnInvalid {
    /// Count it and keep it on the rejected output.
    Drop,
    /// Fail the whole call, before any state changes.
    Error,
}

impl OnInvalid {
    /// Parses `drop` or `error`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "drop" => Ok(Self::Drop),
            "error" => Ok(Self::Error),
            other => Err(Error::invalid(
                "on_invalid",
                format!("unknown policy {other:?}; expected drop or error"),
            )),
        }
    }
}

/// Where [`Rejections`] stood before a call.
#[derive(Debug, Clone)]
pub struct RejectMark {
    counts: [u64; 5],
    kept: usize,
}

/// Rejected rows of the batches processed so far, and counts per reason.
#[derive(Debug, Default)]
pub struct Rejections {
    counts: [u64; 5],
    current: Vec<(u32, Reason)>,
    kept: Vec<RecordBatch>,
}

impl Rejections {
    /// Rejects row `row` of the batch being processed.
    pub fn reject(&mut self, row: usize, reason: Reason) {
        self.counts[reason.index()] += 1;
        // Batches are indexed by u32 in arrow's take; rows beyond that cannot occur in one batch
        // of a supported size, and are clamped rather than panicking.
        self.current
            .push((u32::try_from(row).unwrap_or(u32::MAX), reason));
    }

    /// Copies the rejected rows of `batch` (the batch just processed) aside with their reason;
    /// returns their row numbers in `batch`, in the order they were rejected.
    pub fn finish_batch(&mut self, batch: &RecordBatch) -> Result<Vec<u32>> {
        if self.current.is_empty() {
            return Ok(Vec::new());
        }
        let rows = UInt32Array::from_iter_values(self.current.iter().map(|(r, _)| *r));
        let reasons: ArrayRef = Arc::new(StringArray::from_iter_values(
            self.current.iter().map(|(_, reason)| reason.as_str()),
        ));
        let mut columns = arrow_select::take::take_arrays(batch.columns(), &rows, None)
            .map_err(Error::arrow("copying rejected rows"))?;
        columns.push(reasons);
        let rejected = RecordBatch::try_new(rejected_schema(&batch.schema()), columns)
            .map_err(Error::arrow("copying rejected rows"))?;
        self.kept.push(rejected);
        let rows = self.current.drain(..).map(|(r, _)| r).collect();
        Ok(rows)
    }

    /// Where the rejections stand now, for [`Self::rollback`].
    pub fn mark(&self) -> RejectMark {
        RejectMark {
            counts: self.counts,
            kept: self.kept.len(),
        }
    }

    /// Forgets every rejection since `mark` (the call failed as a whole and changed nothing).
    pub fn rollback(&mut self, mark: &RejectMark) {
        self.counts = mark.counts;
        self.kept.truncate(mark.kept);
        self.current.clear();
    }

    /// The rejected rows kept and not taken yet (what a snapshot carries).
    pub fn kept(&self) -> &[RecordBatch] {
        &self.kept
    }

    /// Sets the rows kept and not taken yet (restoring a snapshot).
    pub fn set_kept(&mut self, kept: Vec<RecordBatch>) {
        self.kept = kept;
    }

    /// Takes every rejected row kept so far, as one batch of `input` columns plus `reason`.
    pub fn drain(&mut self, input: &SchemaRef) -> Result<RecordBatch> {
        let schema = rejected_schema(input);
        let kept = std::mem::take(&mut self.kept);
        arrow_select::concat::concat_batches(&schema, &kept)
            .map_err(Error::arrow("collecting rejected rows"))
    }

    /// Rows counted under `reason` so far (drained or not).
    pub fn count(&self, reason: Reason) -> u64 {
        self.counts[reason.index()]
    }

    /// All rows rejected so far.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Sets the counters (restoring a snapshot).
    pub fn set_count(&mut self, reason: Reason, count: u64) {
        self.counts[reason.index()] = count;
    }
}

/// The schema of rejected rows: the input's columns, then `reason` (a string).
pub fn rejected_schema(input: &Schema) -> SchemaRef {
    let mut fields: Vec<Arc<Field>> = input.fields().iter().cloned().collect();
    let name = if input.field_with_name(REASON_COLUMN).is_ok() {
        "windowstore_reason"
    } else {
        REASON_COLUMN
    };
    fields.push(Arc::new(Field::new(name, DataType::Utf8, false)));
    Arc::new(Schema::new(fields))
}
