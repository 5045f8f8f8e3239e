//! KIP-450's two-new-windows rule (docs/semantics.md section 4), written once: what one record
//! does to its key's sliding windows in the store (`super::store`).
//!
//! Per record at `t`, with `close = stream time - grace`:
//!
//! 1. a record with `t + D < close` is late and dropped whole;
//! 2. the key's windows starting in `[t - 2D, t + 1]` are classified: the latest ending before
//!    `t` tells the previous record's time and holds its left window's aggregate; the one
//!    ending at `t` is the record's own left window; those containing `t` get the record; one
//!    starting at `t + 1` is the record's right window;
//! 3. new windows are each seeded from an existing aggregate, never from raw records (the
//!    seeds are read before the record joins any window): the previous record's right window
//!    if it now holds this record, the record's left window (the previous left aggregate plus
//!    the record), and its right window (the aggregate of the latest window containing `t`, if
//!    it holds a later record);
//! 4. a record none of whose windows is open is in no window at all: it is rejected as late and
//!    changes nothing (Kafka drops it with only the skipped updates counted).
//!
//! **Stored windows are exact.** Every window in the store holds exactly the accepted records of
//! its key with time in `[start, end]`, closed or not: the seeds of step 3 are right only then.
//! So an accepted record also updates, and creates, those of its windows that have closed,
//! silently: their change is never emitted or logged (each is counted as
//! `late_window_update`), and in `final` mode everything closed is emitted before a closed
//! window changes, so that it lies below `emitted_below` and is never emitted again. Kafka
//! skips closed windows instead, and then seeds later windows from the wrong neighbours
//! (docs/semantics.md section 7).
//!
//! Changes come as updates of existing windows in ascending start order, then the new windows
//! in the order of step 3. Kafka 4.x iterates its store backwards and updates latest start
//! first; the conformance tests map that (`sliding_order_within_record`).

use smallvec::SmallVec;

use super::changelog::Log;
use super::spec::SlidingSpec;
use super::store::{SlidingStore, NO_KEY};
use super::windows::Windows;
use crate::agg::fill_overflow;
use crate::agg::fold::Order;
use crate::emit::{Change, EmitMode};
use crate::processor::{Applying, Record};
use crate::state;
use crate::store::key_table::KeyId;
use crate::Result;

/// A new window a record puts: its start, window time, the existing window whose aggregate
/// seeds it (else the record alone), and whether the record joins that aggregate.
#[derive(Debug, Clone, Copy)]
struct New {
    start: i64,
    time: i64,
    seed: Option<usize>,
    with_record: bool,
}

/// What one record does to its key's windows, worked out before any of it happens (indices
/// are into the key's windows).
#[derive(Debug, Default)]
struct Plan {
    /// The windows containing the record: `from..to`.
    from: usize,
    to: usize,
    /// The new windows, in put order.
    news: SmallVec<[New; 3]>,
}

/// Records read ahead together ([`SlidingStore::read_ahead`]).
const READ_AHEAD: usize = 16;

/// Buffers reused from record to record.
#[derive(Debug, Default)]
pub struct Scratch {
    /// The key id of each record of the chunk being applied (see [`read_ahead`]).
    ids: Vec<KeyId>,
    /// The rows before this one have been read ahead.
    read_to: usize,
    /// The record alone, as an aggregate state.
    record: Vec<u8>,
    /// The new windows' values (window time, then state), one after the other.
    fresh: Vec<u8>,
    fresh_at: SmallVec<[(usize, usize); 3]>,
    merged: Vec<u8>,
    /// The call's changelog in `updates` mode.
    log: Log,
}

