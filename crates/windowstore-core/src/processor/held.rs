//! The rows records mode holds for open sessions, found by key and time when a session closes.
//!
//! Every accepted row is kept in the Arrow batch it came in (one [`Segment`] per chunk of a
//! call), with its arrival number, event time and the id its key has in the store's key table
//! ([`KeyTable`]): the processor holds a row right after applying its record, when the key's
//! session is in the store. A held row counts one reference on its key, so the id names the key
//! for as long as the row is held. The sessions of a key are disjoint time ranges and every
//! accepted record lies in exactly one (docs/semantics.md: a record joins a session when the
//! rule reaches it, and records at one time always share a session, capped or not), so a
//! closed session `(key, start, end)` holds exactly its key's rows timed `start..=end` (see
//! [`Closing`] for a key's sessions that overlap). Tagging needs no list of row numbers in the
//! session's value: a call's take reads the held rows once, sequentially, and looks each row's
//! key id up among the keys whose sessions close.
//!
//! A call changes the held rows inside its transaction: [`Held::begin`] keeps the segment list
//! (shared Arrow batches, so no row is copied), and [`Held::rollback`] puts it back and returns
//! the references the call took or let go of, before the store's own rollback: the store
//! changes nothing after a call's take (it comes last), so every id the call used still names
//! its key then, except a key whose last reference a take let go of, which is interned again
//! by its bytes.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, UInt32Array};
use arrow_buffer::ScalarBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::records;
use crate::emit::Rows;
use crate::store::key_table::{KeyId, KeyTable};
use crate::{Error, Result};

mod closing;
mod segment;

use closing::{no_rows, Closing};
use segment::{Segment, NO_KEY};

/// The accepted rows of open sessions, in segments of one chunk each, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Held {
    segments: Vec<Segment>,
    /// While a call runs: the segments as it found them.
    saved: Option<Vec<Segment>>,
    /// The running call's first arrival number.
    first: u64,
    /// The running call's rows' key ids by arrival number from `first` ([`NO_KEY`]: not held).
    pending: Vec<KeyId>,
    /// The references the running call's take let go of: key id and count, and where the key
    /// left the table, its bytes' range in `took_keys`.
    took: Vec<(KeyId, u32, Option<Range<usize>>)>,
    took_keys: Vec<u8>,
    /// Scratch of a take: each key id's group of closing sessions (`u32::MAX`: none), and the
    /// rows found (kept, so that a call does not fault in fresh pages for them).
    scratch: Scratch,
}

/// A take's buffers, kept from call to call.
#[derive(Debug, Default)]
struct Scratch {
    /// Each key id's group of closing sessions (`u32::MAX`: none).
    group_of: Vec<u32>,
    /// The rows found, in held order.
    found: Vec<Found>,
    /// The rows found, in output order.
    sorted: Vec<Found>,
}

/// A held row's event time in ticks and arrival number.
type Entry = (i64, i64);

/// A held row a take found: its session's place in the output, time, arrival number, segment
/// and row in it.
type Found = (u32, i64, i64, u32, u32);

