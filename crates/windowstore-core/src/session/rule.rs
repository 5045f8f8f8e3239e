//! The one session rule (docs/semantics.md section 2, streaming): what a record does to its
//! key's sessions. Both of the processor's paths apply records through [`apply`]: the record
//! path ([`super::kind`]'s step) is a run of one record, the batched path
//! (`processor::batched`) a run of a key's records of a call, in arrival order. A run reads the
//! key's sessions its records can meet from the store once (it "loads" them), applies its
//! records to them one by one, and writes what changed back.
//!
//! Per record at `t` with gap `g`, stream time already advanced (the processor does it):
//!
//! 1. it meets the loaded sessions whose coverage `[start, reach]` meets `[t, t + g]` (one hop
//!    suffices: their union with `[t, t + g]` is one interval);
//! 2. it is late if the merged session would be closed (`reach + grace < stream time`) or if it
//!    meets a closed session, and then changes nothing;
//! 3. otherwise the sessions met and the record become one session: the record's state merged
//!    with each met session's, in (reach, start) order. With one session met, the record is
//!    appended to its state in place (`Aggregator::append_edits`, or folded into a fixed-width
//!    state), which gives the merge's bytes at the cost of what the record adds (merges would
//!    copy a `collect` list of `n` records per record);
//! 4. the changelog modes get the rows Kafka forwards ([`log_merge`]).
//!
//! **Record path.** A record loads the sessions it meets that Kafka's store would still show
//! (docs/semantics.md 2.6), their states left in the store: the one session it extends is
//! edited there (`SessionStore::amend`). Store time moves with each change, `final` mode first
//! emitting what the change would expire (as `Applying::put` does).
//!
//! **Batched path.** A run loads every session its records can meet, states copied (but a
//! large value, a long `collect` list, which stays in the store and is edited there, so that a
//! long session grown over many calls costs what the records add). Changes leave store time
//! where it is (`put_keeping_time`, `amend_moving`) for the processor to move once. The records are
//! run-safe (within the grace), so none is late and every session one meets is visible
//! (retention covers max gap + grace): the rule's checks never fire (`step.close` is then the
//! close of an earlier record, at most the record's own), and the outcome is the record
//! path's, byte for byte. Each record's changelog rows are stamped with its arrival
//! number, so that the call's changelog comes out in record order although keys are applied
//! one after another.

use super::SessionSpec;
use crate::agg::append::Place;
use crate::agg::fill_overflow;
use crate::agg::fold::Order;
use crate::emit::{Change, Changelog, EmitMode};
use crate::processor::{Applying, Record, RunOutcome};
use crate::state;
use crate::store::edits::Edits;
use crate::store::key_table::KeyId;
use crate::store::segment::BIG_VALUE_BYTES;
use crate::store::session_store::PutOutcome;
use crate::{Error, Result, SessionStore};

/// A loaded session of the key: its window, reach, and where its state is.
#[derive(Debug)]
struct Loaded {
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
    /// In the store under the loaded window, edited there.
    Stored,
}

