//! The rows records mode holds for open sessions, found by key and time when a session closes.
//!
//! Every accepted row is kept, with its arrival number, in the Arrow batch it came in (one
//! [`Segment`] per call), and indexed under its key as `(time, arrival)` once the record is
//! applied and its key is in the store ([`index`], which shares the store's key ids). The
//! sessions of a key
//! are disjoint time ranges and every accepted record lies in exactly one (docs/semantics.md:
//! a record joins a session when the rule reaches it, and records at one time always share a
//! session, capped or not), so a closed session `(key, start, end)` holds exactly its key's
//! rows timed `start..=end`. Tagging needs no list of row numbers in the session's value.
//!
//! A call changes the held rows inside its transaction: [`Held::begin`] keeps the segment list
//! (shared Arrow batches, so no row is copied) and journals each change to the index, which
//! [`Held::rollback`] undoes newest first, after the store's rollback.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, UInt32Array};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::records;
use crate::emit::Rows;
use crate::store::key_table::{KeyId, KeyTable};
use crate::{Error, Result};

mod closing;
mod index;

use closing::{no_rows, Closing};
use index::{Entry, Index};

/// One call's held rows: the rows, their arrival numbers (ascending) and event times, and
/// which of them are still held. A row taken out is only marked; a segment is compacted once
/// less than half of it is held, and dropped once none is, so a call's cost does not grow
/// with the rows held.
#[derive(Debug, Clone)]
struct Segment {
    /// The first row's arrival number.
    first: i64,
    /// Every row's arrival number, unless they run `first, first + 1, ...` without a gap.
    seqs: Option<Arc<[i64]>>,
    /// Every row's event time in ticks (the index's, kept here for a snapshot).
    times: ScalarBuffer<i64>,
    rows: RecordBatch,
    /// Which rows are still held, one bit each.
    alive: BooleanBuffer,
    live: usize,
}

impl Segment {
    /// A segment of `rows`, numbered `seqs` (ascending), timed `times`.
    fn new(seqs: &[i64], times: ScalarBuffer<i64>, rows: RecordBatch) -> Self {
        let live = seqs.len();
        let first = seqs.first().copied().unwrap_or(0);
        let dense = seqs
            .last()
            .is_none_or(|&last| last - first + 1 == live as i64);
        Self {
            first,
            seqs: (!dense).then(|| seqs.into()),
            times,
            rows,
            alive: BooleanBuffer::new_set(live),
            live,
        }
    }

    /// How many rows the segment has, held or taken out.
    fn len(&self) -> usize {
        self.times.len()
    }

    /// The arrival number of row `i`.
    fn seq(&self, i: usize) -> i64 {
        match &self.seqs {
            Some(seqs) => seqs[i],
            None => self.first + i as i64,
        }
    }

    /// Where row `seq` is in the segment.
    fn position(&self, seq: i64) -> Option<usize> {
        match &self.seqs {
            Some(seqs) => seqs.binary_search(&seq).ok(),
            None => {
                let at = usize::try_from(seq - self.first).ok()?;
                (at < self.len()).then_some(at)
            }
        }
    }

    /// The segment with only its rows still held.
    fn compacted(&self) -> Result<Self> {
        if self.live == self.len() {
            return Ok(self.clone());
        }
        let seqs: Vec<i64> = self.alive.set_indices().map(|i| self.seq(i)).collect();
        let times = self.alive.set_indices().map(|i| self.times[i]).collect();
        let keep = BooleanArray::new(self.alive.clone(), None);
        let rows = arrow_select::filter::filter_record_batch(&self.rows, &keep)
            .map_err(Error::arrow("releasing held rows"))?;
        Ok(Self::new(&seqs, times, rows))
    }
}

/// The accepted rows of open sessions, in segments of one call each, oldest first, and
/// indexed by key.
#[derive(Debug, Default)]
pub(crate) struct Held {
    segments: Vec<Segment>,
    index: Index,
    /// While a call runs: the segments as it found them.
    saved: Option<Vec<Segment>>,
}

/// A window whose rows are tagged: its key's bytes, start and end (ticks).
pub(crate) type Bounds<'a> = (&'a [u8], i64, i64);

