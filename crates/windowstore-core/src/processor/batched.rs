//! The batched path of a call: each key's records applied in one step instead of one record at
//! a time against the store.
//!
//! The record path looks a key's sessions up in the store and puts the merged one back for
//! every record. When no record of a call can be late (each is within the grace of stream time
//! as it stands once the record is looked at: [`WindowKind::run_safe`]), a record meets only
//! its own key's windows, and which ones does not depend on any other key's records. The call
//! then groups its records by key (arrival order kept within a key) and the kind applies each
//! key's records at once ([`WindowKind::step_run`]): one store read and one write per window
//! touched. The outcome is the record path's, byte for byte:
//!
//! - windows and states: the kind applies a key's records in arrival order with the same
//!   merges, so even float sums add up in the same order;
//! - arrival numbers, stream time, the rejected rows and the processor's counters are computed
//!   per record, as the record path computes them;
//! - store time: the record path moves it with every put, and a put that drops segments first
//!   emits what has closed (`final` mode). Here puts leave it where it was; once every key is
//!   applied, the closed windows are emitted and store time moves to where the puts would have
//!   taken it, dropping the same segments. A run-safe record never touches a window that
//!   closes or expires within the call, so the same windows are emitted and dropped, and the
//!   output is the same: final windows come in (end, start, key) order whichever put emits them;
//! - the store's `puts` and `removes` counters are set to what the record steps would count;
//! - `latest_end` (the largest window end put, which sessions track) is kept by the kind's
//!   run as its steps keep it.
//!
//! A call whose stream time moves more than the retention is applied in slices, each ending
//! where stream time has moved a retention past the slice's first record ([`slice_end`]), and
//! each applied as the whole call is above: its keys, then its closed windows emitted and store
//! time moved. Otherwise a long call would keep every window its records open and close in
//! the store until its end: with sparse keys, each record a window that closes within the call,
//! the store then grew to the whole call's windows, and the batched path ran slower than the
//! record path. The output is the same: windows are emitted in (end, start, key) order either
//! way, and a run-safe record never touches a window that has closed.
//!
//! **Sparse keys.** A run costs a copy of its key's windows and a write-back, which pays only
//! when its records share windows. When a key's records lie farther apart than the gap (or the
//! time difference), each record makes windows of its own and the batched path is slower than
//! the record path (`benches/bench_sparse.py` measures it). So after a batched call of at
//! least [`SPARSE_MIN_RECORDS`] records of which nearly all met no window of their key (the
//! kinds count them, `RunOutcome::isolated`), the next [`SPARSE_CALLS`] calls take the record
//! path, then the batched path is tried again. Either path gives the same outcome, so this
//! changes only the time a call takes.
//!
//! **Reads ahead.** In a store far larger than the cache, a run's lookup is a chain of cache
//! misses, each waiting for the one before (the key table, each segment's hash table, the
//! key's session list, the values), and the record path's time is mostly those waits. Before
//! every [`WARM_RUNS`] runs, their lookups are read together, stage by stage across the runs
//! (`SessionStore::warm`, with the bounds each kind's `run_reads` gives), so that the misses
//! of different keys overlap; the runs then find their memory in the cache. This only reads:
//! the outcome is the same. Only a store far larger than the cache is read ahead
//! (`SessionStore::reads_ahead`).
//!
//! In the changelog modes, each record's rows are stamped with its arrival number as the kind
//! pushes them, and the call's changelog is put back in arrival order at the end: coalescing
//! (`updates`) is per window, hence per key, so it comes out as the record path's.
//! Any error on the way (an aggregate overflow, a put of an expired session) rolls the path
//! back, and the call runs record by record, whose errors name the record that raised them.

use super::call::CallState;
use super::held::{unstored, Held};
use super::kind::{Applying, Record};
use super::kind::{RunOutcome, WindowKind};
use super::lifecycle::Lifecycle;
use super::{Chunk, Counters, Processor};
use crate::emit::{EmitMode, Rows};
use crate::input::order::group_by_key;
use crate::store::key_table::KeyTable;
use crate::store::WindowStore;
use crate::Result;

/// Calls with fewer usable records than this take the record path: grouping them costs about
/// what it saves.
const MIN_RECORDS: usize = 16;

/// Runs whose store lookups are read into the cache together, ahead of applying them
/// (`SessionStore::warm`).
const WARM_RUNS: usize = 16;

/// The fewest usable records of a batched call that can send the next calls down the record
/// path (small calls say little about the stream, and cost little either way).
const SPARSE_MIN_RECORDS: usize = 4096;

