//! One key's records of a call applied at once (the processor's batched path,
//! `processor::batched`): the key's windows that the records can read are copied from the
//! store once, the records are applied to the copy one by one in arrival order, exactly as
//! [`super::kind`]'s step applies them to the store, and the windows that changed are written
//! back once.
//!
//! **Which records are run-safe.** A record at `t` with `t >= close`, where
//! `close = stream time - grace` once the record is looked at (`WindowKind::run_safe`). Then,
//! in the step (docs/semantics.md section 4):
//!
//! - it is not late: `t + D >= t >= close`;
//! - every window it changes is open: an existing window containing `t` ends at or after `t`;
//!   its left window ends at `t`; its right window at `t + 1 + D`; the previous record's right
//!   window `[p + 1, p + 1 + D]` is put only if it reaches `t`. So it lands (its left window is
//!   open), counts no `late_window_update`, and never emits (no closed window changes); what
//!   the step does depends on its key's windows only, not on stream time, so not on other keys'
//!   records;
//! - every window it reads is visible, in the record path and here: it reads windows ending in
//!   `[t - D, t + 1 + D]`, and `t - D >= stream time - grace - D`, while store time (the
//!   largest end put, a start `<= stream time + 1` plus `D`) is at most `stream time + D + 1`,
//!   so the oldest live end is at most `stream time - 2D - grace` (retention `3D + grace + 2`);
//! - a window it changes is open when it changes, so in the record path it is emitted (if it
//!   closes within the call) only after its last change in the call: the call's final windows
//!   are the same, with the same values, emitted at once at the end (see `processor::batched`).
//!
//! **The copy.** A key's records read windows ending in `[min t - D, max t + 1 + D]`, which
//! one `find_sessions` returns in start order (every window is `D` long). Of those ending before
//! the earliest record, only the latest can matter (as the window just before a record, whose
//! time tells the previous record and whose aggregate seeds its left window: a window ending at
//! or after `min t` is later for every record), so only it is copied. Each record then sees in
//! the copy exactly the windows its step would read from the store: the records of other keys
//! never touch them, and its own key's earlier records changed the copy as they changed the
//! store.
//!
//! **The same bytes.** Per record, the step's plan on the same windows (the same
//! classification, the same new windows with the same seeds, copied before the record joins
//! them), the record merged into each window containing it as `merge(window, record)` (folded
//! in place when every aggregate has a fixed width, which gives the merge's bytes), new windows
//! built as `merge(seed, record)` (the seed copied and the record folded in, likewise), the
//! seed or the record alone. Float sums add up in the step's order because the merges are the
//! step's, in arrival order. The store counts what the step counts: a put per window rewritten
//! and per new window put (twice when the previous record's right window is the record's left
//! window, as the step puts it twice), no removes.

use super::spec::SlidingSpec;
use crate::agg::fold::Order;
use crate::processor::{Record, RunOutcome, Step};
use crate::state;
use crate::store::session_store::PutOutcome;
use crate::{Error, Result};

/// A window of the key being applied: its start (its end is `start + D`), window time, and
/// its state, `states[at..at + len]` of the scratch.
#[derive(Debug, Clone, Copy)]
struct Held {
    start: i64,
    time: i64,
    at: usize,
    len: usize,
    /// Changed by the call: written back at the end.
    changed: bool,
    /// In the store (else new, put at the end).
    stored: bool,
}

/// A new window a record puts: start, window time, the held window whose aggregate seeds it
/// (else the record alone), and whether the record joins that aggregate. As
/// `super::record_step`'s plan.
#[derive(Debug, Clone, Copy)]
struct New {
    start: i64,
    time: i64,
    seed: Option<usize>,
    with_record: bool,
}

/// Buffers reused from key to key within a call.
#[derive(Debug, Default)]
pub struct RunScratch {
    /// The key's windows, in start order.
    held: Vec<Held>,
    /// The held windows' states, one after the other (a changed state of another length is
    /// appended; the old bytes stay until the next key).
    states: Vec<u8>,
    record: Vec<u8>,
    news: Vec<New>,
    /// The new windows' states, in the order of `news`, and where each lies.
    fresh: Vec<u8>,
    fresh_at: Vec<(usize, usize)>,
    merged: Vec<u8>,
    value: Vec<u8>,
}