/// The key bytes and bounds of each window of `rows`, in order.
pub(crate) fn bounds(rows: &Rows) -> impl Iterator<Item = Bounds<'_>> {
    rows.keys()
        .zip(rows.starts().iter().zip(rows.ends()))
        .map(|(key, (&start, &end))| (key, start, end))
}

impl Held {
    /// How many rows are held.
    pub fn rows(&self) -> usize {
        self.segments.iter().map(|s| s.live).sum()
    }

    /// The Arrow size of the segments' data (their slices of the buffers): the held rows, and
    /// the rows taken out of a segment not compacted yet.
    pub fn bytes(&self) -> usize {
        self.segments
            .iter()
            .flat_map(|s| s.rows.columns())
            .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0))
            .sum()
    }

    /// Starts a call: what it changes from now on, [`Self::rollback`] undoes.
    pub fn begin(&mut self) {
        self.saved = Some(self.segments.clone());
        self.index.commit();
    }

    /// Ends a call, keeping its changes.
    pub fn commit(&mut self) {
        self.saved = None;
        self.index.commit();
    }

    /// Puts the held rows back as they were at [`Self::begin`], once the store is back as it
    /// was: the index's references go back to `keys`.
    pub fn rollback(&mut self, keys: &mut KeyTable) -> Result<()> {
        if let Some(segments) = self.saved.take() {
            self.segments = segments;
        }
        self.index.rollback(keys)
    }

    /// Keeps the rows of `batch`, numbered from `first`, except `rejected` (row indices); row
    /// `i` has time `ticks[i]`. Returns each kept row's index and arrival number: the caller
    /// holds each under its key once the key is in the store ([`Self::hold`]).
    pub fn keep(
        &mut self,
        batch: &RecordBatch,
        first: u64,
        rejected: &[u32],
        ticks: &ScalarBuffer<i64>,
    ) -> Result<Vec<(usize, u64)>> {
        let n = batch.num_rows();
        let mut keep = vec![true; n];
        for &r in rejected {
            if let Some(k) = keep.get_mut(r as usize) {
                *k = false;
            }
        }
        let kept: Vec<(usize, u64)> = (0..n)
            .filter(|&i| keep[i])
            .map(|i| (i, first + i as u64))
            .collect();
        if kept.is_empty() {
            return Ok(kept);
        }
        let seqs: Vec<i64> = kept.iter().map(|&(_, seq)| seq_number(seq)).collect();
        let (rows, times) = if kept.len() == n {
            (batch.clone(), ticks.clone())
        } else {
            let times = keep.iter().zip(ticks.iter()).filter(|(&k, _)| k);
            let times = times.map(|(_, &t)| t).collect();
            let rows = arrow_select::filter::filter_record_batch(batch, &BooleanArray::from(keep))
                .map_err(Error::arrow("holding rows"))?;
            (rows, times)
        };
        self.segments.push(Segment::new(&seqs, times, rows));
        Ok(kept)
    }

    /// Holds row `seq`, kept by [`Self::keep`] and timed `t` (ticks), under key `id` of the
    /// store's key `table` (its key holds the row's session).
    pub fn hold(&mut self, table: &mut KeyTable, id: KeyId, t: i64, seq: u64) {
        self.index.push(table, id, (t, seq_number(seq)));
    }

    /// Takes the rows of the closed sessions `windows` out of the held rows and returns them
    /// tagged (in `schema`, see [`records::tagged_schema`]): sessions by key then start, a
    /// session's rows in event-time order, ties in arrival order. `windows` has `keys` key
    /// columns, the session's start and end, then its last arrival number ([`records::LAST`]);
    /// `bounds` are its rows' key bytes and bounds in ticks.
    pub fn take(
        &mut self,
        table: &mut KeyTable,
        windows: &RecordBatch,
        bounds: &[Bounds<'_>],
        keys: usize,
        schema: &SchemaRef,
    ) -> Result<RecordBatch> {
        let closing = Closing::new(windows, bounds, keys)?;
        // Each key's rows are found and taken out in one pass.
        let found = closing.rows(bounds, |key, spans, found| {
            let id = table.get(key).ok_or_else(no_rows)?;
            self.index.take(table, id, |e| {
                let place = spans.holder(e);
                found.extend(place.map(|place| (place, e)));
                place.is_some()
            });
            Ok(())
        })?;
        let (out, taken) = self.gather(windows, &closing, &found, keys, schema)?;
        self.release(taken)?;
        Ok(out)
    }

    /// The rows of the sessions `windows` tagged, as [`Self::take`] returns them, leaving them
    /// held.
    pub fn tag(
        &self,
        table: &KeyTable,
        windows: &RecordBatch,
        bounds: &[Bounds<'_>],
        keys: usize,
        schema: &SchemaRef,
    ) -> Result<RecordBatch> {
        let closing = Closing::new(windows, bounds, keys)?;
        let found = closing.rows(bounds, |key, spans, found| {
            let rows = self.index.rows(table.get(key).ok_or_else(no_rows)?);
            found.extend(rows.iter().filter_map(|&e| Some((spans.holder(e)?, e))));
            Ok(())
        })?;
        Ok(self.gather(windows, &closing, &found, keys, schema)?.0)
    }

    /// The tagged rows of `found` (each held row with its session's place in the output, in
    /// output order), with, per segment, the positions of the rows returned.
    fn gather(
        &self,
        windows: &RecordBatch,
        closing: &Closing,
        found: &[(u32, Entry)],
        keys: usize,
        schema: &SchemaRef,
    ) -> Result<(RecordBatch, Vec<Vec<usize>>)> {
        if closing.order.is_empty() {
            return Ok((RecordBatch::new_empty(schema.clone()), Vec::new()));
        }
        let sessions = found.chunk_by(|a, b| a.0 == b.0).count();
        if sessions != closing.order.len() {
            return Err(Error::Internal(
                "records mode: a closed session has no held rows".into(),
            ));
        }
        let order = UInt32Array::from(closing.order.clone());
        let windows = arrow_select::take::take_record_batch(windows, &order)
            .map_err(Error::arrow("ordering sessions"))?;
        let firsts: Vec<i64> = self.segments.iter().map(|s| s.first).collect();
        // Where each row of the output is held, and which window it belongs to.
        let mut at = Vec::with_capacity(found.len());
        let mut parents = Vec::with_capacity(found.len());
        // Per segment, the positions taken (no allocation for segments left alone).
        let mut taken: Vec<Vec<usize>> = vec![Vec::new(); self.segments.len()];
        for &(window, (_, seq)) in found {
            let place = firsts
                .partition_point(|&f| f <= seq)
                .checked_sub(1)
                .and_then(|s| Some(s).zip(self.segments[s].position(seq)))
                .filter(|&(s, i)| self.segments[s].alive.value(i))
                .ok_or_else(|| {
                    Error::Internal(format!(
                        "records mode: a closed session holds row {seq}, which is not held"
                    ))
                })?;
            taken[place.0].push(place.1);
            at.push(place);
            parents.push(window);
        }
        let batches: Vec<&RecordBatch> = self.segments.iter().map(|s| &s.rows).collect();
        let rows = arrow_select::interleave::interleave_record_batch(&batches, &at)
            .map_err(Error::arrow("taking held rows"))?;
        let parents = UInt32Array::from(parents);
        let take = |c: &ArrayRef| {
            arrow_select::take::take(c.as_ref(), &parents, None)
                .map_err(Error::arrow("tagging rows"))
        };
        let ids: ArrayRef = Arc::new(records::ids_of(&columns_of(&windows, keys))?);
        let mut columns = rows.columns().to_vec();
        columns.push(take(windows.column(keys))?);
        columns.push(take(windows.column(keys + 1))?);
        columns.push(take(&ids)?);
        let out =
            RecordBatch::try_new(schema.clone(), columns).map_err(Error::arrow("tagging rows"))?;
        Ok((out, taken))
    }

    /// Releases the rows at positions `taken` (per segment, from [`Self::tag`]): taken rows
    /// are marked, half-empty segments compacted, empty ones dropped.
    fn release(&mut self, taken: Vec<Vec<usize>>) -> Result<()> {
        if taken.is_empty() {
            return Ok(());
        }
        let mut segments = Vec::with_capacity(self.segments.len());
        for (segment, taken) in self.segments.iter().zip(taken) {
            if taken.is_empty() {
                segments.push(segment.clone());
                continue;
            }
            let mut alive = BooleanBufferBuilder::new(segment.alive.len());
            alive.append_buffer(&segment.alive);
            for &i in &taken {
                alive.set_bit(i, false);
            }
            let marked = Segment {
                alive: alive.finish(),
                live: segment.live - taken.len(),
                ..segment.clone()
            };
            if marked.live == 0 {
                continue;
            }
            segments.push(if marked.live * 2 < marked.len() {
                marked.compacted()?
            } else {
                marked
            });
        }
        self.segments = segments;
        Ok(())
    }

    /// The snapshot schema of the held rows' arrival numbers and event times (ticks), row for
    /// row beside the rows themselves (see [`Self::to_batches`]). Their keys are the rows' own.
    pub fn index_schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("seq", DataType::Int64, false),
            Field::new("time", DataType::Int64, false),
        ]))
    }

    /// The held rows in arrival order as one batch of `schema` (the bound input's), and their
    /// numbers and times as one batch of [`Self::index_schema`], for a snapshot.
    pub fn to_batches(&self, schema: &SchemaRef) -> Result<(RecordBatch, RecordBatch)> {
        let segments = self
            .segments
            .iter()
            .map(Segment::compacted)
            .collect::<Result<Vec<_>>>()?;
        let rows = arrow_select::concat::concat_batches(schema, segments.iter().map(|s| &s.rows))
            .map_err(Error::arrow("writing held rows"))?;
        let seqs = segments.iter().flat_map(|s| (0..s.len()).map(|i| s.seq(i)));
        let times = segments.iter().flat_map(|s| s.times.iter().copied());
        let index = RecordBatch::try_new(
            Self::index_schema(),
            vec![
                Arc::new(Int64Array::from_iter_values(seqs)),
                Arc::new(Int64Array::from_iter_values(times)),
            ],
        )
        .map_err(Error::arrow("writing held rows"))?;
        Ok((rows, index))
    }

    /// Held rows from a snapshot's batches ([`Self::to_batches`]), row `i` under key
    /// `keys(i)`, which must have a session in the restored store's key `table`; their numbers
    /// must ascend and lie below `next_seq`. Says what is wrong.
    pub fn from_batches<'k>(
        rows: RecordBatch,
        index: &RecordBatch,
        next_seq: u64,
        keys: impl Fn(usize) -> &'k [u8],
        table: &mut KeyTable,
    ) -> std::result::Result<Self, String> {
        let column = |i: usize| Some(index.column(i)).filter(|c| c.null_count() == 0);
        let seqs = column(0)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or("held rows without their numbers")?
            .values();
        let times = column(1)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or("held rows without their times")?
            .values();
        if rows.num_rows() != index.num_rows() {
            return Err("held rows and their index differ in length".into());
        }
        if seqs.windows(2).any(|w| w[0] >= w[1]) {
            return Err("held rows out of sequence".into());
        }
        if seqs.last().is_some_and(|&s| s < 0 || s as u64 >= next_seq) {
            return Err("held rows numbered beyond the rows seen".into());
        }
        let mut held = Self::default();
        for (i, (&seq, &t)) in seqs.iter().zip(times.iter()).enumerate() {
            let id = table
                .get(keys(i))
                .ok_or("a held row whose key has no session")?;
            held.index.push(table, id, (t, seq));
        }
        held.index.commit();
        if !seqs.is_empty() {
            held.segments.push(Segment::new(seqs, times.clone(), rows));
        }
        Ok(held)
    }
}

/// Arrival number `seq` as the held rows keep it.
fn seq_number(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// The error of an accepted row whose key has no session in the store after its record is
/// applied.
pub(crate) fn unstored() -> Error {
    Error::Internal("records mode: an accepted row's key has no session in the store".into())
}

/// The key columns and start of `windows` (what a session id hashes).
fn columns_of(windows: &RecordBatch, keys: usize) -> Vec<ArrayRef> {
    (0..=keys).map(|i| windows.column(i).clone()).collect()
}

#[cfg(test)]
mod tests;
