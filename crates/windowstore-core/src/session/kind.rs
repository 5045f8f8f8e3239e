//! Session windows as a window kind of the streaming processor: records one by one, in batch
//! order, against the store.
//!
//! The processor's store holds each session under `[start, reach]` (its reach, `max(t + gap)`,
//! in the place of the end) with value `end` (8 bytes little-endian) followed by the aggregate
//! state. Keyed by reach, every question the processor asks is one exact range: a record at `t`
//! with gap `g` meets the sessions with `reach >= t` and `start <= t + g`, and the sessions that
//! close once stream time passes `x + grace` are those with reach `x`, so emitting them never
//! scans sessions that stay open (a large `max_gap` costs nothing per call). Per record
//! (docs/semantics.md section 2, streaming):
//!
//! 1. stream time becomes `max(stream time, t)` (the processor does it);
//! 2. the candidates are the key's sessions whose coverage `[start, reach]` meets `[t, t + g]`
//!    (one hop suffices: the covered sessions' union with `[t, t + g]` is one interval);
//! 3. the record is late if the merged session would be closed (`reach + grace < stream time`)
//!    or if it touches a closed session still in the store;
//! 4. otherwise the candidates are removed and the merged session is put, with Kafka's
//!    forwarding rule in `changes` mode (no delete when the merged window is `[t, t]`).
//!
//! Step 4 has a short way when the record meets one session: it edits the stored session in
//! place (`SessionStore::amend` with `Aggregator::append_edits`) instead of merging states,
//! putting the merged one and removing the old one. The store, its counters and the output are
//! the same either way; the short way costs what the record changes, not the size of the
//! session's state, when the record comes at or near the session's end (a `collect` list of
//! `n` records grew in `O(n^2)` before).

use arrow_schema::TimeUnit;

use super::record::record_gap;
use super::run::RunScratch;
use super::spec::{GapSpec, OnInvalid, Resolved, SessionSpec};
use crate::agg::append::Place;
use crate::agg::fill_overflow;
use crate::emit::{Change, Changelog, EmitMode, Rows};
use crate::meta::{MetaReader, MetaWriter};
use crate::output::Layout;
use crate::processor::{Checked, KindCounters, Record, RunOutcome, Step, WindowKind};
use crate::reject::Reason;
use crate::state;
use crate::store::edits::Edits;
use crate::store::session_store::PutOutcome;
use crate::store::session_store::Reads;
use crate::time::Duration;
use crate::{KeyedSession, Result};

/// The counters of session processors, beyond the processor's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionCounters {
    /// Dynamic gaps clamped to `max_gap`.
    pub gap_clamped: u64,
}

impl KindCounters for SessionCounters {
    const NAMES: &'static [&'static str] = &["gap_clamped"];
    fn values(&self) -> Vec<u64> {
        vec![self.gap_clamped]
    }
    fn from_values(values: &[u64]) -> Self {
        Self {
            gap_clamped: values.first().copied().unwrap_or(0),
        }
    }
}

/// A candidate session for a record: its window, reach, and where its state lies in scratch
/// (once copied there: the short way never copies it).
#[derive(Debug, Clone, Copy)]
struct Candidate {
    start: i64,
    end: i64,
    reach: i64,
    state: (usize, usize),
}

/// Buffers reused from record to record.
#[derive(Debug, Default)]
pub struct Scratch {
    candidates: Vec<Candidate>,
    states: Vec<u8>,
    acc: Vec<u8>,
    merged: Vec<u8>,
    value: Vec<u8>,
    edits: Edits,
    run: RunScratch,
}

impl WindowKind for SessionSpec {
    type Ticks = Resolved;
    type Counters = SessionCounters;
    /// The record's gap in ticks.
    type Prepared = i64;
    type Scratch = Scratch;

    const KIND: &'static str = "session-processor/2";
    const PREFIX: &'static str = "windowstore.session.";
    const WHAT: &'static str = "session processor";
    const RECORDS: bool = true;
    const LAYOUT: Layout = Layout {
        start: "session_start",
        end: "session_end",
        time: None,
        op: false,
    };

    fn emit(&self) -> EmitMode {
        self.emit
    }

    fn on_invalid(&self) -> OnInvalid {
        self.on_invalid
    }

    fn validate(&self) -> Result<()> {
        SessionSpec::validate(self)
    }

    fn gap_column(&self) -> Option<&str> {
        SessionSpec::gap_column(self)
    }

    fn grace_spec(&self) -> Duration {
        self.grace
    }

    fn resolve(&self, unit: TimeUnit) -> Result<Resolved> {
        SessionSpec::resolve(self, unit)
    }

    fn retention(ticks: &Resolved) -> i64 {
        // The contract keeps a closed session until `end < stream time - retention`. Entries
        // are keyed by reach, and store time (the largest reach) runs up to max_gap ahead of
        // stream time, so the store keeps max_gap more (and 1 for its own `end >= store time -
        // retention + 1`).
        ticks
            .retention
            .saturating_add(ticks.max_gap)
            .saturating_add(1)
    }