/// Buffers reused from run to run within a call.
#[derive(Debug, Default)]
pub struct Scratch {
    /// The loaded sessions, in the store's (reach, start) order.
    loaded: Vec<Loaded>,
    /// The copied states of the loaded sessions, one after the other (a state that changes
    /// length is appended again; the old bytes stay until the next run).
    states: Vec<u8>,
    /// The key's windows the store holds among those read or written here.
    in_store: Vec<(i64, i64)>,
    /// The key's id in the store when the run began, if it had sessions.
    id: Option<KeyId>,
    /// Whether changes leave store time where it is (the batched path).
    batched: bool,
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

/// The record path: applies record `r` alone; returns whether it was accepted (`false`: late).
/// `retention` is the contract's, in ticks.
pub(super) fn step_record(
    step: &mut Applying<'_, SessionSpec>,
    sc: &mut Scratch,
    r: &Record<'_, i64>,
    retention: i64,
) -> Result<bool> {
    // Kafka's store shows the sessions with `end >= its time - retention`, its time being the
    // largest end put (docs/semantics.md 2.6); this store, keyed by reach, still holds the
    // others, which the record treats as gone.
    let visible = step
        .latest_end
        .map_or(i64::MIN, |e| e.saturating_sub(retention));
    load(step, sc, r.key, (r.t, r.t + r.prepared), visible, false);
    if apply(step, sc, r)?.is_none() {
        return Ok(false);
    }
    write_back(step, sc, r.key)?;
    Ok(true)
}

/// The batched path: applies the run-safe `records` of one key, in arrival order.
pub(super) fn step_run(
    step: &mut Applying<'_, SessionSpec>,
    sc: &mut Scratch,
    records: &[Record<'_, i64>],
) -> Result<RunOutcome> {
    let (Some(first), Some(bounds)) = (records.first(), reads(records)) else {
        return Ok(RunOutcome::default());
    };
    // Every session a run-safe record meets is visible (and the ends put by the other keys'
    // runs of the call, applied before this one, are no measure of it).
    load(step, sc, first.key, bounds, i64::MIN, true);
    sc.isolated = 0;
    // Each record puts its session once: every one is accepted.
    let mut outcome = RunOutcome {
        puts: records.len() as u64,
        ..RunOutcome::default()
    };
    for r in records {
        step.changelog.at(r.seq);
        let Some((removes, reach)) = apply(step, sc, r)? else {
            return Err(Error::Internal(
                "a run-safe record was not accepted: the call goes record by record".into(),
            ));
        };
        outcome.removes += removes;
        outcome.max_end = outcome.max_end.max(Some(reach));
    }
    outcome.isolated = sc.isolated;
    write_back(step, sc, first.key)?;
    Ok(outcome)
}

/// Holds the sessions of `key` with reach `>= lowest`, start `<= highest` and end `>=
/// visible`.
fn load(
    step: &Applying<'_, SessionSpec>,
    sc: &mut Scratch,
    key: &[u8],
    (lowest, highest): (i64, i64),
    visible: i64,
    batched: bool,
) {
    sc.loaded.clear();
    sc.states.clear();
    sc.in_store.clear();
    sc.batched = batched;
    let id = step.store.key_id(key);
    sc.id = id;
    let found = id
        .into_iter()
        .flat_map(|id| step.store.find_sessions_of(id, lowest, highest));
    for s in found {
        let (end, agg_state) = state::split(s.value);
        if end < visible {
            continue;
        }
        let state = if batched && s.value.len() < BIG_VALUE_BYTES {
            let at = sc.states.len();
            sc.states.extend_from_slice(agg_state);
            State::Copied {
                at,
                len: agg_state.len(),
                changed: false,
            }
        } else {
            State::Stored
        };
        sc.loaded.push(Loaded {
            start: s.start,
            end,
            reach: s.end,
            state,
        });
        sc.in_store.push((s.start, s.end));
    }
}

/// Applies record `r` to the loaded sessions: the rule (see the module doc). Returns the removes
/// the record makes (sessions whose window or reach the merge changes) and the reach of the
/// session it puts; `None`, having changed nothing, if it is late.
fn apply(
    step: &mut Applying<'_, SessionSpec>,
    sc: &mut Scratch,
    r: &Record<'_, i64>,
) -> Result<Option<(u64, i64)>> {
    let t = r.t;
    let reach = t + r.prepared;
    // The loaded sessions are in (reach, start) order: those met are among the ones from the
    // first reaching t on.
    let from = sc.loaded.partition_point(|h| h.reach < t);
    sc.met.clear();
    sc.met
        .extend((from..sc.loaded.len()).filter(|&i| sc.loaded[i].start <= reach));
    let (mut m_start, mut m_end, mut m_reach) = (t, t, reach);
    let mut meets_closed = false;
    for &i in &sc.met {
        let h = &sc.loaded[i];
        m_start = m_start.min(h.start);
        m_end = m_end.max(h.end);
        m_reach = m_reach.max(h.reach);
        meets_closed |= h.reach < step.close;
    }
    // A merged session below the store's oldest live end could not be put: unreachable while
    // retention covers max gap + grace (checked when binding), a rejection rather than a loss
    // if it ever happens.
    if meets_closed || m_reach < step.close || m_reach < step.store.min_live_end() {
        return Ok(None);
    }
    step.latest_end = Some(step.latest_end.map_or(m_end, |e| e.max(m_end)));
    let merged = (m_start, m_end, m_reach);
    let removes = match sc.met[..] {
        [] => {
            sc.isolated += 1;
            encode(step, sc, r);
            if logs(step) {
                log_merge(&mut step.changelog, r.key, t, [], ((t, t), sc.acc.clone()));
            }
            insert(sc, merged);
            0
        }
        [one] => extend(step, sc, one, r, merged)?,
        _ => merge_all(step, sc, r, merged)?,
    };
    Ok(Some((removes, m_reach)))
}

/// The one session met, `loaded[i]`, extended by record `r` into `merged` (start, end, reach):
/// edited in the store where it is there ([`amend`]), else its copy folded or appended in
/// place; every way gives the bytes of the merge. Returns the removes (1 if it moved).
fn extend(
    step: &mut Applying<'_, SessionSpec>,
    sc: &mut Scratch,
    i: usize,
    r: &Record<'_, i64>,
    (m_start, m_end, m_reach): (i64, i64, i64),
) -> Result<u64> {
    let t = r.t;
    let (from, end) = ((sc.loaded[i].start, sc.loaded[i].reach), sc.loaded[i].end);
    let to = (m_start, m_reach);
    // The state before, for the delete the changelog forwards; one it elides (or does not
    // forward: the merged window is the record's own `[t, t]`) needs none.
    let delete = if logs(step)
        && (m_start, m_end) != (t, t)
        && step.changelog.keeps_delete(r.key, from.0, end)
    {
        state_of(step.store, r.key, &sc.loaded[i], &sc.states)?.to_vec()
    } else {
        Vec::new()
    };
    if matches!(sc.loaded[i].state, State::Stored) && !amend(step, sc, r, (from, end), to)? {
        // The store cannot edit it in place: a copy is edited instead, and put.
        let at = sc.states.len();
        sc.states
            .extend_from_slice(stored(step.store, r.key, from)?);
        let len = sc.states.len() - at;
        sc.loaded[i].state = State::Copied {
            at,
            len,
            changed: false,
        };
    }
    let named = |e| fill_overflow(e, step.keys.render(r.key), m_start, m_end);
    match &mut sc.loaded[i].state {
        State::Stored => {}
        State::Copied { at, len, changed } if step.aggs.folds_in_place() => {
            let state = &mut sc.states[*at..*at + *len];
            step.aggs
                .fold_row(
                    state,
                    (r.inputs, r.row),
                    (t, r.seq),
                    &mut sc.record,
                    Order::RecordFirst,
                )
                .map_err(named)?;
            *changed = true;
        }
        State::Copied { at, len, changed } => {
            sc.acc.clear();
            step.aggs
                .encode_input(r.inputs, r.row, t, r.seq, &mut sc.acc);
            sc.edits.clear();
            step.aggs
                .append_edits(
                    (&sc.states[*at..*at + *len], &sc.acc),
                    place(r, end),
                    0,
                    &mut sc.edits,
                    &mut sc.merged,
                )
                .map_err(named)?;
            // The edited state goes to the end of the arena (its length may change).
            sc.value.clear();
            sc.value.extend_from_slice(&sc.states[*at..*at + *len]);
            sc.edits.apply(&mut sc.value);
            (*at, *len) = (sc.states.len(), sc.value.len());
            sc.states.extend_from_slice(&sc.value);
            *changed = true;
        }
    }
    let h = &mut sc.loaded[i];
    (h.start, h.end, h.reach) = (m_start, m_end, m_reach);
    if logs(step) {
        let state = state_of(step.store, r.key, &sc.loaded[i], &sc.states)?.to_vec();
        let met = [((from.0, end), delete)];
        log_merge(
            &mut step.changelog,
            r.key,
            t,
            met,
            ((m_start, m_end), state),
        );
    }
    let moved = to != from;
    if moved {
        reorder(&mut sc.loaded, i);
    }
    Ok(u64::from(moved))
}

/// Appends record `r` to the stored session `from` (ending at `end`) and moves it to window
/// `to`, in the store; `false`, having changed nothing, where the store cannot
/// (`SessionStore::amend`).
fn amend(
    step: &mut Applying<'_, SessionSpec>,
    sc: &mut Scratch,
    r: &Record<'_, i64>,
    (from, end): ((i64, i64), i64),
    to: (i64, i64),
) -> Result<bool> {
    encode(step, sc, r);
    sc.edits.clear();
    if r.t > end {
        sc.edits.push(0, 8, &r.t.to_le_bytes());
    }
    let value = step
        .store
        .fetch_session(r.key, from.0, from.1)
        .ok_or_else(not_loaded)?;
    step.aggs
        .append_edits(
            (&value[8.min(value.len())..], &sc.acc),
            place(r, end),
            8,
            &mut sc.edits,
            &mut sc.merged,
        )
        .map_err(|e| fill_overflow(e, step.keys.render(r.key), to.0, end.max(r.t)))?;
    let outcome = if sc.batched {
        step.store.amend_moving(r.key, from, to, &sc.edits, false)?
    } else {
        if step.mode == EmitMode::Final && step.store.put_would_drop_segments(to.1) {
            step.emit_closed();
        }
        step.store.amend(r.key, from, to, &sc.edits)?
    };
    let Some(outcome) = outcome else {
        return Ok(false);
    };
    expired(outcome)?;
    if let Some(w) = sc.in_store.iter_mut().find(|w| **w == from) {
        *w = to;
    }
    Ok(true)
}

/// The sessions met (`sc.met`, two or more) and record `r` merged into one, `merged` (start,
/// end, reach): the record's state merged with each session's in order. Returns the removes.
fn merge_all(
    step: &mut Applying<'_, SessionSpec>,
    sc: &mut Scratch,
    r: &Record<'_, i64>,
    (m_start, m_end, m_reach): (i64, i64, i64),
) -> Result<u64> {
    encode(step, sc, r);
    for &i in &sc.met {
        let state = state_of(step.store, r.key, &sc.loaded[i], &sc.states)?;
        sc.merged.clear();
        step.merge(r.key, (m_start, m_end), &sc.acc, state, &mut sc.merged)?;
        std::mem::swap(&mut sc.acc, &mut sc.merged);
    }
    if logs(step) {
        let met = sc
            .met
            .iter()
            .map(|&i| {
                let h = &sc.loaded[i];
                let state = state_of(step.store, r.key, h, &sc.states)?.to_vec();
                Ok(((h.start, h.end), state))
            })
            .collect::<Result<Vec<_>>>()?;
        let merged = ((m_start, m_end), sc.acc.clone());
        log_merge(&mut step.changelog, r.key, r.t, met, merged);
    }
    let removes = sc
        .met
        .iter()
        .filter(|&&i| (sc.loaded[i].start, sc.loaded[i].reach) != (m_start, m_reach))
        .count() as u64;
    for &i in sc.met.iter().rev() {
        sc.loaded.remove(i);
    }
    insert(sc, (m_start, m_end, m_reach));
    Ok(removes)
}

/// Puts the loaded sessions that changed, then removes the key's stored windows that are no
/// longer loaded (puts first, so that the key stays interned).
fn write_back(step: &mut Applying<'_, SessionSpec>, sc: &mut Scratch, key: &[u8]) -> Result<()> {
    for h in &sc.loaded {
        if let State::Copied {
            at,
            len,
            changed: true,
        } = h.state
        {
            sc.value.clear();
            state::join(h.end, &sc.states[at..at + len], &mut sc.value);
            expired(if sc.batched {
                step.store
                    .put_keeping_time((key, sc.id), h.start, h.reach, &sc.value)?
            } else {
                step.put(key, h.start, h.reach, &sc.value)?
            })?;
        }
    }
    if let Some(id) = sc.id {
        for &(start, reach) in &sc.in_store {
            let kept = sc
                .loaded
                .binary_search_by(|h| (h.reach, h.start).cmp(&(reach, start)))
                .is_ok();
            if !kept {
                step.store.remove_as(id, key, start, reach);
            }
        }
    }
    Ok(())
}

/// Refuses a put of an expired session, which [`apply`] has ruled out.
fn expired(outcome: PutOutcome) -> Result<()> {
    if outcome == PutOutcome::Expired {
        return Err(Error::Internal("a session expired as it was put".into()));
    }
    Ok(())
}

/// Record `r`'s own aggregate state, into `sc.acc`.
fn encode(step: &Applying<'_, SessionSpec>, sc: &mut Scratch, r: &Record<'_, i64>) {
    sc.acc.clear();
    step.aggs
        .encode_input(r.inputs, r.row, r.t, r.seq, &mut sc.acc);
}

/// Whether the call keeps a changelog (the modes other than `final`).
fn logs(step: &Applying<'_, SessionSpec>) -> bool {
    step.mode != EmitMode::Final
}

/// The aggregate state of loaded session `h` of `key`: its copy in `states`, or the store's.
fn state_of<'a>(
    store: &'a SessionStore,
    key: &[u8],
    h: &Loaded,
    states: &'a [u8],
) -> Result<&'a [u8]> {
    match h.state {
        State::Copied { at, len, .. } => Ok(&states[at..at + len]),
        State::Stored => stored(store, key, (h.start, h.reach)),
    }
}

