//! Sessions with a maximum duration as a window kind of the streaming processor.
//!
//! Definition (docs/semantics.md section 2, maximum duration): per key, in event-time order, a
//! record joins the current session if the gap rule joins it and `t - start <= max_duration`;
//! otherwise it starts a new session. Unlike plain sessions, a record can move every later cut
//! point of its key (a record before a session's start moves that start, and with it where the
//! cap cuts), so the kind keeps what re-cutting needs: every stored session carries its records
//! (time, arrival, gap and the record's own aggregate state).
//!
//! **Stored value**, under `[start, reach]` as for plain sessions: `end` (`i64`), `cut` (`u8`:
//! 1 if the cap ended the session before it, so that the next record started this one), the
//! length of the aggregate state (`u32`), the aggregate state, then per record in `(time,
//! arrival)` order: `t` (`i64`), `seq` (`u64`), `gap` (`i64`), the length of its state (`u32`)
//! and its state. All little-endian. The records cost 28 bytes plus their one-record states
//! per record of an open session, on top of the session's own state.
//!
//! **Per record** (stream time already advanced). Records before `t` in time keep their
//! sessions: only the session `S0` holding the latest record at or before `t` (if `t` is within
//! its reach) and the sessions starting after `t` can change. Those are fetched, the record is
//! put in its place, and that part of the key's sessions is cut again with the complete-data
//! rule (`joins`, which complete mode cuts with too). A record in time order (the common
//! case) joins `S0` or starts a session after it: that re-cut is known without reading `S0`'s
//! records (`append`). Then, either way, the record is late if and only if the re-cut changes
//! a closed session (its records, bounds or cut) or makes a session that is closed already (a
//! closed session is final), or if it is older than what the store still holds (a session it
//! would join may be gone); otherwise the sessions that changed are put and those gone
//! removed. For a record within the grace none of that is closed (each starts after `t >=
//! stream time - grace`, or reaches past `t`), so such records are never late and the sessions
//! equal complete mode's.
//!
//! The changelog follows the re-cut (`apply`): a window the re-cut keeps, with new records,
//! is forwarded as an update without a delete first (plain sessions forward Kafka's delete,
//! `super::run`).

use arrow_schema::TimeUnit;

use super::complete::capped_ticks;
use super::kind::SessionCounters;
use super::run::change;
use super::spec::{OnInvalid, Resolved, SessionSpec};
use crate::emit::{EmitMode, Rows};
use crate::meta::{MetaReader, MetaWriter};
use crate::output::Layout;
use crate::processor::{Checked, KindCounters, Record, Step, WindowKind};
use crate::reject::Reason;
use crate::store::session_store::PutOutcome;
use crate::time::{Duration, TimeBase};
use crate::{Error, KeyedSession, Result, SessionStore};

/// Session windows whose sessions span at most `max_duration` from first to last record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CappedSessionSpec {
    /// The session parameters (gap, grace, retention, emit, on_invalid).
    pub session: SessionSpec,
    /// The longest a session may span from its first to its last record (> 0).
    pub max_duration: Duration,
}

/// A [`CappedSessionSpec`] in ticks of the time column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CappedTicks {
    /// The session parameters.
    pub session: Resolved,
    /// `max_duration` in ticks.
    pub max_duration: i64,
}

/// The counters of capped session processors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CappedCounters {
    /// Dynamic gaps clamped to `max_gap`.
    pub gap_clamped: u64,
    /// Sessions held or emitted so far that the cap ended (the next record of the key would have
    /// joined them by the gap rule). A record that re-cuts open sessions can lower it; at the
    /// end of input it equals complete mode's count.
    pub max_duration_cuts: u64,
}

impl KindCounters for CappedCounters {
    const NAMES: &'static [&'static str] = &["gap_clamped", "max_duration_cuts"];
    fn values(&self) -> Vec<u64> {
        vec![self.gap_clamped, self.max_duration_cuts]
    }
    fn from_values(values: &[u64]) -> Self {
        Self {
            gap_clamped: values.first().copied().unwrap_or(0),
            max_duration_cuts: values.get(1).copied().unwrap_or(0),
        }
    }
}