/// Sessions whose rows a call tags: `windows` has `keys` key columns, each session's start and
/// end, then its last arrival number ([`records::LAST`]); `bounds` are its rows' key bytes and
/// bounds in ticks; the tagged rows come out in `schema` ([`records::tagged_schema`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Closed<'a> {
    pub windows: &'a RecordBatch,
    pub bounds: &'a [Bounds<'a>],
    pub keys: usize,
    pub schema: &'a SchemaRef,
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
    /// the rows not held (rejected or taken out) of a segment not compacted yet.
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
        self.forget_journal();
    }

    /// Ends a call, keeping its changes.
    pub fn commit(&mut self) {
        self.saved = None;
        self.forget_journal();
    }

    fn forget_journal(&mut self) {
        self.pending.clear();
        self.took.clear();
        self.took_keys.clear();
    }

    /// Puts the held rows back as they were at [`Self::begin`], before the store's rollback,
    /// and the references the call took or let go of back in the store's key `table`.
    pub fn rollback(&mut self, table: &mut KeyTable) -> Result<()> {
        if let Some(segments) = self.saved.take() {
            self.segments = segments;
        }
        while let Some((id, n, bytes)) = self.took.pop() {
            let Some(bytes) = bytes else {
                table.retain_many(id, n);
                continue;
            };
            let again = table.acquire(&self.took_keys[bytes])?;
            table.retain_many(again, n - 1);
            if again != id {
                // Never with the table's free list, which hands out the id freed last; kept
                // exact whatever it does.
                self.rename(id, again);
            }
        }
        for &id in self.pending.iter().filter(|&&id| id != NO_KEY) {
            table.release(id);
        }
        self.forget_journal();
        Ok(())
    }

    /// Puts the rows held under key id `from` under `to`.
    fn rename(&mut self, from: KeyId, to: KeyId) {
        let swap = |id: KeyId| if id == from { to } else { id };
        for id in &mut self.pending {
            *id = swap(*id);
        }
        for segment in &mut self.segments {
            if segment.ids.contains(&from) {
                segment.ids = segment.ids.iter().map(|&id| swap(id)).collect();
            }
        }
    }

    /// Starts holding the rows of a call whose first arrival number is `first`.
    pub fn open(&mut self, first: u64) {
        self.first = first;
        self.pending.clear();
    }

    /// Holds row `seq` of the running call under key `id` of the store's key `table` (its
    /// key holds the row's session), which counts one reference more.
    pub fn hold(&mut self, table: &mut KeyTable, id: KeyId, seq: u64) {
        debug_assert!(seq >= self.first, "a row of an earlier call");
        let at = usize::try_from(seq.saturating_sub(self.first)).unwrap_or(usize::MAX);
        if at >= self.pending.len() {
            self.pending.resize(at + 1, NO_KEY);
        }
        self.pending[at] = id;
        table.retain(id);
    }

    /// Keeps the held rows of the running call's chunks, `(batch, ticks)` each, in arrival
    /// order: a segment for each chunk with a row held.
    pub fn close<'c>(
        &mut self,
        chunks: impl Iterator<Item = (&'c RecordBatch, &'c ScalarBuffer<i64>)>,
    ) -> Result<()> {
        let mut from = 0;
        for (batch, ticks) in chunks {
            let n = batch.num_rows();
            let to = (from + n).min(self.pending.len());
            let held = self.pending.get(from..to).unwrap_or_default();
            if held.iter().any(|&id| id != NO_KEY) {
                let ids = (0..n).map(|i| held.get(i).copied().unwrap_or(NO_KEY));
                let first = seq_number(self.first + from as u64);
                let segment =
                    Segment::numbered_from(first, ticks.clone(), ids.collect(), batch.clone());
                self.segments.push(if segment.live * 2 < n {
                    segment.compacted()?
                } else {
                    segment
                });
            }
            from += n;
        }
        Ok(())
    }

    /// Takes the rows of the closed sessions `windows` out of the held rows and returns them
    /// tagged (in `schema`, see [`records::tagged_schema`]): sessions by key then start, a
    /// session's rows in event-time order, ties in arrival order. `windows` has `keys` key
    /// columns, the session's start and end, then its last arrival number ([`records::LAST`]);
    /// `bounds` are its rows' key bytes and bounds in ticks. The references of the rows taken
    /// go back to the store's key `table`.
    pub fn take(&mut self, table: &mut KeyTable, closed: &Closed<'_>) -> Result<RecordBatch> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let out = self.tagged(table, closed, &mut scratch).and_then(|out| {
            self.release(table, &scratch.sorted)?;
            Ok(out)
        });
        self.scratch = scratch;
        out
    }

    /// The rows of the sessions `closed` tagged, as [`Self::take`] returns them, leaving them
    /// held.
    pub fn tag(&self, table: &KeyTable, closed: &Closed<'_>) -> Result<RecordBatch> {
        self.tagged(table, closed, &mut Scratch::default())
    }

    /// The rows of the sessions `closed` tagged; their places in the scratch's `sorted`.
    fn tagged(
        &self,
        table: &KeyTable,
        closed: &Closed<'_>,
        scratch: &mut Scratch,
    ) -> Result<RecordBatch> {
        let Closed {
            windows,
            bounds,
            keys,
            schema,
        } = *closed;
        let closing = Closing::new(windows, bounds, keys)?;
        self.find(table, &closing, bounds, scratch)?;
        self.gather(windows, &closing, &scratch.sorted, keys, schema)
    }

    /// The held rows of the sessions of `closing`, in output order: one pass over the held
    /// rows that may lie in one (by their segments' time spans), each looked up by its key id
    /// in the scratch's `group_of` (all `u32::MAX`, and left so); into the scratch's `sorted`.
    fn find(
        &self,
        table: &KeyTable,
        closing: &Closing,
        bounds: &[Bounds<'_>],
        scratch: &mut Scratch,
    ) -> Result<()> {
        let Scratch {
            group_of,
            found,
            sorted,
        } = scratch;
        let mut ids = Vec::with_capacity(closing.groups());
        for (group, key) in closing.keys(bounds).enumerate() {
            let Some(id) = table.get(key) else {
                for &id in &ids {
                    group_of[id as usize] = u32::MAX;
                }
                return Err(no_rows());
            };
            if id as usize >= group_of.len() {
                group_of.resize(id as usize + 1, u32::MAX);
            }
            group_of[id as usize] = group as u32;
            ids.push(id);
        }
        let lo = bounds.iter().map(|b| b.1).min().unwrap_or(i64::MAX);
        let hi = bounds.iter().map(|b| b.2).max().unwrap_or(i64::MIN);
        found.clear();
        for (s, segment) in self.segments.iter().enumerate() {
            if segment.span.1 < lo || segment.span.0 > hi {
                continue;
            }
            for i in segment.alive.set_indices() {
                let id = segment.ids[i] as usize;
                let Some(&group) = group_of.get(id).filter(|&&g| g != u32::MAX) else {
                    continue;
                };
                let (t, seq) = (segment.times[i], segment.seq(i));
                if let Some(place) = closing.holder(group as usize, (t, seq)) {
                    found.push((place, t, seq, s as u32, i as u32));
                }
            }
        }
        for id in ids {
            group_of[id as usize] = u32::MAX;
        }
        in_output_order(found, closing.order.len(), sorted);
        Ok(())
    }

    /// The tagged rows of `found` (each held row with its session's place in the output, in
    /// output order).
    fn gather(
        &self,
        windows: &RecordBatch,
        closing: &Closing,
        found: &[Found],
        keys: usize,
        schema: &SchemaRef,
    ) -> Result<RecordBatch> {
        if closing.order.is_empty() {
            return Ok(RecordBatch::new_empty(schema.clone()));
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
        let at: Vec<(usize, usize)> = found.iter().map(|f| (f.3 as usize, f.4 as usize)).collect();
        let batches: Vec<&RecordBatch> = self.segments.iter().map(|s| &s.rows).collect();
        let rows = arrow_select::interleave::interleave_record_batch(&batches, &at)
            .map_err(Error::arrow("taking held rows"))?;
        let parents = UInt32Array::from_iter_values(found.iter().map(|f| f.0));
        let take = |c: &ArrayRef| {
            arrow_select::take::take(c.as_ref(), &parents, None)
                .map_err(Error::arrow("tagging rows"))
        };
        let ids: ArrayRef = Arc::new(records::ids_of(&columns_of(&windows, keys))?);
        let mut columns = rows.columns().to_vec();
        columns.push(take(windows.column(keys))?);
        columns.push(take(windows.column(keys + 1))?);
        columns.push(take(&ids)?);
        RecordBatch::try_new(schema.clone(), columns).map_err(Error::arrow("tagging rows"))
    }

    /// Releases the rows `found` (from [`Self::find`]): their references go back to `table`,
    /// taken rows are marked, half-empty segments compacted, empty ones dropped.
    fn release(&mut self, table: &mut KeyTable, found: &[Found]) -> Result<()> {
        if found.is_empty() {
            return Ok(());
        }
        let mut taken: Vec<Vec<usize>> = vec![Vec::new(); self.segments.len()];
        for f in found {
            taken[f.3 as usize].push(f.4 as usize);
        }
        // A key's sessions are together in the output, so its rows are one run of `found`.
        let key_of = |f: &Found| self.segments[f.3 as usize].ids[f.4 as usize];
        for run in found.chunk_by(|a, b| key_of(a) == key_of(b)) {
            let (id, n) = (key_of(&run[0]), run.len() as u32);
            let bytes = (table.references(id) == n).then(|| {
                let at = self.took_keys.len();
                self.took_keys.extend_from_slice(table.bytes(id));
                at..self.took_keys.len()
            });
            table.release_many(id, n);
            self.took.push((id, n, bytes));
        }
        let mut segments = Vec::with_capacity(self.segments.len());
        for (segment, taken) in self.segments.iter().zip(taken) {
            if taken.is_empty() {
                segments.push(segment.clone());
            } else if let Some(kept) = segment.without(&taken)? {
                segments.push(kept);
            }
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
        let mut ids = Vec::with_capacity(seqs.len());
        for i in 0..seqs.len() {
            ids.push(
                table
                    .get(keys(i))
                    .ok_or("a held row whose key has no session")?,
            );
        }
        for &id in &ids {
            table.retain(id);
        }
        let mut held = Self::default();
        if !seqs.is_empty() {
            let segment = Segment::new(seqs, times.clone(), ids.into(), rows);
            held.segments.push(segment);
        }
        Ok(held)
    }
}

/// `found`, of `sessions` sessions, in output order: by session (a counting sort, as the
/// places are dense), then each session's rows by time and arrival.
fn in_output_order(found: &[Found], sessions: usize, out: &mut Vec<Found>) {
    let mut starts = vec![0usize; sessions + 1];
    for f in found {
        starts[f.0 as usize + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut next = starts.clone();
    out.clear();
    out.resize(found.len(), (0, 0, 0, 0, 0));
    for &f in found {
        let at = &mut next[f.0 as usize];
        out[*at] = f;
        *at += 1;
    }
    for session in starts.windows(2) {
        out[session[0]..session[1]].sort_unstable_by_key(|f| (f.1, f.2));
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