    fn grace(ticks: &Resolved) -> i64 {
        ticks.grace
    }

    fn check(
        ticks: &Resolved,
        r: Checked,
        counters: &mut SessionCounters,
    ) -> std::result::Result<i64, Reason> {
        let (gap, clamped) = record_gap(
            r.null_key,
            r.time,
            r.t,
            ticks.fixed_gap,
            r.column_gap,
            ticks.max_gap,
        )?;
        counters.gap_clamped += u64::from(clamped);
        Ok(gap)
    }

    fn step(
        ticks: &Resolved,
        step: &mut Step<'_, Self>,
        sc: &mut Scratch,
        r: Record<'_, i64>,
    ) -> Result<bool> {
        let (key, t) = (r.key, r.t);
        // check() made sure that t + gap fits.
        let reach_rec = t + r.prepared;
        // Kafka's store shows the sessions with `end >= its time - retention` (its time being
        // the largest end put); the others are treated as gone (docs/semantics.md 2.6), although
        // this store, keyed by reach, still holds them.
        let visible = step
            .latest_end
            .map_or(i64::MIN, |e| e.saturating_sub(ticks.retention));
        sc.candidates.clear();
        sc.states.clear();
        for s in step.store.find_sessions(key, t, reach_rec) {
            let end = state::split(s.value).0;
            if end < visible {
                continue;
            }
            sc.candidates.push(Candidate {
                start: s.start,
                end,
                reach: s.end,
                state: (0, 0),
            });
        }
        let (mut m_start, mut m_end, mut m_reach) = (t, t, reach_rec);
        let mut touches_closed = false;
        for c in &sc.candidates {
            m_start = m_start.min(c.start);
            m_end = m_end.max(c.end);
            m_reach = m_reach.max(c.reach);
            touches_closed |= c.reach < step.close;
        }
        if touches_closed || m_reach < step.close {
            return Ok(false);
        }
        sc.acc.clear();
        step.aggs
            .encode_input(r.inputs, r.row, t, r.seq, &mut sc.acc);
        if let [c] = sc.candidates[..] {
            let place = Place {
                key: (t, r.seq),
                at_end: t >= c.end,
            };
            if let Some(accepted) = extend(step, sc, key, c, place, m_reach)? {
                return Ok(accepted);
            }
        }

        // The candidates' states, copied before the store changes.
        for c in &mut sc.candidates {
            let value = step
                .store
                .fetch_session(key, c.start, c.reach)
                .unwrap_or_default();
            let at = sc.states.len();
            sc.states.extend_from_slice(state::split(value).1);
            c.state = (at, sc.states.len());
        }
        for c in &sc.candidates {
            sc.merged.clear();
            let state = &sc.states[c.state.0..c.state.1];
            step.merge(key, (m_start, m_end), &sc.acc, state, &mut sc.merged)?;
            std::mem::swap(&mut sc.acc, &mut sc.merged);
        }

        // The store gets the merged session before the merged-away ones go, so the key stays
        // interned (removing first would free it and intern it again at once).
        sc.value.clear();
        state::join(m_end, &sc.acc, &mut sc.value);
        if step.put(key, m_start, m_reach, &sc.value)? == PutOutcome::Expired {
            // Unreachable while retention covers max gap + grace (checked when binding); a
            // rejection rather than a loss if it ever happens.
            return Ok(false);
        }
        step.latest_end = Some(step.latest_end.map_or(m_end, |e| e.max(m_end)));
        for c in &sc.candidates {
            if (c.start, c.reach) != (m_start, m_reach) {
                step.store.remove(key, c.start, c.reach);
            }
        }
        if step.mode == EmitMode::Final {
            return Ok(true);
        }
        let met = sc
            .candidates
            .iter()
            .map(|c| ((c.start, c.end), sc.states[c.state.0..c.state.1].to_vec()));
        log_merge(
            &mut step.changelog,
            key,
            t,
            met,
            ((m_start, m_end), sc.acc.clone()),
        );
        Ok(true)
    }

    fn run_safe(ticks: &Resolved, t: i64, stream_time: i64) -> bool {
        // Such a record is not late, and every session it meets is open and visible (see
        // `super::run`).
        t >= stream_time.saturating_sub(ticks.grace)
    }

    const RUN_LOGS: bool = true;