/// Calls that take the record path after a batched call whose records nearly all met no window.
const SPARSE_CALLS: u32 = 7;

/// Whether a batched call of `records` usable records, `isolated` of which met no window of
/// their key, says that the stream's keys are sparse (nine in ten isolated).
fn sparse(isolated: u64, records: usize) -> bool {
    records >= SPARSE_MIN_RECORDS && isolated.saturating_mul(10) >= records as u64 * 9
}

/// Where the slice of records starting at `from` ends: at the first record once stream time
/// (`stream_times`, after each record) has moved more than `span` past where it was at `from`,
/// else at the end.
fn slice_end(stream_times: &[i64], from: usize, span: i64) -> usize {
    let start = stream_times[from];
    let beyond = stream_times[from..].partition_point(|&st| st.saturating_sub(start) <= span);
    from + beyond.max(1)
}

impl<K: WindowKind> Processor<K> {
    /// Whether the call of `chunks` (after an advance of stream time to `advance`) can take the
    /// batched path: a mode the kind batches ([`WindowKind::RUN_LOGS`]), enough usable
    /// records, and every one of them run-safe.
    pub(super) fn batchable(&self, chunks: &[Chunk<K::Prepared>], advance: Option<i64>) -> bool {
        let Some(bound) = self.bound.as_ref() else {
            return false;
        };
        let mode_ok = K::RUN_LOGS || self.kind.emit() == EmitMode::Final;
        if !self.batched || !mode_ok {
            return false;
        }
        let mut stream_time = match (self.call.life.stream_time, advance) {
            (Some(st), Some(a)) => Some(st.max(a)),
            (st, a) => st.or(a),
        };
        let mut usable = 0usize;
        for chunk in chunks {
            for (row, checked) in chunk.checked.iter().enumerate() {
                if checked.is_err() {
                    continue;
                }
                let t = chunk.ticks[row];
                let now = stream_time.map_or(t, |s| s.max(t));
                stream_time = Some(now);
                if !K::run_safe(&bound.ticks, t, now) {
                    return false;
                }
                usable += 1;
            }
        }
        usable >= MIN_RECORDS
    }

    /// Applies an advance of stream time to `advance`, then checked chunks key by key
    /// (journaled by the caller); returns the output rows with the counters to commit. The
    /// caller has checked [`Self::batchable`]. The advance is looked at as a
    /// record path call looks at it: before every record, so it is in each record's stream
    /// time, and what it closes is emitted with the first slice.
    pub(super) fn apply_batched(
        &mut self,
        chunks: &[Chunk<K::Prepared>],
        checked: K::Counters,
        advance: Option<i64>,
    ) -> Result<(Rows, Counters<K::Counters>)> {
        let (kind, bound, call, mut counters) = self.apply_parts(checked)?;
        let CallState {
            life,
            held,
            sparse_calls,
            ..
        } = call;

        if let Some(t) = advance {
            life.observe(t);
        }
        if let Some(held) = held.as_mut() {
            held.open(life.seq);
        }
        let arrivals = arrive(chunks, life, &mut counters)?;

        let ticks = bound.ticks;
        let mode = kind.emit();
        let mut step = bound.step(mode, life, &mut counters.kind);
        let isolated = apply_slices(&ticks, &mut step, held.as_mut(), &arrivals)?;
        if let Some(held) = held.as_mut() {
            held.close(chunks.iter().map(|c| (&c.batch, &c.ticks)))?;
        }
        let rows = if mode == EmitMode::Final {
            life.emitted_below = step.emitted_below;
            std::mem::take(&mut step.finals)
        } else {
            // Each record's changes were stamped with its arrival number: back in record order.
            step.changelog.take()
        };
        life.latest_end = step.latest_end;
        *sparse_calls = if sparse(isolated, arrivals.records.len()) {
            SPARSE_CALLS
        } else {
            0
        };
        counters.emitted += rows.len() as u64;
        Ok((rows, counters))
    }
}

/// A call's usable records in arrival order, and stream time once each is looked at.
struct Arrivals<'a, P> {
    records: Vec<Record<'a, P>>,
    stream_times: Vec<i64>,
}

