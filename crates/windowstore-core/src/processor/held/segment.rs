//! One call's held rows: the Arrow batch they came in, with each row's arrival number, event
//! time and key id, and which rows are still held.

use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, ScalarBuffer};

use crate::store::key_table::KeyId;
use crate::{Error, Result};

/// The key id of a row that is not held (rejected, or taken out).
pub(super) const NO_KEY: KeyId = KeyId::MAX;

/// One call's rows, numbered and timed, each under the store's id of its key while held. A row
/// taken out is only marked; a segment is compacted once less than half of it is held, and
/// dropped once none is, so a call's cost does not grow with the rows held.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    /// The first row's arrival number.
    pub first: i64,
    /// Every row's arrival number, unless they run `first, first + 1, ...` without a gap.
    seqs: Option<Arc<[i64]>>,
    /// Every row's event time in ticks.
    pub times: ScalarBuffer<i64>,
    /// Every row's key id in the store's key table ([`NO_KEY`] for a row never held).
    pub ids: ScalarBuffer<KeyId>,
    pub rows: RecordBatch,
    /// Which rows are still held, one bit each.
    pub alive: BooleanBuffer,
    pub live: usize,
    /// The earliest and latest time of a held row (the rows' times when compacted).
    pub span: (i64, i64),
}

impl Segment {
    /// A segment of `rows`, numbered `seqs` (ascending), timed `times`, under key `ids`: the
    /// rows under [`NO_KEY`] are not held.
    pub fn new(
        seqs: &[i64],
        times: ScalarBuffer<i64>,
        ids: ScalarBuffer<KeyId>,
        rows: RecordBatch,
    ) -> Self {
        let first = seqs.first().copied().unwrap_or(0);
        let dense = seqs
            .last()
            .is_none_or(|&last| last - first + 1 == seqs.len() as i64);
        let mut segment = Self::numbered_from(first, times, ids, rows);
        segment.seqs = (!dense).then(|| seqs.into());
        segment
    }

    /// A segment of `rows`, numbered `first, first + 1, ...`, timed `times`, under key `ids`.
    pub fn numbered_from(
        first: i64,
        times: ScalarBuffer<i64>,
        ids: ScalarBuffer<KeyId>,
        rows: RecordBatch,
    ) -> Self {
        let alive = BooleanBuffer::collect_bool(times.len(), |i| ids[i] != NO_KEY);
        let held = alive.set_indices().map(|i| times[i]);
        let span = held.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
        Self {
            first,
            seqs: None,
            live: alive.count_set_bits(),
            times,
            ids,
            rows,
            alive,
            span,
        }
    }

    /// How many rows the segment has, held or taken out.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// The arrival number of row `i`.
    pub fn seq(&self, i: usize) -> i64 {
        match &self.seqs {
            Some(seqs) => seqs[i],
            None => self.first + i as i64,
        }
    }

    /// The segment with only its rows still held.
    pub fn compacted(&self) -> Result<Self> {
        if self.live == self.len() {
            return Ok(self.clone());
        }
        let seqs: Vec<i64> = self.alive.set_indices().map(|i| self.seq(i)).collect();
        let times = self.alive.set_indices().map(|i| self.times[i]).collect();
        let ids = self.alive.set_indices().map(|i| self.ids[i]).collect();
        let keep = BooleanArray::new(self.alive.clone(), None);
        let rows = arrow_select::filter::filter_record_batch(&self.rows, &keep)
            .map_err(Error::arrow("releasing held rows"))?;
        Ok(Self::new(&seqs, times, ids, rows))
    }

    /// The segment with rows `taken` no longer held: `None` once no row is, compacted once
    /// less than half is.
    pub fn without(&self, taken: &[usize]) -> Result<Option<Self>> {
        let mut alive = BooleanBufferBuilder::new(self.alive.len());
        alive.append_buffer(&self.alive);
        for &i in taken {
            alive.set_bit(i, false);
        }
        let marked = Self {
            alive: alive.finish(),
            live: self.live - taken.len(),
            ..self.clone()
        };
        Ok(match marked.live {
            0 => None,
            live if live * 2 < marked.len() => Some(marked.compacted()?),
            _ => Some(marked),
        })
    }
}
