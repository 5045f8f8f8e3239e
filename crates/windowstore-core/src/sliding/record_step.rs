//! What one record does to its key's sliding windows (the steps of [`super::kind`]): read the
//! windows around it, plan the new ones, add it to the existing ones that contain it, put the
//! new ones.
//!
//! The existing windows a record joins (about as many as a window holds records) are the bulk
//! of the work, so they are read once for the plan and then rewritten in one pass over the
//! store ([`SessionStore::rewrite_sessions`](crate::SessionStore::rewrite_sessions)), their
//! states never copied out; only the aggregates that seed a new window are copied.

use super::spec::SlidingSpec;
use crate::agg::fill_overflow;
use crate::agg::fold::Order;
use crate::emit::{Change, EmitMode};
use crate::processor::{Record, Step};
use crate::state;
use crate::store::session_store::PutOutcome;
use crate::store::Session;
use crate::{Error, Result};

/// An existing window read for a record: its start, window time, and state in scratch (copied
/// only for a window whose aggregate seeds a new window).
#[derive(Debug, Clone, Copy)]
struct Found {
    start: i64,
    time: i64,
    state: (usize, usize),
}

/// A new window a record puts: its start, window time, the aggregate it starts from (`seed`,
/// else the record alone), whether the record joins that aggregate, and its state in scratch
/// once [`Scratch::fill`] has built it.
#[derive(Debug, Clone, Copy)]
struct Put {
    start: i64,
    time: i64,
    seed: Option<(usize, usize)>,
    with_record: bool,
    state: (usize, usize),
}

/// What one record does to its key's windows, worked out before any of it happens.
#[derive(Debug, Default)]
struct Plan {
    /// Existing windows that contain the record, in start order (indices into `found`, their
    /// states not copied).
    updates: Vec<usize>,
    /// The latest window ending before the record: the previous left aggregate.
    left_agg: Option<usize>,
    /// The time of the previous record, when a window tells it.
    previous: Option<i64>,
    left_exists: bool,
    /// The latest window containing the record that ends after it.
    right_agg: Option<usize>,
    right_exists: bool,
}

/// Buffers reused from record to record.
#[derive(Debug, Default)]
pub struct Scratch {
    plan: Plan,
    found: Vec<Found>,
    starts: Vec<i64>,
    /// Aggregate states: of the seeds read, then of the new windows.
    states: Vec<u8>,
    pub(super) record: Vec<u8>,
    puts: Vec<Put>,
    value: Vec<u8>,
    merged: Vec<u8>,
    /// The batched path's buffers (`super::run`).
    pub(super) run: super::run::RunScratch,
}