/// One record of a stored session.
#[derive(Debug, Clone, Copy)]
struct Rec {
    t: i64,
    seq: u64,
    gap: i64,
    /// Where its one-record state lies in the scratch bytes.
    state: (usize, usize),
}

/// A stored session read into scratch.
#[derive(Debug, Clone, Copy)]
struct Old {
    start: i64,
    end: i64,
    reach: i64,
    cut: bool,
    state: (usize, usize),
    /// Its records' stored bytes in the scratch bytes.
    raw: (usize, usize),
    /// Its records once read: `recs[records.0..records.1]`.
    records: (usize, usize),
}

/// A session of the re-cut.
#[derive(Debug, Clone, Copy)]
struct New {
    start: i64,
    end: i64,
    reach: i64,
    cut: bool,
    /// The old session whose records, all of them, begin it (none of them the new record), if
    /// any: its stored records and its state are where this one's start.
    prefix: Option<usize>,
    /// Its other records, `region[records.0..records.1]`.
    records: (usize, usize),
    state: (usize, usize),
}

impl New {
    /// The old session it equals (the same records), if any.
    fn same_as(&self) -> Option<usize> {
        self.prefix.filter(|_| self.records.0 == self.records.1)
    }
}

/// Buffers reused from record to record.
#[derive(Debug, Default)]
pub struct Scratch {
    bytes: Vec<u8>,
    old: Vec<Old>,
    recs: Vec<Rec>,
    region: Vec<Rec>,
    new: Vec<New>,
    states: Vec<u8>,
    acc: Vec<u8>,
    merged: Vec<u8>,
    value: Vec<u8>,
}

/// The fields of a stored value, checked.
struct Stored<'v> {
    end: i64,
    cut: bool,
    state: &'v [u8],
    records: &'v [u8],
}

fn take<const N: usize>(bytes: &mut &[u8]) -> std::result::Result<[u8; N], String> {
    let (head, rest) = bytes
        .split_first_chunk::<N>()
        .ok_or_else(|| "the value is truncated".to_string())?;
    *bytes = rest;
    Ok(*head)
}

fn take_slice<'v>(bytes: &mut &'v [u8]) -> std::result::Result<&'v [u8], String> {
    let n = u32::from_le_bytes(take::<4>(bytes)?) as usize;
    if bytes.len() < n {
        return Err("the value is truncated".to_string());
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Ok(head)
}

fn parse(value: &[u8]) -> std::result::Result<Stored<'_>, String> {
    let mut b = value;
    let end = i64::from_le_bytes(take::<8>(&mut b)?);
    let cut = match take::<1>(&mut b)?[0] {
        0 => false,
        1 => true,
        other => return Err(format!("cut flag {other} is neither 0 nor 1")),
    };
    let state = take_slice(&mut b)?;
    Ok(Stored {
        end,
        cut,
        state,
        records: b,
    })
}

/// Reads the records stored in `bytes[raw.0..raw.1]`, appending them to `recs` (their states
/// as ranges of `bytes`).
fn read_records(
    bytes: &[u8],
    raw: (usize, usize),
    recs: &mut Vec<Rec>,
) -> std::result::Result<(), String> {
    let mut b = &bytes[raw.0..raw.1];
    while !b.is_empty() {
        let t = i64::from_le_bytes(take::<8>(&mut b)?);
        let seq = u64::from_le_bytes(take::<8>(&mut b)?);
        let gap = i64::from_le_bytes(take::<8>(&mut b)?);
        let state = take_slice(&mut b)?;
        let end = raw.1 - b.len();
        recs.push(Rec {
            t,
            seq,
            gap,
            state: (end - state.len(), end),
        });
    }
    Ok(())
}

fn put_record(r: &Rec, state: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&r.t.to_le_bytes());
    out.extend_from_slice(&r.seq.to_le_bytes());
    out.extend_from_slice(&r.gap.to_le_bytes());
    put_len(state, out)?;
    out.extend_from_slice(state);
    Ok(())
}