/// Applies record `r` to its key's windows (see the module doc); returns whether it was
/// accepted (`false`: late).
pub(super) fn apply(
    d: i64,
    step: &mut Applying<'_, SlidingSpec>,
    sc: &mut Scratch,
    r: &Record<'_, ()>,
) -> Result<bool> {
    let t = r.t;
    // check_record guarantees that t - D and t + 1 + D fit.
    if t + d < step.close {
        return Ok(false);
    }
    sc.record.clear();
    step.aggs
        .encode_input(r.inputs, r.row, t, r.seq, &mut sc.record);
    let close = step.close;
    if r.row >= sc.read_to && r.row < sc.ids.len() && step.store.reads_ahead() {
        sc.read_to = (r.row + READ_AHEAD).min(sc.ids.len());
        std::hint::black_box(step.store.read_ahead(&sc.ids[r.row..sc.read_to]));
    }
    let found = match sc.ids.get(r.row) {
        Some(&id) if id != NO_KEY => Some((id, step.store.windows_of(id))),
        // A key new to the store, maybe since the chunk began.
        _ => step.store.windows(r.key),
    };
    let empty = Windows::default();
    let w = found.map_or(&empty, |(_, w)| w);
    let plan = plan(w, t, d, step.store.min_live_end());
    let (closed, landed) = closed_and_landed(w, &plan, t, d, close);
    step.counters.late_window_update += closed;
    sc.fill(step, w, &plan, r, d)?;
    if !landed {
        // In no open window: rejected as late, so it is in no window and makes none (its right
        // window would repeat a set of records another window holds). It still raises what
        // joining its windows would raise.
        for i in plan.from..plan.to {
            let start = w.slots()[i].start;
            sc.merged.clear();
            let agg_state = state::split(w.value(i)).1;
            step.merge(
                r.key,
                (start, start + d),
                agg_state,
                &sc.record,
                &mut sc.merged,
            )?;
        }
        return Ok(false);
    }
    let emitted_below = step.emitted_below;
    let unemitted_closed = (plan.from..plan.to).any(|i| {
        let end = w.slots()[i].start + d;
        end < close && end >= emitted_below
    });
    let id = found.map(|(id, _)| id);
    if step.mode == EmitMode::Final && unemitted_closed {
        // Everything closed goes out before a closed window changes, so that it lies below
        // emitted_below and is never emitted.
        step.emit_closed();
    }
    // In `final` mode the expired windows the record's key holds go (they were emitted); in
    // the changelog modes, whose rows read the call's windows at its end, the commit's sweep
    // takes them.
    let drop_below = match step.mode {
        EmitMode::Final => emitted_below,
        _ => i64::MIN,
    };
    // The record changes windows starting at t - D or later.
    let (id, dropped) = step.store.windows_mut(r.key, id, t - d, drop_below)?;
    // Only windows that end before any window the record reads were dropped.
    let shifted = |i: usize| {
        i.checked_sub(dropped)
            .ok_or_else(|| crate::Error::Internal("a window the record reads had expired".into()))
    };
    let plan = Plan {
        from: shifted(plan.from)?,
        to: shifted(plan.to)?,
        ..plan
    };
    update(d, step, sc, r, &plan, id)?;
    sc.put_new(d, step, r.key, &plan, id)?;
    Ok(true)
}