/// Applies the run-safe `records` of one key, in arrival order (see the module doc).
pub(super) fn step_run(
    d: i64,
    step: &mut Step<'_, SlidingSpec>,
    sc: &mut RunScratch,
    records: &[Record<'_, ()>],
) -> Result<RunOutcome> {
    let (Some(first), Some((lowest, highest))) = (records.first(), time_range(records)) else {
        return Ok(RunOutcome::default());
    };
    let key = first.key;
    sc.held.clear();
    sc.states.clear();
    // check_record guarantees that t - D and t + 1 + D fit.
    let mut before = None;
    for s in step.store.find_sessions(key, lowest - d, highest + 1) {
        if s.end < lowest {
            before = Some(s);
            continue;
        }
        if let Some(b) = before.take() {
            hold(sc, b.start, b.value);
        }
        hold(sc, s.start, s.value);
    }
    if let Some(b) = before {
        hold(sc, b.start, b.value);
    }

    let mut outcome = RunOutcome::default();
    for r in records {
        apply(d, step, sc, r, &mut outcome)?;
    }

    // The stored windows that changed, rewritten in one pass over the key's windows from the
    // first to the last of them (any unchanged one between them keeps its value), then the
    // new ones put.
    let mut changed = sc.held.iter().filter(|h| h.changed && h.stored);
    if let Some(first) = changed.next() {
        let last = changed.next_back().unwrap_or(first);
        let (held, states) = (&sc.held, &sc.states);
        let mut i = held.partition_point(|h| h.start < first.start);
        step.store.rewrite_sessions(
            key,
            first.start + d,
            last.start,
            &mut sc.value,
            |start, _, old, out| {
                while held.get(i).is_some_and(|h| h.start < start) {
                    i += 1;
                }
                match held.get(i) {
                    Some(h) if h.start == start && h.changed => {
                        state::join(h.time, &states[h.at..h.at + h.len], out);
                    }
                    _ => out.extend_from_slice(old),
                }
                Ok(())
            },
        )?;
    }
    for h in sc.held.iter().filter(|h| h.changed && !h.stored) {
        sc.value.clear();
        state::join(h.time, &sc.states[h.at..h.at + h.len], &mut sc.value);
        if step
            .store
            .put_held((key, None), h.start, h.start + d, &sc.value)?
            == PutOutcome::Expired
        {
            return Err(Error::Internal(
                "a run-safe window expired: the call goes record by record".into(),
            ));
        }
    }
    Ok(outcome)
}

/// The earliest and latest time of `records`, if any.
pub(super) fn time_range(records: &[Record<'_, ()>]) -> Option<(i64, i64)> {
    let times = records.iter().map(|r| r.t);
    Some((times.clone().min()?, times.max()?))
}

/// Adds a stored window to the end of the held ones, its state copied.
fn hold(sc: &mut RunScratch, start: i64, value: &[u8]) {
    let (time, agg_state) = state::split(value);
    let at = sc.states.len();
    sc.states.extend_from_slice(agg_state);
    sc.held.push(Held {
        start,
        time,
        at,
        len: agg_state.len(),
        changed: false,
        stored: true,
    });
}

/// Applies record `r` to the held windows as the step applies it to the store (see
/// `super::record_step`): plan, the record added to the windows containing it, the new windows.
fn apply(
    d: i64,
    step: &mut Step<'_, SlidingSpec>,
    sc: &mut RunScratch,
    r: &Record<'_, ()>,
    outcome: &mut RunOutcome,
) -> Result<()> {
    let t = r.t;
    sc.record.clear();
    step.aggs
        .encode_input(r.inputs, r.row, t, r.seq, &mut sc.record);
    // The windows the step reads: ending in [t - D, t + 1 + D], i.e. starting in
    // [t - 2D, t + 1] (a stored end is start + D, which fits).
    let lo = sc.held.partition_point(|h| h.start + d < t - d);
    let hi = sc.held.partition_point(|h| h.start <= t + 1);
    // The step's classification (`Scratch::read`).
    let (mut before, mut latest, mut exact_previous) = (None, None, None);
    let (mut left_exists, mut right_exists) = (false, false);
    let (mut from, mut to) = (hi, lo);
    for (i, h) in sc.held[lo..hi].iter().enumerate() {
        let i = lo + i;
        let end = h.start + d;
        if end < t {
            before = Some(i);
            continue;
        }
        if h.start > t {
            right_exists = true;
            continue;
        }
        if end == t {
            left_exists = true;
            if h.time < t {
                exact_previous = Some(h.time);
            }
        } else {
            latest = Some(i);
        }
        // Contains t: the record joins it.
        from = from.min(i);
        to = i + 1;
    }
    let previous = exact_previous.or(before.map(|i| sc.held[i].time));

    // The step's new windows (`Scratch::plan_new`), seeds read before the record joins them.
    sc.news.clear();
    if let Some(p) = previous {
        let start = p + 1;
        if start + d >= t && !sc.held[lo..hi].iter().any(|h| h.start == start) {
            sc.news.push(New {
                start,
                time: t,
                seed: None,
                with_record: true,
            });
        }
    }
    if !left_exists {
        let seed = before.filter(|_| previous.is_some_and(|p| t - d <= p));
        sc.news.push(New {
            start: t - d,
            time: t,
            seed,
            with_record: true,
        });
    }
    if let Some(i) = latest.filter(|&i| !right_exists && sc.held[i].time > t) {
        sc.news.push(New {
            start: t + 1,
            time: sc.held[i].time,
            seed: Some(i),
            with_record: false,
        });
    }
    sc.fresh.clear();
    sc.fresh_at.clear();
    let folds = step.aggs.folds_in_place();
    for n in &sc.news {
        let at = sc.fresh.len();
        match (n.seed, n.with_record) {
            (Some(i), true) if folds => {
                // The seed copied, then the record folded in: merge(seed, record)'s bytes.
                let h = sc.held[i];
                sc.fresh.extend_from_slice(&sc.states[h.at..h.at + h.len]);
                fold_record(step, r, &mut sc.fresh[at..], &mut sc.merged, (n.start, d))?;
            }
            (Some(i), true) => {
                let h = sc.held[i];
                step.merge(
                    r.key,
                    (n.start, n.start + d),
                    &sc.states[h.at..h.at + h.len],
                    &sc.record,
                    &mut sc.fresh,
                )?;
            }
            (Some(i), false) => {
                let h = sc.held[i];
                sc.fresh.extend_from_slice(&sc.states[h.at..h.at + h.len]);
            }
            (None, _) => sc.fresh.extend_from_slice(&sc.record),
        }
        sc.fresh_at.push((at, sc.fresh.len() - at));
    }

    // The record joins every window containing it, in start order (`Scratch::update`).
    for i in from..to {
        let h = &mut sc.held[i];
        h.time = h.time.max(t);
        h.changed = true;
        let state = &mut sc.states[h.at..h.at + h.len];
        if folds {
            fold_record(step, r, state, &mut sc.merged, (h.start, d))?;
            continue;
        }
        sc.merged.clear();
        step.merge(
            r.key,
            (h.start, h.start + d),
            state,
            &sc.record,
            &mut sc.merged,
        )?;
        if sc.merged.len() == h.len {
            state.copy_from_slice(&sc.merged);
        } else {
            h.at = sc.states.len();
            h.len = sc.merged.len();
            sc.states.extend_from_slice(&sc.merged);
        }
    }

    // The new windows, in put order (`Scratch::put_new`): a window planned twice is put twice,
    // the second put replacing the first.
    for (n, &(at, len)) in sc.news.iter().zip(&sc.fresh_at) {
        let held = Held {
            start: n.start,
            time: n.time,
            at: sc.states.len(),
            len,
            changed: true,
            stored: false,
        };
        sc.states.extend_from_slice(&sc.fresh[at..at + len]);
        let i = sc.held.partition_point(|h| h.start < n.start);
        match sc.held.get_mut(i) {
            // Only a window this record put (planned twice): never a stored one.
            Some(h) if h.start == n.start => *h = held,
            _ => sc.held.insert(i, held),
        }
        outcome.max_end = outcome.max_end.max(Some(n.start + d));
    }
    outcome.puts += (to.saturating_sub(from) + sc.news.len()) as u64;
    outcome.isolated += u64::from(to <= from);
    Ok(())
}

/// Folds record `r` in place into `state`, the state of window `[start, start + d]`: the bytes
/// of `merge(state, record)`, for fixed-width aggregates. An overflow names the key and the
/// window.
fn fold_record(
    step: &Step<'_, SlidingSpec>,
    r: &Record<'_, ()>,
    state: &mut [u8],
    scratch: &mut Vec<u8>,
    (start, d): (i64, i64),
) -> Result<()> {
    step.aggs
        .fold_row(
            state,
            (r.inputs, r.row),
            (r.t, r.seq),
            scratch,
            Order::StateFirst,
        )
        .map_err(|e| crate::agg::fill_overflow(e, step.keys.render(r.key), start, start + d))
}