    fn step_run(
        _ticks: &Resolved,
        step: &mut Step<'_, Self>,
        sc: &mut Scratch,
        records: &[Record<'_, i64>],
    ) -> Result<RunOutcome> {
        super::run::step_run(step, &mut sc.run, records)
    }

    fn run_reads(_ticks: &Resolved, records: &[Record<'_, i64>]) -> Option<Reads> {
        let (lowest, highest) = super::run::reads(records)?;
        Some(Reads {
            earliest_end: lowest,
            latest_start: highest,
            values_from: lowest,
        })
    }

    fn check_stored(
        ticks: &Resolved,
        start: i64,
        reach: i64,
        end: i64,
    ) -> std::result::Result<(), String> {
        if !(start <= end && end < reach) {
            return Err(format!("end {end} is not within [start, reach)"));
        }
        if reach - end > ticks.max_gap {
            return Err(format!("reach {reach} is beyond end {end} + max gap"));
        }
        Ok(())
    }

    fn final_row(s: &KeyedSession<'_>, rows: &mut Rows) {
        let (end, agg_state) = state::split(s.session.value);
        rows.push(s.key, (s.session.start, end, end), agg_state, false);
    }

    fn write_meta(&self, w: &mut MetaWriter<'_>) {
        match &self.gap {
            GapSpec::Fixed(g) => w.duration("gap", *g),
            GapSpec::Column { column, max_gap } => {
                w.text("gap_column", column);
                w.duration("max_gap", *max_gap);
            }
        }
        w.duration("grace", self.grace);
        if let Some(r) = self.retention {
            w.duration("retention", r);
        }
    }

    fn read_meta(r: &MetaReader<'_>, emit: EmitMode, on_invalid: OnInvalid) -> Result<Self> {
        let gap = match r.get("gap_column") {
            Some(_) => GapSpec::Column {
                column: r.text("gap_column")?,
                max_gap: r.duration("max_gap")?,
            },
            None => GapSpec::Fixed(r.duration("gap")?),
        };
        Ok(SessionSpec {
            gap,
            grace: r.duration("grace")?,
            retention: r
                .get("retention")
                .map(|_| r.duration("retention"))
                .transpose()?,
            emit,
            on_invalid,
        })
    }
}

/// The short way of step 4 for a record at `place` (its state in `sc.acc`) that meets the one
/// candidate `c`, the merged session reaching `m_reach`: the stored session is edited in place.
/// Returns `None`, having changed nothing, when the store cannot (the long way then does the
/// same). The changelog modes get the rows the long way forwards (whose states are copies).
fn extend(
    step: &mut Step<'_, SessionSpec>,
    sc: &mut Scratch,
    key: &[u8],
    c: Candidate,
    place: Place,
    m_reach: i64,
) -> Result<Option<bool>> {
    let t = place.key.0;
    let (m_start, m_end) = (c.start.min(t), c.end.max(t));
    let Some(old) = step.store.fetch_session(key, c.start, c.reach) else {
        return Ok(None);
    };
    sc.edits.clear();
    if m_end != c.end {
        sc.edits.push(0, 8, &m_end.to_le_bytes());
    }
    step.aggs
        .append_edits(
            (&old[8.min(old.len())..], &sc.acc),
            place,
            8,
            &mut sc.edits,
            &mut sc.merged,
        )
        .map_err(|e| fill_overflow(e, step.keys.render(key), m_start, m_end))?;
    // The long way forwards a delete of the old window unless the merged one is the record's
    // own `[t, t]` (then c is `[t, t]` too); in `updates` mode one the call created is elided
    // anyway, so its state is not copied.
    let overwrite = (m_start, m_end) == (t, t);
    let keep_delete = step.mode != EmitMode::Final
        && !overwrite
        && step.changelog.keeps_delete(key, c.start, c.end);
    let delete = keep_delete.then(|| state::split(old).1.to_vec());
    if step.mode == EmitMode::Final && step.store.put_would_drop_segments(m_reach) {
        step.emit_closed();
    }
    let to = (m_start, m_reach);
    match step.store.amend(key, (c.start, c.reach), to, &sc.edits)? {
        None => return Ok(None),
        Some(PutOutcome::Expired) => return Ok(Some(false)),
        Some(_) => {}
    }
    step.latest_end = Some(step.latest_end.map_or(m_end, |e| e.max(m_end)));
    if step.mode == EmitMode::Final {
        return Ok(Some(true));
    }
    let value = step
        .store
        .fetch_session(key, to.0, to.1)
        .unwrap_or_default();
    // A delete the changelog elides (or does not forward) needs no state.
    let met = [((c.start, c.end), delete.unwrap_or_default())];
    let merged = ((m_start, m_end), state::split(value).1.to_vec());
    log_merge(&mut step.changelog, key, t, met, merged);
    Ok(Some(true))
}

/// Pushes the changelog rows Kafka forwards when a record at `t` of `key` merges the sessions
/// `met` (each window with its state before) into `merged` (window and state after): it removes
/// (and forwards a delete for) every merged session unless the merged window is the record's
/// own `[t, t]`, which it overwrites in place; then the merged window. A window that was
/// deleted and put again is new for the changelog, like one the store had not held; only an
/// overwrite in place keeps it. The record path and the batched path (`super::run`) both log
/// through here.
pub(super) fn log_merge(
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

/// The streaming session processor.
pub type SessionProcessor = crate::processor::Processor<SessionSpec>;