/// The record's windows and its new ones (steps 2 and 3 of the module doc), from the key's
/// windows `w` (those ending before `min_live_end` have expired: never read).
fn plan(w: &Windows, t: i64, d: i64, min_live_end: i64) -> Plan {
    let slots = w.slots();
    let from = w.first_from(t - d);
    let to = from + slots[from..].partition_point(|s| s.start <= t);
    let lowest = (t - 2 * d).max(min_live_end.saturating_sub(d));
    let before = (from > 0 && slots[from - 1].start >= lowest).then(|| from - 1);
    let left_exists = from < to && slots[from].start == t - d;
    let exact_previous = left_exists.then(|| w.time(from)).filter(|&p| p < t);
    let latest = (to > from && slots[to - 1].start != t - d).then(|| to - 1);
    let right_exists = slots.get(to).is_some_and(|s| s.start == t + 1);
    let previous = exact_previous.or(before.map(|i| w.time(i)));

    let mut news = SmallVec::new();
    if let Some(p) = previous {
        let start = p + 1;
        let exists = slots[from..to]
            .binary_search_by_key(&start, |s| s.start)
            .is_ok();
        if start + d >= t && !exists {
            news.push(New {
                start,
                time: t,
                seed: None,
                with_record: true,
            });
        }
    }
    if !left_exists {
        let seed = before.filter(|_| previous.is_some_and(|p| t - d <= p));
        news.push(New {
            start: t - d,
            time: t,
            seed,
            with_record: true,
        });
    }
    if let Some(i) = latest.filter(|&i| !right_exists && w.time(i) > t) {
        // The record's right window holds what the latest window containing t holds after t:
        // that window's aggregate before this record.
        news.push(New {
            start: t + 1,
            time: w.time(i),
            seed: Some(i),
            with_record: false,
        });
    }
    Plan { from, to, news }
}

/// How many of the windows the record joins or makes are closed at `close` (one count per
/// window: when the previous record's right window is the record's left window,
/// `p + 1 == t - D`, it is planned twice, as Kafka puts it twice), and whether any is open
/// (the record's own right window never holds it).
fn closed_and_landed(w: &Windows, plan: &Plan, t: i64, d: i64, close: i64) -> (u64, bool) {
    let updates = &w.slots()[plan.from..plan.to];
    let closed_updates = updates.iter().filter(|s| s.start + d < close).count();
    let news = &plan.news;
    let closed_new = (0..news.len())
        .filter(|&i| {
            let start = news[i].start;
            start + d < close && news[..i].iter().all(|q| q.start != start)
        })
        .count();
    let landed = updates.iter().any(|s| s.start + d >= close)
        || news.iter().any(|n| n.start <= t && n.start + d >= close);
    ((closed_updates + closed_new) as u64, landed)
}

/// Adds the record to every existing window containing it, in start order, in place, logging
/// the open ones in the changelog modes.
fn update(
    d: i64,
    step: &mut Applying<'_, SlidingSpec>,
    sc: &mut Scratch,
    r: &Record<'_, ()>,
    plan: &Plan,
    id: KeyId,
) -> Result<()> {
    let Applying {
        store,
        aggs,
        keys,
        mode,
        changelog,
        close,
        ..
    } = step;
    let t = r.t;
    let folds = aggs.folds_in_place();
    let call = store.transaction();
    let mut bytes = 0;
    for i in plan.from..plan.to {
        let w = store.by_id(id);
        let start = w.slots()[i].start;
        let end = start + d;
        let open = end >= *close;
        if !open && *mode == EmitMode::Updates {
            sc.log.freeze(w, call, i);
        }
        let value = w.value_mut(i);
        let time = state::split(value).0.max(t);
        value[..8].copy_from_slice(&time.to_le_bytes());
        let overflow = |e| fill_overflow(e, keys.render(r.key), start, end);
        if folds {
            // merge(window, record), folded in place (the same bytes).
            aggs.fold_row(
                &mut value[8..],
                (r.inputs, r.row),
                (t, r.seq),
                &mut sc.merged,
                Order::StateFirst,
            )
            .map_err(overflow)?;
        } else {
            sc.merged.clear();
            sc.merged.extend_from_slice(&time.to_le_bytes());
            aggs.merge(&value[8..], &sc.record, &mut sc.merged)
                .map_err(overflow)?;
            w.replace(i, &sc.merged)?;
        }
        let w = store.by_id(id);
        let value = w.value(i);
        bytes += value.len();
        if open && *mode == EmitMode::Updates {
            sc.log.note(w, call, id, i);
        } else if open && *mode == EmitMode::Changes {
            let change = Change {
                key: r.key.to_vec(),
                start,
                end,
                time,
                state: value[8..].to_vec(),
                delete: false,
            };
            changelog.push(change, false);
        }
    }
    store.count_rewrites(plan.to - plan.from, bytes);
    Ok(())
}