/// Per record of `chunks`, what the record path computes as it goes: its arrival number, stream
/// time, and its rejection; counts the records seen and accepted. Returns the usable records.
fn arrive<'a, P: Copy, C>(
    chunks: &'a [Chunk<P>],
    life: &mut Lifecycle,
    counters: &mut Counters<C>,
) -> Result<Arrivals<'a, P>> {
    let arrived = chunks.iter().map(|c| c.checked.len()).sum();
    let mut records = Vec::with_capacity(arrived);
    let mut stream_times = Vec::with_capacity(arrived);
    for chunk in chunks {
        for (row, checked) in chunk.checked.iter().enumerate() {
            let seq = life.seq;
            life.seq += 1;
            counters.records += 1;
            match *checked {
                Ok(prepared) => {
                    let t = chunk.ticks[row];
                    let stream_time = life.observe(t);
                    stream_times.push(stream_time);
                    records.push(Record {
                        key: chunk.keys.rows.row(row).data(),
                        inputs: &chunk.inputs,
                        row,
                        t,
                        seq,
                        stream_time,
                        prepared,
                    });
                }
                Err(reason) => life.rejections.reject(row, reason),
            }
        }
        life.rejections.finish_batch(&chunk.batch)?;
    }
    counters.accepted += records.len() as u64;
    Ok(Arrivals {
        records,
        stream_times,
    })
}

/// Applies `arrivals` slice by slice ([`slice_end`]): each slice's keys, then the store's
/// change counters set, its closed windows emitted (`final` mode) and store time moved.
/// Returns how many records met no window of their key.
fn apply_slices<K: WindowKind>(
    ticks: &K::Ticks,
    step: &mut Applying<'_, K>,
    mut held: Option<&mut Held>,
    arrivals: &Arrivals<'_, K::Prepared>,
) -> Result<u64> {
    let Arrivals {
        records,
        stream_times,
    } = arrivals;
    let before = step.store.change_counts();
    let mut scratch = K::Scratch::default();
    let (mut puts, mut removes, mut isolated) = (0u64, 0u64, 0u64);
    let mut from = 0;
    while from < records.len() {
        let to = slice_end(stream_times, from, K::retention(ticks));
        let slice = apply_slice(
            ticks,
            step,
            &mut scratch,
            held.as_deref_mut(),
            &records[from..to],
        )?;
        puts += slice.puts;
        removes += slice.removes;
        isolated += slice.isolated;
        step.store
            .set_change_counts(before.0 + puts, before.1 + removes);
        if step.mode == EmitMode::Final {
            step.close = stream_times[to - 1].saturating_sub(K::grace(ticks));
            step.emit_closed();
        }
        if let Some(end) = slice.max_end {
            step.store.advance_time(end);
        }
        from = to;
    }
    Ok(isolated)
}

/// Applies `slice`'s records key by key, each key's run in one [`WindowKind::step_run`],
/// reading the lookups of every [`WARM_RUNS`] runs ahead, then holding the run's rows (records
/// mode) under its key's id. Returns what the runs did, summed (`max_end`: the largest).
fn apply_slice<K: WindowKind>(
    ticks: &K::Ticks,
    step: &mut Applying<'_, K>,
    scratch: &mut K::Scratch,
    mut held: Option<&mut Held>,
    slice: &[Record<'_, K::Prepared>],
) -> Result<RunOutcome> {
    let (order, runs) = group_by_key(slice.len(), |i| Some(slice[i].key));
    let grouped: Vec<Record<'_, K::Prepared>> = order.iter().map(|&i| slice[i as usize]).collect();
    let mut total = RunOutcome::default();
    let mut lookups = Vec::with_capacity(WARM_RUNS);
    for (i, run) in runs.windows(2).enumerate() {
        if i % WARM_RUNS == 0 && step.store.reads_ahead() {
            // This run's lookup and the next ones', read together.
            lookups.clear();
            lookups.extend(runs[i..].windows(2).take(WARM_RUNS).filter_map(|run| {
                let records = &grouped[run[0]..run[1]];
                K::run_reads(ticks, records).map(|reads| (records[0].key, reads))
            }));
            std::hint::black_box(step.store.warm(&lookups));
        }
        let run = &grouped[run[0]..run[1]];
        let outcome = K::step_run(ticks, step, scratch, run)?;
        if let Some(held) = held.as_deref_mut() {
            hold_run(held, step.store.keys_mut(), run)?;
        }
        total.puts += outcome.puts;
        total.removes += outcome.removes;
        total.isolated += outcome.isolated;
        total.max_end = total.max_end.max(outcome.max_end);
    }
    Ok(total)
}

/// Holds the rows of `run`, one key's records, applied: under the id its key has in `table`.
fn hold_run<P>(held: &mut Held, table: &mut KeyTable, run: &[Record<'_, P>]) -> Result<()> {
    let Some(first) = run.first() else {
        return Ok(());
    };
    let id = table.get(first.key).ok_or_else(unstored)?;
    for r in run {
        held.hold(table, id, r.seq);
    }
    Ok(())
}