impl Scratch {
    /// Reads a record's windows (the key's windows starting in `[t - 2D, t + 1]`, in start
    /// order) and classifies them as KIP-450 does. Only the aggregates that seed a new window
    /// are copied (the latest window ending before the record, and the latest one containing
    /// it); the windows the record joins are listed by start and window time, and their values
    /// are rewritten in the store afterwards ([`Self::update`]).
    pub(super) fn read<'s>(&mut self, windows: impl Iterator<Item = Session<'s>>, t: i64, d: i64) {
        let mut updates = std::mem::take(&mut self.plan.updates);
        updates.clear();
        self.plan = Plan {
            updates,
            ..Plan::default()
        };
        self.found.clear();
        self.starts.clear();
        self.states.clear();
        let mut before = None;
        let mut latest = None;
        let mut exact_previous = None;
        for s in windows {
            self.starts.push(s.start);
            let end = s.start + d;
            if end < t {
                before = Some(s);
                continue;
            }
            if s.start > t {
                // Only [t + 1, t + 1 + D] starts after t within the range read.
                self.plan.right_exists = true;
                continue;
            }
            let (time, _) = state::split(s.value);
            if end == t {
                self.plan.left_exists = true;
                if time < t {
                    exact_previous = Some(time);
                }
            } else {
                latest = Some(s);
            }
            self.plan.updates.push(self.found.len());
            self.found.push(Found {
                start: s.start,
                time,
                state: (0, 0),
            });
        }
        if let Some(s) = latest {
            self.plan.right_agg = Some(self.found.len());
            let f = self.copy(s);
            self.found.push(f);
        }
        // The previous record's time: told by the window ending at t if it holds an earlier
        // record, else by the latest window ending before t.
        if let Some(s) = before {
            let f = self.copy(s);
            self.plan.previous = Some(f.time);
            self.plan.left_agg = Some(self.found.len());
            self.found.push(f);
        }
        if exact_previous.is_some() {
            self.plan.previous = exact_previous;
        }
    }

    /// A window's start and window time, with its state copied to the end of `states`.
    fn copy(&mut self, s: Session<'_>) -> Found {
        let (time, agg_state) = state::split(s.value);
        let at = self.states.len();
        self.states.extend_from_slice(agg_state);
        Found {
            start: s.start,
            time,
            state: (at, self.states.len()),
        }
    }

    /// Plans the record's new windows (after [`Self::read`]), in put order: the previous
    /// record's right window if missing and now not empty, the record's left window if
    /// missing, and its right window if it would hold a later record. Each is seeded from an
    /// existing aggregate, never from raw records.
    #[inline]
    pub(super) fn plan_new(&mut self, t: i64, d: i64) {
        self.puts.clear();
        let plan = &self.plan;
        if let Some(p) = plan.previous {
            let start = p + 1;
            if !self.starts.contains(&start) && start + d >= t {
                self.puts.push(Put::new(start, t, None, true));
            }
        }
        if !plan.left_exists {
            let seed = plan
                .left_agg
                .filter(|_| plan.previous.is_some_and(|p| t - d <= p))
                .map(|i| self.found[i].state);
            self.puts.push(Put::new(t - d, t, seed, true));
        }
        if let Some(i) = plan
            .right_agg
            .filter(|&i| !plan.right_exists && self.found[i].time > t)
        {
            // The record's right window holds what the latest window containing t holds
            // after t: that window's aggregate before this record.
            let f = self.found[i];
            self.puts
                .push(Put::new(t + 1, f.time, Some(f.state), false));
        }
    }

    /// The existing windows the record joins and the new ones: how many are closed at `close`
    /// (one count per window: when the previous record's right window is the record's left
    /// window, `p + 1 == t - D`, it is planned twice, as Kafka puts it twice), and whether any
    /// is open (the record's own right window never holds it).
    #[inline]
    pub(super) fn closed_and_landed(&self, t: i64, d: i64, close: i64) -> (u64, bool) {
        let updates = self.plan.updates.iter().map(|&i| self.found[i].start);
        let closed_updates = updates.clone().filter(|s| s + d < close).count();
        let closed_new = (0..self.puts.len())
            .filter(|&i| {
                let start = self.puts[i].start;
                start + d < close && self.puts[..i].iter().all(|q| q.start != start)
            })
            .count();
        let landed = updates.clone().any(|s| s + d >= close)
            || self
                .puts
                .iter()
                .any(|p| p.start <= t && p.start + d >= close);
        ((closed_updates + closed_new) as u64, landed)
    }

    /// Whether an existing window the record joins is closed at `close` but not emitted yet
    /// (at or above `emitted_below`).
    pub(super) fn updates_unemitted_closed(&self, d: i64, close: i64, emitted_below: i64) -> bool {
        self.plan.updates.iter().any(|&i| {
            let end = self.found[i].start + d;
            end < close && end >= emitted_below
        })
    }

    /// Raises what adding the record to its windows would raise, changing nothing: for a
    /// record rejected as late, whose merges fail as they would have had it been accepted.
    pub(super) fn check_merges(
        &mut self,
        step: &Step<'_, SlidingSpec>,
        key: &[u8],
        t: i64,
        d: i64,
    ) -> Result<()> {
        for s in step.store.find_sessions(key, t, t) {
            self.value.clear();
            step.merge(
                key,
                (s.start, s.end),
                state::split(s.value).1,
                &self.record,
                &mut self.value,
            )?;
        }
        self.fill(step, key, d)
    }

    /// Adds the record to every existing window containing `t` in one pass over the store
    /// (the windows [`Self::read`] listed, in start order), logging the open ones at `close`
    /// in the changelog modes.
    #[inline]
    pub(super) fn update(
        &mut self,
        step: &mut Step<'_, SlidingSpec>,
        r: &Record<'_, ()>,
        close: i64,
    ) -> Result<()> {
        if self.plan.updates.is_empty() {
            return Ok(());
        }
        let Step {
            store,
            aggs,
            keys,
            mode,
            changelog,
            ..
        } = step;
        let (key, t) = (r.key, r.t);
        let (record, merged) = (&self.record, &mut self.merged);
        let folds = aggs.folds_in_place();
        let rewritten =
            store.rewrite_sessions(key, t, t, &mut self.value, |start, end, old, out| {
                let (time, agg_state) = state::split(old);
                let time = time.max(t);
                out.extend_from_slice(&time.to_le_bytes());
                let merge = if folds {
                    // merge(window, record), folded in place (the same bytes).
                    out.extend_from_slice(agg_state);
                    aggs.fold_row(
                        &mut out[8..],
                        (r.inputs, r.row),
                        (t, r.seq),
                        merged,
                        Order::StateFirst,
                    )
                } else {
                    aggs.merge(agg_state, record, out)
                };
                merge.map_err(|e| fill_overflow(e, keys.render(key), start, end))?;
                if end >= close && *mode != EmitMode::Final {
                    let change = Change {
                        key: key.to_vec(),
                        start,
                        end,
                        time,
                        state: out[8..].to_vec(),
                        delete: false,
                    };
                    changelog.push(change, false);
                }
                Ok(())
            })?;
        if rewritten as usize != self.plan.updates.len() {
            return Err(Error::Internal(format!(
                "{rewritten} windows containing {t} rewritten, {} read",
                self.plan.updates.len()
            )));
        }
        Ok(())
    }

    /// Builds the new windows' states (after [`Self::plan_new`]), in put order.
    pub(super) fn fill(&mut self, step: &Step<'_, SlidingSpec>, key: &[u8], d: i64) -> Result<()> {
        for i in 0..self.puts.len() {
            let p = self.puts[i];
            let at = self.states.len();
            match (p.seed, p.with_record) {
                (Some(s), true) => {
                    let mut out = std::mem::take(&mut self.value);
                    out.clear();
                    let merged = step.merge(
                        key,
                        (p.start, p.start + d),
                        &self.states[s.0..s.1],
                        &self.record,
                        &mut out,
                    );
                    self.states.extend_from_slice(&out);
                    self.value = out;
                    merged?;
                }
                (Some(s), false) => self.states.extend_from_within(s.0..s.1),
                (None, _) => self.states.extend_from_slice(&self.record),
            }
            self.puts[i].state = (at, self.states.len());
        }
        Ok(())
    }

    /// Puts the new windows (after [`Self::fill`]), logging the open ones at `step.close` in
    /// the changelog modes. In `final` mode everything closed goes out before a closed
    /// window is put, so that it lies below `emitted_below` and is never emitted.
    #[inline]
    pub(super) fn put_new(
        &mut self,
        step: &mut Step<'_, SlidingSpec>,
        key: &[u8],
        d: i64,
    ) -> Result<()> {
        for p in &self.puts {
            let end = p.start + d;
            let open = end >= step.close;
            if !open && step.mode == EmitMode::Final && end >= step.emitted_below {
                step.emit_closed();
            }
            self.value.clear();
            let agg_state = &self.states[p.state.0..p.state.1];
            state::join(p.time, agg_state, &mut self.value);
            let outcome = step.put(key, p.start, end, &self.value)?;
            if outcome == PutOutcome::Expired {
                // Unreachable: retention covers every window a non-late record can reach.
                return Err(Error::Internal(format!(
                    "window [{}, {end}] expired in the store although a record reached it",
                    p.start
                )));
            }
            if open && step.mode != EmitMode::Final {
                let change = Change {
                    key: key.to_vec(),
                    start: p.start,
                    end,
                    time: p.time,
                    state: agg_state.to_vec(),
                    delete: false,
                };
                step.changelog.push(change, outcome == PutOutcome::Inserted);
            }
        }
        Ok(())
    }
}

impl Put {
    fn new(start: i64, time: i64, seed: Option<(usize, usize)>, with_record: bool) -> Self {
        Self {
            start,
            time,
            seed,
            with_record,
            state: (0, 0),
        }
    }
}
