//! One key's records of a call applied at once (the processor's batched path,
//! `processor::batched`): the key's sessions that the records can meet are read from the store
//! once, the records are applied to them one by one in arrival order, exactly as
//! [`super::kind`]'s step applies them to the store, and what changed is written back once.
//!
//! The records are run-safe (within the grace of stream time), so none is late and every
//! session one meets is live and visible (retention covers max gap + grace): the step's
//! checks for those cases never fire, and are not repeated here. The merges are the step's, in
//! its order (a record's state merged with each candidate's, by end then start; with one
//! candidate, the in-place append, which gives the same bytes), so every state is byte for byte
//! the step's.
//!
//! In the changelog modes (`updates`; `changes` stays record by record), each record's rows
//! are the step's, pushed stamped with the record's arrival number, so that the call's
//! changelog comes out in record order although keys are applied one after another.
//!
//! A session whose stored value is large (a long `collect` list) is not copied: records that
//! extend it edit it in the store, as the step does, so that a long session grown over many
//! calls costs what the records add, not its size per call.

use super::kind::log_merge;
use super::SessionSpec;
use crate::agg::append::Place;
use crate::agg::fold::Order;
use crate::emit::EmitMode;
use crate::processor::{Record, RunOutcome, Step};
use crate::state;
use crate::store::edits::Edits;
use crate::store::segment::BIG_VALUE_BYTES;
use crate::store::session_store::PutOutcome;
use crate::{Error, Result};

/// A session of the key being applied: its window, reach, and where its state is.
#[derive(Debug)]
struct Held {
    start: i64,
    end: i64,
    reach: i64,
    state: State,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// A copy, `states[at..at + len]` of the scratch, to be put at the end if `changed`.
    Copied {
        at: usize,
        len: usize,
        changed: bool,
    },
    /// In the store under the held window, edited there.
    Stored,
}

/// Buffers reused from key to key within a call.
#[derive(Debug, Default)]
pub(super) struct RunScratch {
    held: Vec<Held>,
    /// The copied states of the held sessions, one after the other (a state that changes
    /// length is appended again; the old bytes stay until the next key).
    states: Vec<u8>,
    /// The key's windows the store holds among those read or written here.
    in_store: Vec<(i64, i64)>,
    met: Vec<usize>,
    /// Records of the run that met no session.
    isolated: u64,
    acc: Vec<u8>,
    merged: Vec<u8>,
    value: Vec<u8>,
    edits: Edits,
    record: Vec<u8>,
}