fn put_len(bytes: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let n = u32::try_from(bytes.len()).map_err(|_| {
        Error::Capacity(format!(
            "an aggregate state of {} bytes is too large for a capped session (4 GiB at most)",
            bytes.len()
        ))
    })?;
    out.extend_from_slice(&n.to_le_bytes());
    Ok(())
}

impl WindowKind for CappedSessionSpec {
    type Ticks = CappedTicks;
    type Counters = CappedCounters;
    /// The record's gap in ticks.
    type Prepared = i64;
    type Scratch = Scratch;
    type Store = SessionStore;

    const KIND: &'static str = "capped-session-processor/1";
    const PREFIX: &'static str = <SessionSpec as WindowKind>::PREFIX;
    const WHAT: &'static str = "session processor";
    const RECORDS: bool = true;
    const LAYOUT: Layout = <SessionSpec as WindowKind>::LAYOUT;

    fn emit(&self) -> EmitMode {
        self.session.emit
    }

    fn on_invalid(&self) -> OnInvalid {
        self.session.on_invalid
    }

    fn validate(&self, time_unit: Option<TimeUnit>) -> Result<()> {
        let mut durations = self.session.durations();
        durations.push(self.max_duration);
        self.resolve(&TimeBase::before_binding(&durations, time_unit))?;
        Ok(())
    }

    fn gap_column(&self) -> Option<&str> {
        self.session.gap_column()
    }

    fn grace_spec(&self) -> Duration {
        self.session.grace
    }

    fn resolve(&self, base: &TimeBase) -> Result<CappedTicks> {
        Ok(CappedTicks {
            session: self.session.resolve(base)?,
            max_duration: capped_ticks(self.max_duration, base)?,
        })
    }

    fn retention(ticks: &CappedTicks) -> i64 {
        <SessionSpec as WindowKind>::retention(&ticks.session)
    }

    fn grace(ticks: &CappedTicks) -> i64 {
        ticks.session.grace
    }

    fn new_store(&self, ticks: &Self::Ticks) -> Result<SessionStore> {
        SessionStore::new(Self::retention(ticks), None)
    }

    fn check(
        ticks: &CappedTicks,
        r: Checked,
        counters: &mut CappedCounters,
    ) -> std::result::Result<i64, Reason> {
        let mut session = SessionCounters::default();
        let gap = <SessionSpec as WindowKind>::check(&ticks.session, r, &mut session)?;
        counters.gap_clamped += session.gap_clamped;
        Ok(gap)
    }

    fn step(
        ticks: &CappedTicks,
        step: &mut Step<'_, Self>,
        sc: &mut Scratch,
        r: Record<'_, i64>,
    ) -> Result<bool> {
        let (key, t) = (r.key, r.t);
        let cap = ticks.max_duration;
        // A session the record would join may have expired from the store if the record is
        // older than what the store still shows; such a record is late (never one within the
        // grace: the store keeps max_gap + grace + max_gap behind its newest reach).
        if t < step.store.min_live_end() {
            return Ok(false);
        }
        fetch(ticks, step, sc, key, t)?;
        // The sessions that can change: S0 (the last one starting at or before t) if t is
        // within its reach, and every session starting after t (the fetched list is in start
        // order).
        let first = match sc.old.iter().rposition(|o| o.start <= t) {
            Some(i) if sc.old[i].reach >= t => i,
            Some(i) => i + 1,
            None => 0,
        };
        // A closed session is final: with one among them, only the exact re-cut below can tell
        // whether the record leaves it as it is.
        let closed = sc.old[first..].iter().any(|o| o.reach < step.close);
        sc.old.drain(..first);
        let at = sc.bytes.len();
        step.aggs
            .encode_input(r.inputs, r.row, t, r.seq, &mut sc.bytes);
        let own = Rec {
            t,
            seq: r.seq,
            gap: r.prepared,
            state: (at, sc.bytes.len()),
        };
        sc.region.clear();
        sc.new.clear();
        match sc.old[..] {
            [] => append(sc, own, None, cap),
            [s0] if s0.end <= t && !closed => append(sc, own, Some(s0), cap),
            _ => recut(sc, own, cap)?,
        }
        // The record is late if and only if accepting it would change a closed session (its
        // records, bounds or cut) or make a session that is closed already.
        let unchanged = |n: &New| n.same_as().is_some_and(|o| sc.old[o].cut == n.cut);
        let changed_closed = sc.new.iter().any(|n| n.reach < step.close && !unchanged(n))
            || sc.old.iter().enumerate().any(|(i, o)| {
                o.reach < step.close
                    && !sc
                        .new
                        .iter()
                        .any(|n| n.same_as() == Some(i) && n.cut == o.cut)
            });
        if changed_closed {
            return Ok(false);
        }
        states(step, sc, key)?;
        apply(step, sc, key)?;
        Ok(true)
    }