/// The aggregate state the store holds for window `(start, reach)` of `key`.
fn stored<'a>(store: &'a SessionStore, key: &[u8], (start, reach): (i64, i64)) -> Result<&'a [u8]> {
    let value = store
        .fetch_session(key, start, reach)
        .ok_or_else(not_loaded)?;
    Ok(state::split(value).1)
}

fn not_loaded() -> Error {
    Error::Internal("a loaded session is not in the store".into())
}

/// Where record `r` goes in a session ending at `end`.
fn place(r: &Record<'_, i64>, end: i64) -> Place {
    Place {
        key: (r.t, r.seq),
        at_end: r.t >= end,
    }
}

/// Adds a new (changed) session `[start, end]` reaching `reach`, with the state in `sc.acc`,
/// at its place in (reach, start) order.
fn insert(sc: &mut Scratch, (start, end, reach): (i64, i64, i64)) {
    let state = State::Copied {
        at: sc.states.len(),
        len: sc.acc.len(),
        changed: true,
    };
    sc.states.extend_from_slice(&sc.acc);
    let at = sc
        .loaded
        .partition_point(|h| (h.reach, h.start) < (reach, start));
    sc.loaded.insert(
        at,
        Loaded {
            start,
            end,
            reach,
            state,
        },
    );
}