/// The sessions `records` (one key's run) meet, as `find_sessions` bounds: a record at `t`
/// with gap `g` meets the sessions with reach `>= t` and start `<= t + g`.
pub(super) fn reads(records: &[Record<'_, i64>]) -> Option<(i64, i64)> {
    let lowest = records.iter().map(|r| r.t).min()?;
    let highest = records.iter().map(|r| r.t + r.prepared).max()?;
    Some((lowest, highest))
}

/// Applies the run-safe `records` of one key, in arrival order (see the module doc).
pub(super) fn step_run(
    step: &mut Step<'_, SessionSpec>,
    sc: &mut RunScratch,
    records: &[Record<'_, i64>],
) -> Result<RunOutcome> {
    let (Some(first), Some((lowest, highest))) = (records.first(), reads(records)) else {
        return Ok(RunOutcome::default());
    };
    let key = first.key;
    sc.held.clear();
    sc.states.clear();
    sc.in_store.clear();
    sc.isolated = 0;
    // The key's id, looked up once: it stays the key's while the run works (puts go first).
    let id = step.store.key_id(key);
    let found = id
        .into_iter()
        .flat_map(|id| step.store.find_sessions_of(id, lowest, highest));
    for s in found {
        let (end, agg_state) = state::split(s.value);
        let state = if s.value.len() >= BIG_VALUE_BYTES {
            State::Stored
        } else {
            let at = sc.states.len();
            sc.states.extend_from_slice(agg_state);
            State::Copied {
                at,
                len: agg_state.len(),
                changed: false,
            }
        };
        sc.held.push(Held {
            start: s.start,
            end,
            reach: s.end,
            state,
        });
        sc.in_store.push((s.start, s.end));
    }

    // Each record puts its session once; every record is accepted, and a session's end is a
    // record's time, so the latest end put is the latest record time (as the steps track it).
    let mut outcome = RunOutcome {
        puts: records.len() as u64,
        ..RunOutcome::default()
    };
    for r in records {
        step.changelog.at(r.seq);
        let (removes, put_end) = apply(step, sc, r)?;
        outcome.removes += removes;
        outcome.max_end = outcome.max_end.max(Some(put_end));
    }
    outcome.isolated = sc.isolated;
    let latest = records.iter().map(|r| r.t).max();
    step.latest_end = step.latest_end.max(latest);

    // Puts first, so that the key stays interned while its old sessions go.
    for h in &sc.held {
        if let State::Copied {
            at,
            len,
            changed: true,
        } = h.state
        {
            sc.value.clear();
            state::join(h.end, &sc.states[at..at + len], &mut sc.value);
            expired(
                step.store
                    .put_held((key, id), h.start, h.reach, &sc.value)?,
            )?;
        }
    }
    // A key with sessions in the store before the run still has them until these removes.
    if let Some(id) = id {
        for &(start, reach) in &sc.in_store {
            let kept = sc
                .held
                .binary_search_by(|h| (h.reach, h.start).cmp(&(reach, start)))
                .is_ok();
            if !kept {
                step.store.remove_as(id, key, start, reach);
            }
        }
    }
    Ok(outcome)
}

/// Refuses a put of an expired session, which a run-safe record cannot make: the call then
/// goes record by record.
fn expired(outcome: PutOutcome) -> Result<()> {
    if outcome == PutOutcome::Expired {
        return Err(Error::Internal(
            "a run-safe session expired: the call goes record by record".into(),
        ));
    }
    Ok(())
}

/// Applies record `r` to the key's held sessions as the step applies it to the store; returns
/// the removes the step makes (sessions whose window or reach the merge changes) and the end
/// (reach) of the session it puts.
fn apply(
    step: &mut Step<'_, SessionSpec>,
    sc: &mut RunScratch,
    r: &Record<'_, i64>,
) -> Result<(u64, i64)> {
    let t = r.t;
    let reach = t + r.prepared;
    // The held sessions are ordered by reach, then start (the store's find order): the
    // candidates are among those from the first reaching t on.
    let from = sc.held.partition_point(|h| h.reach < t);
    sc.met.clear();
    sc.met.extend(
        sc.held[from..]
            .iter()
            .enumerate()
            .filter(|(_, h)| h.start <= reach)
            .map(|(i, _)| from + i),
    );
    match sc.met[..] {
        [] => {
            sc.isolated += 1;
            sc.acc.clear();
            step.aggs
                .encode_input(r.inputs, r.row, t, r.seq, &mut sc.acc);
            if logs(step) {
                log_merge(&mut step.changelog, r.key, t, [], ((t, t), sc.acc.clone()));
            }
            insert(sc, (t, t, reach));
            Ok((0, reach))
        }
        [one] => extend(step, sc, one, r, reach),
        _ => {
            sc.acc.clear();
            step.aggs
                .encode_input(r.inputs, r.row, t, r.seq, &mut sc.acc);
            merge_all(step, sc, r, reach)
        }
    }
}

/// The one session met, `held[i]`, extended by record `r`: folded into a copied state of
/// fixed width, else with the in-place append; both give the bytes of the merge.
fn extend(
    step: &mut Step<'_, SessionSpec>,
    sc: &mut RunScratch,
    i: usize,
    r: &Record<'_, i64>,
    reach: i64,
) -> Result<(u64, i64)> {
    let t = r.t;
    let (from, end) = ((sc.held[i].start, sc.held[i].reach), sc.held[i].end);
    let to = (from.0.min(t), from.1.max(reach));
    let merged = (to.0, end.max(t));
    // The state before, for the delete the changelog forwards; one it elides (or the step does
    // not forward: the merged window is the record's own `[t, t]`) needs none.
    let delete =
        if logs(step) && merged != (t, t) && step.changelog.keeps_delete(r.key, from.0, end) {
            held_state(step, r.key, &sc.held[i], &sc.states)?
        } else {
            Vec::new()
        };
    let h = &mut sc.held[i];
    match &mut h.state {
        State::Copied { at, len, changed } if step.aggs.folds_in_place() => {
            let state = &mut sc.states[*at..*at + *len];
            step.aggs.fold_row(
                state,
                (r.inputs, r.row),
                (t, r.seq),
                &mut sc.record,
                Order::RecordFirst,
            )?;
            *changed = true;
        }
        State::Copied { at, len, changed } => {
            sc.acc.clear();
            step.aggs
                .encode_input(r.inputs, r.row, t, r.seq, &mut sc.acc);
            sc.edits.clear();
            step.aggs.append_edits(
                (&sc.states[*at..*at + *len], &sc.acc),
                place(r, end),
                0,
                &mut sc.edits,
                &mut sc.merged,
            )?;
            // The edited state goes to the end of the arena (its length may change).
            sc.value.clear();
            sc.value.extend_from_slice(&sc.states[*at..*at + *len]);
            sc.edits.apply(&mut sc.value);
            (*at, *len) = (sc.states.len(), sc.value.len());
            sc.states.extend_from_slice(&sc.value);
            *changed = true;
        }
        State::Stored => {
            sc.acc.clear();
            step.aggs
                .encode_input(r.inputs, r.row, t, r.seq, &mut sc.acc);
            sc.edits.clear();
            if t > end {
                sc.edits.push(0, 8, &t.to_le_bytes());
            }
            let value = step
                .store
                .fetch_session(r.key, from.0, from.1)
                .ok_or_else(|| Error::Internal("a held session is not in the store".into()))?;
            step.aggs.append_edits(
                (&value[8.min(value.len())..], &sc.acc),
                place(r, end),
                8,
                &mut sc.edits,
                &mut sc.merged,
            )?;
            let Some(outcome) = step.store.amend_held(r.key, from, to, &sc.edits)? else {
                return Err(Error::Internal(
                    "a held session could not be edited in place".into(),
                ));
            };
            expired(outcome)?;
            if let Some(w) = sc.in_store.iter_mut().find(|w| **w == from) {
                *w = to;
            }
        }
    }
    let h = &mut sc.held[i];
    (h.start, h.end, h.reach) = (to.0, end.max(t), to.1);
    if logs(step) {
        let state = held_state(step, r.key, &sc.held[i], &sc.states)?;
        let met = [((from.0, end), delete)];
        log_merge(&mut step.changelog, r.key, t, met, (merged, state));
    }
    let moved = to != from;
    if moved {
        reorder(&mut sc.held, i);
    }
    Ok((u64::from(moved), to.1))
}

/// Whether the call keeps a changelog (the modes other than `final`).
fn logs(step: &Step<'_, SessionSpec>) -> bool {
    step.mode != EmitMode::Final
}

/// A copy of the aggregate state of held session `h` of `key` (a copied one in `states`).
fn held_state(
    step: &Step<'_, SessionSpec>,
    key: &[u8],
    h: &Held,
    states: &[u8],
) -> Result<Vec<u8>> {
    match h.state {
        State::Copied { at, len, .. } => Ok(states[at..at + len].to_vec()),
        State::Stored => step
            .store
            .fetch_session(key, h.start, h.reach)
            .map(|v| state::split(v).1.to_vec())
            .ok_or_else(|| Error::Internal("a held session is not in the store".into())),
    }
}

/// Where record `r` goes in a session ending at `end`.
fn place(r: &Record<'_, i64>, end: i64) -> Place {
    Place {
        key: (r.t, r.seq),
        at_end: r.t >= end,
    }
}

/// The sessions met (`sc.met`, two or more) and record `r` merged into one: the record's
/// state merged with each session's in order, as the step merges them.
fn merge_all(
    step: &mut Step<'_, SessionSpec>,
    sc: &mut RunScratch,
    r: &Record<'_, i64>,
    reach: i64,
) -> Result<(u64, i64)> {
    let t = r.t;
    let (mut m_start, mut m_end, mut m_reach) = (t, t, reach);
    for &i in &sc.met {
        let h = &sc.held[i];
        m_start = m_start.min(h.start);
        m_end = m_end.max(h.end);
        m_reach = m_reach.max(h.reach);
    }
    for &i in &sc.met {
        let h = &sc.held[i];
        let state = match h.state {
            State::Copied { at, len, .. } => &sc.states[at..at + len],
            State::Stored => step
                .store
                .fetch_session(r.key, h.start, h.reach)
                .map(|v| state::split(v).1)
                .ok_or_else(|| Error::Internal("a held session is not in the store".into()))?,
        };
        sc.merged.clear();
        step.merge(r.key, (m_start, m_end), &sc.acc, state, &mut sc.merged)?;
        std::mem::swap(&mut sc.acc, &mut sc.merged);
    }
    if logs(step) {
        let met = sc
            .met
            .iter()
            .map(|&i| {
                Ok((
                    (sc.held[i].start, sc.held[i].end),
                    held_state(step, r.key, &sc.held[i], &sc.states)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        log_merge(
            &mut step.changelog,
            r.key,
            t,
            met,
            ((m_start, m_end), sc.acc.clone()),
        );
    }
    let removes = sc
        .met
        .iter()
        .filter(|&&i| (sc.held[i].start, sc.held[i].reach) != (m_start, m_reach))
        .count() as u64;
    for &i in sc.met.iter().rev() {
        sc.held.remove(i);
    }
    insert(sc, (m_start, m_end, m_reach));
    Ok((removes, m_reach))
}

/// Adds a new (changed) session `[start, end]` reaching `reach`, with the state in `sc.acc`,
/// at its place in (reach, start) order.
fn insert(sc: &mut RunScratch, (start, end, reach): (i64, i64, i64)) {
    let state = State::Copied {
        at: sc.states.len(),
        len: sc.acc.len(),
        changed: true,
    };
    sc.states.extend_from_slice(&sc.acc);
    let at = sc
        .held
        .partition_point(|h| (h.reach, h.start) < (reach, start));
    sc.held.insert(
        at,
        Held {
            start,
            end,
            reach,
            state,
        },
    );
}

/// Moves `held[i]`, whose reach or start changed, back to its place in (reach, start) order.
fn reorder(held: &mut [Held], mut i: usize) {
    let order = |h: &Held| (h.reach, h.start);
    while i + 1 < held.len() && order(&held[i]) > order(&held[i + 1]) {
        held.swap(i, i + 1);
        i += 1;
    }
    while i > 0 && order(&held[i]) < order(&held[i - 1]) {
        held.swap(i, i - 1);
        i -= 1;
    }
}