    fn stored_states<'v>(
        ticks: &CappedTicks,
        start: i64,
        reach: i64,
        value: &'v [u8],
        states: &mut Vec<&'v [u8]>,
    ) -> std::result::Result<(), String> {
        let s = parse(value)?;
        let mut b = s.records;
        let (mut last, mut max_reach, mut n) = (None, i64::MIN, 0usize);
        while !b.is_empty() {
            let t = i64::from_le_bytes(take::<8>(&mut b)?);
            let seq = u64::from_le_bytes(take::<8>(&mut b)?);
            let gap = i64::from_le_bytes(take::<8>(&mut b)?);
            states.push(take_slice(&mut b)?);
            if n == 0 && t != start {
                return Err(format!("its first record is at {t}, not at its start"));
            }
            if last.is_some_and(|l| l >= (t, seq)) {
                return Err("its records are not in (time, arrival) order".into());
            }
            if !(gap > 0 && gap <= ticks.session.max_gap) {
                return Err(format!("a record has gap {gap}"));
            }
            let r = t
                .checked_add(gap)
                .ok_or_else(|| "a record's reach overflows".to_string())?;
            max_reach = max_reach.max(r);
            last = Some((t, seq));
            n += 1;
        }
        if last.map(|(t, _)| t) != Some(s.end) {
            return Err(format!("its last record is not at its end {}", s.end));
        }
        if max_reach != reach {
            return Err(format!("reach {reach} is not its records' {max_reach}"));
        }
        if s.end
            .checked_sub(start)
            .is_none_or(|d| d > ticks.max_duration)
        {
            return Err(format!(
                "it spans more than max_duration ({start}..{})",
                s.end
            ));
        }
        states.push(s.state);
        Ok(())
    }

    fn check_stored(
        _ticks: &CappedTicks,
        _start: i64,
        _stored_end: i64,
        _prefix: i64,
    ) -> std::result::Result<(), String> {
        // Everything is checked by stored_states.
        Ok(())
    }

    fn final_row(s: &KeyedSession<'_>, rows: &mut Rows) {
        // A value the store holds was written by this kind or checked on restore.
        let (end, state) =
            parse(s.session.value).map_or((s.session.start, &[][..]), |v| (v.end, v.state));
        rows.push(s.key, (s.session.start, end, end), state, false);
    }

    fn write_meta(&self, w: &mut MetaWriter<'_>) {
        self.session.write_meta(w);
        w.duration("max_duration", self.max_duration);
    }

    fn read_meta(r: &MetaReader<'_>, emit: EmitMode, on_invalid: OnInvalid) -> Result<Self> {
        Ok(Self {
            session: SessionSpec::read_meta(r, emit, on_invalid)?,
            max_duration: r.duration("max_duration")?,
        })
    }
}

/// Whether a record at `t` joins the session starting at `start` and reaching `reach` so far:
/// the gap rule, within the cap.
#[inline]
pub(super) fn joins(start: i64, reach: i64, t: i64, cap: i64) -> bool {
    t <= reach && t <= start.saturating_add(cap)
}