/// Moves `loaded[i]`, whose reach or start changed, back to its place in (reach, start) order.
fn reorder(loaded: &mut [Loaded], mut i: usize) {
    let order = |h: &Loaded| (h.reach, h.start);
    while i + 1 < loaded.len() && order(&loaded[i]) > order(&loaded[i + 1]) {
        loaded.swap(i, i + 1);
        i += 1;
    }
    while i > 0 && order(&loaded[i]) < order(&loaded[i - 1]) {
        loaded.swap(i, i - 1);
        i -= 1;
    }
}

/// Pushes the changelog rows Kafka forwards when a record at `t` of `key` merges the sessions
/// `met` (each window with its state before) into `merged` (window and state after): it removes
/// (and forwards a delete for) every merged session unless the merged window is the record's
/// own `[t, t]`, which it overwrites in place; then the merged window. A window that was
/// deleted and put again is new for the changelog, like one the store had not stored; only an
/// overwrite in place keeps it.
fn log_merge(
    log: &mut Changelog,
    key: &[u8],
    t: i64,
    met: impl IntoIterator<Item = ((i64, i64), Vec<u8>)>,
    ((m_start, m_end), state): ((i64, i64), Vec<u8>),
) {
    let overwrite = (m_start, m_end) == (t, t);
    let mut replaced = false;
    for ((start, end), before) in met {
        replaced |= (start, end) == (m_start, m_end);
        if !overwrite {
            log.push(change(key, start, end, before, true), false);
        }
    }
    log.push(
        change(key, m_start, m_end, state, false),
        !replaced || !overwrite,
    );
}

/// A changelog row (or a final row, `delete == false`) of a session.
pub(super) fn change(key: &[u8], start: i64, end: i64, state: Vec<u8>, delete: bool) -> Change {
    Change {
        key: key.to_vec(),
        start,
        end,
        time: end,
        state,
        delete,
    }
}