impl Scratch {
    /// Builds the new windows' values (window time, then state), in put order, from their
    /// seeds as they are before the record joins them.
    fn fill(
        &mut self,
        step: &Applying<'_, SlidingSpec>,
        w: &Windows,
        plan: &Plan,
        r: &Record<'_, ()>,
        d: i64,
    ) -> Result<()> {
        self.fresh.clear();
        self.fresh_at.clear();
        let folds = step.aggs.folds_in_place();
        for n in &plan.news {
            let at = self.fresh.len();
            self.fresh.extend_from_slice(&n.time.to_le_bytes());
            let seed = n.seed.map(|i| state::split(w.value(i)).1);
            match (seed, n.with_record) {
                (Some(seed), true) if folds => {
                    // The seed copied, then the record folded in: merge(seed, record)'s bytes.
                    self.fresh.extend_from_slice(seed);
                    step.aggs
                        .fold_row(
                            &mut self.fresh[at + 8..],
                            (r.inputs, r.row),
                            (r.t, r.seq),
                            &mut self.merged,
                            Order::StateFirst,
                        )
                        .map_err(|e| {
                            fill_overflow(e, step.keys.render(r.key), n.start, n.start + d)
                        })?;
                }
                (Some(seed), true) => {
                    step.merge(
                        r.key,
                        (n.start, n.start + d),
                        seed,
                        &self.record,
                        &mut self.fresh,
                    )?;
                }
                (Some(seed), false) => self.fresh.extend_from_slice(seed),
                (None, _) => self.fresh.extend_from_slice(&self.record),
            }
            self.fresh_at.push((at, self.fresh.len()));
        }
        Ok(())
    }

    /// Puts the new windows (after [`Self::fill`]), logging the open ones in the changelog
    /// modes. In `final` mode everything closed goes out before a closed window is put, so
    /// that it lies below `emitted_below` and is never emitted.
    fn put_new(
        &mut self,
        d: i64,
        step: &mut Applying<'_, SlidingSpec>,
        key: &[u8],
        plan: &Plan,
        id: KeyId,
    ) -> Result<()> {
        for (n, &(at, to)) in plan.news.iter().zip(&self.fresh_at) {
            let end = n.start + d;
            let open = end >= step.close;
            if !open && step.mode == EmitMode::Final && end >= step.emitted_below {
                step.emit_closed();
            }
            let value = &self.fresh[at..to];
            let new = step.store.put(id, n.start, value, step.emitted_below)?;
            if open && step.mode == EmitMode::Updates {
                let call = step.store.transaction();
                let w = step.store.by_id(id);
                let i = w.first_from(n.start);
                self.log.note(w, call, id, i);
            } else if open && step.mode == EmitMode::Changes {
                let change = Change {
                    key: key.to_vec(),
                    start: n.start,
                    end,
                    time: n.time,
                    state: value[8..].to_vec(),
                    delete: false,
                };
                step.changelog.push(change, new);
            }
        }
        Ok(())
    }
}

/// Before a chunk's records are applied: the store's id of each record's key, looked up
/// together (see [`SlidingStore::key_ids`]), and nothing read ahead yet.
pub(super) fn read_ahead(store: &SlidingStore, sc: &mut Scratch, keys: &arrow_row::Rows) {
    store.key_ids(keys, &mut sc.ids);
    sc.read_to = 0;
}

/// The call's `updates` changelog, once its records are applied (`None` in the other modes).
pub(super) fn changelog_rows(
    step: &Applying<'_, SlidingSpec>,
    sc: &mut Scratch,
) -> Result<Option<crate::emit::Rows>> {
    if step.mode != EmitMode::Updates {
        return Ok(None);
    }
    sc.log.rows(step.store, step.store.transaction()).map(Some)
}