/// The re-cut of record `own` at or after every record of the key's open sessions, without
/// reading their records: it joins `s0` (the only session it can change) or starts a session
/// of its own, the cut points before it unchanged.
fn append(sc: &mut Scratch, own: Rec, s0: Option<Old>, cap: i64) {
    let (t, reach) = (own.t, own.t + own.gap);
    let joined = s0.filter(|s| joins(s.start, s.reach, t, cap));
    if joined.is_none() {
        // S0, if any, stays as it is.
        sc.old.clear();
    }
    sc.region.push(own);
    sc.new.push(New {
        start: joined.map_or(t, |s| s.start),
        end: t,
        reach: joined.map_or(reach, |s| s.reach.max(reach)),
        // Else the cap ended S0 if the record is within its reach.
        cut: joined.map_or(s0.is_some_and(|s| t <= s.reach), |s| s.cut),
        prefix: joined.map(|_| 0),
        records: (0, 1),
        state: (0, 0),
    });
}

/// Reads the key's sessions that may hold the record's predecessor or start after `t` into
/// `sc.old` (in start order), with their records in `sc.recs` and bytes in `sc.bytes`.
fn fetch(
    ticks: &CappedTicks,
    step: &Step<'_, CappedSessionSpec>,
    sc: &mut Scratch,
    key: &[u8],
    t: i64,
) -> Result<()> {
    sc.bytes.clear();
    sc.old.clear();
    sc.recs.clear();
    // A session that t can join reaches t, ends within max_duration of its start and reaches
    // at most max_gap past its end; a session starting after t reaches past t. So sessions
    // reaching below this bound cannot matter, nor hide a later one that does.
    let lower = t
        .saturating_sub(ticks.max_duration)
        .saturating_sub(ticks.session.max_gap);
    for s in step.store.find_sessions(key, lower, i64::MAX) {
        let v = parse(s.value).map_err(|why| {
            Error::Internal(format!(
                "a capped session's stored value is unreadable: {why}"
            ))
        })?;
        let state = sc.bytes.len();
        sc.bytes.extend_from_slice(v.state);
        let state = (state, sc.bytes.len());
        sc.bytes.extend_from_slice(v.records);
        sc.old.push(Old {
            start: s.start,
            end: v.end,
            reach: s.end,
            cut: v.cut,
            state,
            raw: (state.1, sc.bytes.len()),
            records: (0, 0),
        });
    }
    sc.old.sort_unstable_by_key(|o| o.start);
    Ok(())
}

/// Cuts the records of `sc.old` and record `own` into `sc.new` by the complete-data rule, and
/// finds the old sessions whose records begin new ones. The first session keeps the `cut` flag
/// of the old session it starts at: the boundary before it does not move.
fn recut(sc: &mut Scratch, own: Rec, cap: i64) -> Result<()> {
    for i in 0..sc.old.len() {
        let from = sc.recs.len();
        read_records(&sc.bytes, sc.old[i].raw, &mut sc.recs).map_err(|why| {
            Error::Internal(format!("a capped session's records are unreadable: {why}"))
        })?;
        sc.old[i].records = (from, sc.recs.len());
    }
    // The records in (time, arrival) order: the new one after every record at or before its
    // time (its arrival is the latest).
    let mut placed = None;
    for o in &sc.old {
        for rec in &sc.recs[o.records.0..o.records.1] {
            if placed.is_none() && rec.t > own.t {
                placed = Some(sc.region.len());
                sc.region.push(own);
            }
            sc.region.push(*rec);
        }
    }
    let own = placed.unwrap_or_else(|| {
        sc.region.push(own);
        sc.region.len() - 1
    });
    let first_cut = own != 0 && sc.old.first().is_some_and(|o| o.cut);
    let mut i = 0;
    while i < sc.region.len() {
        let r0 = sc.region[i];
        // The previous session ended because of the cap if this record was within its reach.
        let cut = match sc.new.last() {
            None => first_cut,
            Some(p) => r0.t <= p.reach,
        };
        let (mut end, mut reach, mut j) = (r0.t, r0.t + r0.gap, i + 1);
        while let Some(r) = sc.region.get(j).filter(|r| joins(r0.t, reach, r.t, cap)) {
            end = r.t;
            reach = reach.max(r.t + r.gap);
            j += 1;
        }
        let len = |o: &Old| o.records.1 - o.records.0;
        let prefix = sc.old.iter().position(|o| {
            sc.recs[o.records.0].seq == r0.seq && i + len(o) <= j && !(i..i + len(o)).contains(&own)
        });
        sc.new.push(New {
            start: r0.t,
            end,
            reach,
            cut,
            prefix,
            records: (i + prefix.map_or(0, |o| len(&sc.old[o])), j),
            state: (0, 0),
        });
        i = j;
    }
    Ok(())
}

/// The aggregate state of every new session, into `sc.states`: that of the old session its
/// records begin with, if any (an unchanged session keeps its state, a record appended in time
/// order costs one merge), merged with each of its other records' states.
fn states(step: &Step<'_, CappedSessionSpec>, sc: &mut Scratch, key: &[u8]) -> Result<()> {
    sc.states.clear();
    for n in sc.new.iter_mut() {
        sc.acc.clear();
        if let Some(o) = n.prefix.map(|o| sc.old[o]) {
            sc.acc.extend_from_slice(&sc.bytes[o.state.0..o.state.1]);
        }
        for r in &sc.region[n.records.0..n.records.1] {
            let state = &sc.bytes[r.state.0..r.state.1];
            if sc.acc.is_empty() {
                sc.acc.extend_from_slice(state);
                continue;
            }
            sc.merged.clear();
            step.merge(key, (n.start, n.end), &sc.acc, state, &mut sc.merged)?;
            std::mem::swap(&mut sc.acc, &mut sc.merged);
        }
        let at = sc.states.len();
        sc.states.extend_from_slice(&sc.acc);
        n.state = (at, sc.states.len());
    }
    Ok(())
}

/// Writes the re-cut into the store, the changelog and the counters.
fn apply(step: &mut Step<'_, CappedSessionSpec>, sc: &mut Scratch, key: &[u8]) -> Result<()> {
    let Scratch {
        bytes,
        old,
        region,
        new,
        states,
        value,
        ..
    } = sc;
    for n in new.iter() {
        let unchanged = n.same_as().is_some_and(|o| old[o].cut == n.cut);
        if unchanged {
            continue;
        }
        value.clear();
        value.extend_from_slice(&n.end.to_le_bytes());
        value.push(u8::from(n.cut));
        let state = &states[n.state.0..n.state.1];
        put_len(state, value)?;
        value.extend_from_slice(state);
        if let Some(o) = n.prefix {
            value.extend_from_slice(&bytes[old[o].raw.0..old[o].raw.1]);
        }
        for r in &region[n.records.0..n.records.1] {
            put_record(r, &bytes[r.state.0..r.state.1], value)?;
        }
        if step.put(key, n.start, n.reach, value)? == PutOutcome::Expired {
            // Unreachable: a session that is not closed is within retention.
            return Err(Error::Internal(format!(
                "a capped session [{}, {}] expired as it was put",
                n.start, n.end
            )));
        }
        step.latest_end = Some(step.latest_end.map_or(n.end, |e| e.max(n.end)));
    }
    for o in old.iter() {
        if !new.iter().any(|n| (n.start, n.reach) == (o.start, o.reach)) {
            step.store.remove(key, o.start, o.reach);
        }
    }
    let was: u64 = old.iter().map(|o| u64::from(o.cut)).sum();
    let now: u64 = new.iter().map(|n| u64::from(n.cut)).sum();
    let c = &mut step.counters.max_duration_cuts;
    *c = (*c + now).saturating_sub(was);
    if step.mode == EmitMode::Final {
        return Ok(());
    }
    for (i, o) in old.iter().enumerate() {
        let kept = new
            .iter()
            .any(|n| n.same_as() == Some(i) || (n.start, n.end) == (o.start, o.end));
        if !kept {
            let state = bytes[o.state.0..o.state.1].to_vec();
            step.changelog
                .push(change(key, o.start, o.end, state, true), false);
        }
    }
    for n in new.iter().filter(|n| n.same_as().is_none()) {
        let created = !old.iter().any(|o| (o.start, o.end) == (n.start, n.end));
        let state = states[n.state.0..n.state.1].to_vec();
        step.changelog
            .push(change(key, n.start, n.end, state, false), created);
    }
    Ok(())
}
