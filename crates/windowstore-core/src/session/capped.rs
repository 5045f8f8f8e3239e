//! Sessions that keep their records to cut them again, as a window kind of the streaming
//! processor: sessions with a maximum duration, and sessions that a record starts or ends
//! (marker columns).
//!
//! Definition (docs/semantics.md section 2): per key, in (time, arrival) order, the records at a
//! time join the current session by the rule of `super::cuts` (the gap rule, no marker between
//! them, and `t - start <= max_duration`); otherwise they start a new session. Unlike plain
//! sessions, a record can move every later cut point of its key (a record before a session's
//! start moves that start, and with it where the cap cuts; a late marker splits a session), so
//! the kind keeps what re-cutting needs: every stored session carries its records (time,
//! arrival, gap, marker flags and the record's own aggregate state).
//!
//! **Stored value**, under `[start, closing]`, where `closing` is the last time a record can
//! still join the session (its reach, or its end if a marker there ends it, or just before the
//! next session if a start marker begins that one: `super::cuts::closing`): `end` (`i64`),
//! `flags` (`u8`: [`CUT`] if the cap ended the session before it, [`ENDED`] if a record at its
//! end ends it, [`STARTED`] if a record at its start starts it), the length of the aggregate
//! state (`u32`), the aggregate state, then per record in `(time, arrival)` order: `t` (`i64`),
//! `seq` (`u64`), `gap` (`i64`), with marker columns its flags (`u8`), the length of its state
//! (`u32`) and its state. All little-endian. The records cost 28 bytes (29 with markers) plus
//! their one-record states per record of an open session, on top of the session's own state.
//!
//! **Per record** (stream time already advanced). Records before `t` in time keep their
//! sessions: only the session `S0` holding the latest record at or before `t` (if `t` is within
//! its closing) and the sessions starting after `t` can change, and, for a record that starts a
//! session, the session before `S0`, whose closing it may lower. Those are fetched, the record
//! is put in its place, and that part of the key's sessions is cut again with the complete-data
//! rule. A record in time order that starts no session (the common case) joins `S0` or starts
//! a session after it: that re-cut is known without reading `S0`'s records (`append`). Then,
//! either way, the record is late if and only if the re-cut changes a closed session (its
//! records, bounds or flags) or makes a session that is closed already, other than a session
//! whose records stay as they were and whose closing a start marker lowers (in `final` mode it
//! is emitted, then or at the end of the call), or if it is older than what the store still
//! holds (a session it would join may be gone); otherwise the sessions that changed are put and
//! those gone removed. For a record within the grace none of that is closed (each starts after
//! `t >= stream time - grace`, or reaches past `t`), so such records are never late and the
//! sessions equal complete mode's.
//!
//! The changelog follows the re-cut (`apply`): a window the re-cut keeps, with new records,
//! is forwarded as an update without a delete first (plain sessions forward Kafka's delete,
//! `super::run`).

use arrow_schema::TimeUnit;

use super::complete::capped_ticks;
use super::cuts::{closing, group_flags, Open};
use super::kind::SessionCounters;
use super::run::change;
use super::spec::{OnInvalid, Resolved, SessionSpec};
use crate::emit::{EmitMode, Rows};
use crate::input::markers::{ENDS, STARTS};
use crate::input::Markers;
use crate::meta::{MetaReader, MetaWriter};
use crate::output::Layout;
use crate::processor::{Checked, KindCounters, Record, Step, WindowKind};
use crate::reject::Reason;
use crate::store::session_store::PutOutcome;
use crate::store::{KeyedSession, Session};
use crate::time::{Duration, TimeBase};
use crate::{Error, Result, SessionStore};

/// A session's flag: the cap ended the session before it (the next record would have joined it
/// by the gap rule).
pub const CUT: u8 = 1;
/// A session's flag: a record at its end ends it.
pub const ENDED: u8 = 2;
/// A session's flag: a record at its start starts it.
pub const STARTED: u8 = 4;

/// Session windows whose sessions span at most `max_duration` from first to last record, or
/// that a record starts or ends, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CappedSessionSpec {
    /// The session parameters (gap, grace, retention, emit, on_invalid).
    pub session: SessionSpec,
    /// The longest a session may span from its first to its last record (> 0), if capped.
    pub max_duration: Option<Duration>,
    /// The columns whose records start or end a session.
    pub markers: Markers,
}

/// A [`CappedSessionSpec`] in ticks of the time column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CappedTicks {
    /// The session parameters.
    pub session: Resolved,
    /// `max_duration` in ticks (`i64::MAX`: no cap).
    pub max_duration: i64,
    /// Whether records carry marker flags (a marker column is named).
    pub marked: bool,
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

/// What checking a record leaves for applying it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prepared {
    /// The gap in ticks.
    gap: i64,
    /// The marker flags (`STARTS`, `ENDS`).
    flags: u8,
}

/// One record of a stored session.
#[derive(Debug, Clone, Copy)]
struct Rec {
    t: i64,
    seq: u64,
    gap: i64,
    flags: u8,
    /// Where its one-record state lies in the scratch bytes.
    state: (usize, usize),
}

/// A stored session read into scratch.
#[derive(Debug, Clone, Copy)]
struct Old {
    start: i64,
    end: i64,
    /// Its closing, the bound it is stored under.
    reach: i64,
    flags: u8,
    state: (usize, usize),
    /// Its records' stored bytes in the scratch bytes.
    raw: (usize, usize),
    /// Its records once read: `recs[records.0..records.1]`.
    records: (usize, usize),
}

impl Old {
    /// The session as the cut rule sees it (its closing in the place of its reach: the same
    /// for the key's last session, which no start marker follows).
    fn open(&self) -> Open {
        Open {
            start: self.start,
            end: self.end,
            reach: self.reach,
            ends: self.flags & ENDED != 0,
        }
    }
}

/// A session of the re-cut.
#[derive(Debug, Clone, Copy)]
struct New {
    start: i64,
    end: i64,
    /// Its closing.
    reach: i64,
    flags: u8,
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
    groups: Vec<u8>,
    new: Vec<New>,
    states: Vec<u8>,
    acc: Vec<u8>,
    merged: Vec<u8>,
    value: Vec<u8>,
}

/// The fields of a stored value, checked.
struct Stored<'v> {
    end: i64,
    flags: u8,
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
    let flags = take::<1>(&mut b)?[0];
    if flags & !(CUT | ENDED | STARTED) != 0 {
        return Err(format!("flags {flags} are not a session's"));
    }
    let state = take_slice(&mut b)?;
    Ok(Stored {
        end,
        flags,
        state,
        records: b,
    })
}

/// Reads one stored record off `b`: its time, arrival, gap, flags (with `marked` records) and
/// state.
fn take_record<'v>(
    b: &mut &'v [u8],
    marked: bool,
) -> std::result::Result<(i64, u64, i64, u8, &'v [u8]), String> {
    let t = i64::from_le_bytes(take::<8>(b)?);
    let seq = u64::from_le_bytes(take::<8>(b)?);
    let gap = i64::from_le_bytes(take::<8>(b)?);
    let flags = if marked { take::<1>(b)?[0] } else { 0 };
    if flags & !(STARTS | ENDS) != 0 {
        return Err(format!("a record has flags {flags}"));
    }
    Ok((t, seq, gap, flags, take_slice(b)?))
}

/// Reads the records stored in `bytes[raw.0..raw.1]`, appending them to `recs` (their states
/// as ranges of `bytes`).
fn read_records(
    bytes: &[u8],
    raw: (usize, usize),
    marked: bool,
    recs: &mut Vec<Rec>,
) -> std::result::Result<(), String> {
    let mut b = &bytes[raw.0..raw.1];
    while !b.is_empty() {
        let (t, seq, gap, flags, state) = take_record(&mut b, marked)?;
        let end = raw.1 - b.len();
        recs.push(Rec {
            t,
            seq,
            gap,
            flags,
            state: (end - state.len(), end),
        });
    }
    Ok(())
}

fn put_record(r: &Rec, state: &[u8], marked: bool, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&r.t.to_le_bytes());
    out.extend_from_slice(&r.seq.to_le_bytes());
    out.extend_from_slice(&r.gap.to_le_bytes());
    if marked {
        out.push(r.flags);
    }
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
    type Prepared = Prepared;
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
        durations.extend(self.max_duration);
        self.resolve(&TimeBase::before_binding(&durations, time_unit))?;
        Ok(())
    }

    fn gap_column(&self) -> Option<&str> {
        self.session.gap_column()
    }

    fn markers(&self) -> Markers {
        self.markers.clone()
    }

    fn grace_spec(&self) -> Duration {
        self.session.grace
    }

    fn resolve(&self, base: &TimeBase) -> Result<CappedTicks> {
        Ok(CappedTicks {
            session: self.session.resolve(base)?,
            max_duration: match self.max_duration {
                Some(d) => capped_ticks(d, base)?,
                None => i64::MAX,
            },
            marked: self.markers.any(),
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
    ) -> std::result::Result<Prepared, Reason> {
        let mut session = SessionCounters::default();
        let gap = <SessionSpec as WindowKind>::check(&ticks.session, r, &mut session)?;
        counters.gap_clamped += session.gap_clamped;
        Ok(Prepared {
            gap,
            flags: r.flags,
        })
    }

    fn step(
        ticks: &CappedTicks,
        step: &mut Step<'_, Self>,
        sc: &mut Scratch,
        r: Record<'_, Prepared>,
    ) -> Result<bool> {
        let (key, t) = (r.key, r.t);
        // A session the record would join may have expired from the store if the record is
        // older than what the store still shows; such a record is late (never one within the
        // grace: the store keeps max_gap + grace + max_gap behind its newest reach).
        if t < step.store.min_live_end() {
            return Ok(false);
        }
        fetch(step, sc, key, t.saturating_sub(ticks.session.max_gap))?;
        // The sessions that can change: S0 (the last one starting at or before t) if t is
        // within its closing, every session starting after t (the fetched list is in start
        // order), and for a record that starts a session, the one before S0 if its closing
        // reaches t (it can fall to just before the record).
        let mut first = match sc.old.iter().rposition(|o| o.start <= t) {
            Some(i) if sc.old[i].reach >= t => i,
            Some(i) => i + 1,
            None => 0,
        };
        let starts = r.prepared.flags & STARTS != 0;
        if starts && first > 0 && sc.old[first - 1].reach >= t {
            first -= 1;
        }
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
            gap: r.prepared.gap,
            flags: r.prepared.flags,
            state: (at, sc.bytes.len()),
        };
        sc.region.clear();
        sc.new.clear();
        let cap = ticks.max_duration;
        match sc.old[..] {
            [] => append(sc, own, None, cap),
            [s0] if s0.end <= t && !closed && !starts => append(sc, own, Some(s0), cap),
            _ => recut(sc, own, cap, ticks.marked)?,
        }
        if changes_closed(sc, step.close, t) {
            return Ok(false);
        }
        keep_closed(sc, step.close);
        states(step, sc, key)?;
        apply(step, sc, key, ticks.marked)?;
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
        if !ticks.marked && s.flags & !CUT != 0 {
            return Err(format!("flags {} without marker columns", s.flags));
        }
        let mut b = s.records;
        let (mut last, mut max_reach, mut n) = (None, i64::MIN, 0usize);
        let (mut first_group, mut end_group) = (0u8, 0u8);
        while !b.is_empty() {
            let (t, seq, gap, flags, state) = take_record(&mut b, ticks.marked)?;
            states.push(state);
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
            first_group |= if t == start { flags } else { 0 };
            end_group = if last.is_some_and(|(l, _)| l == t) {
                end_group | flags
            } else {
                flags
            };
            last = Some((t, seq));
            n += 1;
        }
        if last.map(|(t, _)| t) != Some(s.end) {
            return Err(format!("its last record is not at its end {}", s.end));
        }
        let ended = end_group & ENDS != 0;
        let marks = marks(first_group, if ended { ENDS } else { 0 });
        if s.flags & !CUT != marks {
            return Err(format!(
                "flags {} do not match its records' markers",
                s.flags
            ));
        }
        // Without markers the closing is the reach; a start marker after it may lower it.
        let last_join = if ended { s.end } else { max_reach };
        if reach > last_join || reach < s.end || (!ticks.marked && reach != max_reach) {
            return Err(format!("reach {reach} is not its records' {last_join}"));
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
        if let Some(d) = self.max_duration {
            w.duration("max_duration", d);
        }
        if let Some(c) = &self.markers.starts {
            w.text("starts_session", c);
        }
        if let Some(c) = &self.markers.ends {
            w.text("ends_session", c);
        }
    }

    fn read_meta(r: &MetaReader<'_>, emit: EmitMode, on_invalid: OnInvalid) -> Result<Self> {
        let text = |name| r.get(name).map(|_| r.text(name)).transpose();
        Ok(Self {
            session: SessionSpec::read_meta(r, emit, on_invalid)?,
            max_duration: r
                .get("max_duration")
                .map(|_| r.duration("max_duration"))
                .transpose()?,
            markers: Markers {
                starts: text("starts_session")?,
                ends: text("ends_session")?,
            },
        })
    }
}

/// Whether accepting the re-cut changes a closed session (its records, bounds or flags), or,
/// for a record before `close` (one beyond the grace), makes a session that is closed already
/// (closing below `close`). A record within the grace can make one: the records before a
/// start marker at `close` close just before it (in `final` mode `apply` or the end of the
/// call emits them).
fn changes_closed(sc: &Scratch, close: i64, t: i64) -> bool {
    let same = |n: &New| n.same_as().filter(|&o| sc.old[o].flags == n.flags);
    let makes_closed = t < close && sc.new.iter().any(|n| n.reach < close && same(n).is_none());
    makes_closed
        || sc
            .old
            .iter()
            .enumerate()
            .any(|(i, o)| o.reach < close && !sc.new.iter().any(|n| same(n) == Some(i)))
}

/// Keeps the stored closing of every closed session the re-cut leaves as it is (a start marker
/// after it may lower its closing, which no longer matters once it is closed).
fn keep_closed(sc: &mut Scratch, close: i64) {
    for n in &mut sc.new {
        if let Some(o) = n.same_as().map(|o| sc.old[o]) {
            if o.reach < close && o.flags == n.flags {
                n.reach = o.reach;
            }
        }
    }
}

/// The re-cut of record `own` at or after every record of the key's open sessions, without
/// reading their records, for a record that starts no session: it joins `s0` (the only
/// session it can change) or starts a session of its own, the cut points before it unchanged.
fn append(sc: &mut Scratch, own: Rec, s0: Option<Old>, cap: i64) {
    let (t, reach) = (own.t, own.t + own.gap);
    let before = s0.map(|s| s.open());
    let mut session = match before {
        Some(s) if s.joins(t, own.flags, cap) => s,
        _ => {
            // S0, if any, stays as it is.
            sc.old.clear();
            let cut = before.is_some_and(|s| s.by_gap(t, own.flags));
            sc.region.push(own);
            sc.new.push(New {
                start: t,
                end: t,
                reach: Open::new(t, reach, own.flags).last_join(),
                flags: flag(cut, CUT) | marks(own.flags, own.flags),
                prefix: None,
                records: (0, 1),
                state: (0, 0),
            });
            return;
        }
    };
    session.add(t, reach, own.flags);
    let s0 = s0.map_or(0, |s| s.flags);
    sc.region.push(own);
    sc.new.push(New {
        start: session.start,
        end: t,
        reach: session.last_join(),
        flags: (s0 & (CUT | STARTED)) | flag(session.ends, ENDED),
        prefix: Some(0),
        records: (0, 1),
        state: (0, 0),
    });
}

/// `f` if `on`, else no flag.
fn flag(on: bool, f: u8) -> u8 {
    if on {
        f
    } else {
        0
    }
}

/// A session's marker flags from the group flags at its start and at its end.
fn marks(first: u8, last: u8) -> u8 {
    flag(first & STARTS != 0, STARTED) | flag(last & ENDS != 0, ENDED)
}

/// Reads the key's sessions whose closing is at least `lower` into `sc.old` (in start order),
/// with their bytes in `sc.bytes`. With `lower = t - max_gap` that is every session the record
/// can change, and the latest session starting at or before `t` if one of them starts before
/// it: a session whose closing reaches `t` ends within `max_gap` of it, and a session starting
/// after that end, at or before `t`, closes no earlier than it starts.
fn fetch(
    step: &Step<'_, CappedSessionSpec>,
    sc: &mut Scratch,
    key: &[u8],
    lower: i64,
) -> Result<()> {
    sc.bytes.clear();
    sc.old.clear();
    sc.recs.clear();
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
            flags: v.flags,
            state,
            raw: (state.1, sc.bytes.len()),
            records: (0, 0),
        });
    }
    sc.old.sort_unstable_by_key(|o| o.start);
    Ok(())
}

/// Cuts the records of `sc.old` and record `own` into `sc.new` by the complete-data rule, and
/// finds the old sessions whose records begin new ones. The first session keeps the `CUT` flag
/// of the old session it starts at (the boundary before it does not move), unless a start
/// marker now begins it.
fn recut(sc: &mut Scratch, own: Rec, cap: i64, marked: bool) -> Result<()> {
    for i in 0..sc.old.len() {
        let from = sc.recs.len();
        read_records(&sc.bytes, sc.old[i].raw, marked, &mut sc.recs).map_err(|why| {
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
    let region = &sc.region;
    group_flags(
        region.len(),
        |i| region[i].t,
        |i| region[i].flags,
        &mut sc.groups,
    );
    let groups = &sc.groups;
    let first_cut =
        own != 0 && sc.old.first().is_some_and(|o| o.flags & CUT != 0) && groups[0] & STARTS == 0;
    let (mut i, mut before): (usize, Option<Open>) = (0, None);
    while i < region.len() {
        let (r0, g0) = (region[i], groups[i]);
        let cut = before.map_or(first_cut, |p| p.by_gap(r0.t, g0));
        let mut session = Open::new(r0.t, r0.t + r0.gap, g0);
        let mut j = i + 1;
        while j < region.len() && session.joins(region[j].t, groups[j], cap) {
            session.add(region[j].t, region[j].t + region[j].gap, groups[j]);
            j += 1;
        }
        let len = |o: &Old| o.records.1 - o.records.0;
        let prefix = sc.old.iter().position(|o| {
            sc.recs[o.records.0].seq == r0.seq && i + len(o) <= j && !(i..i + len(o)).contains(&own)
        });
        sc.new.push(New {
            start: r0.t,
            end: session.end,
            reach: session.last_join(),
            flags: flag(cut, CUT) | marks(g0, groups[j - 1]),
            prefix,
            records: (i + prefix.map_or(0, |o| len(&sc.old[o])), j),
            state: (0, 0),
        });
        before = Some(session);
        i = j;
    }
    // A session that a start marker follows closes just before it.
    for k in 1..sc.new.len() {
        let next = &sc.new[k];
        let next = (
            next.start,
            if next.flags & STARTED != 0 { STARTS } else { 0 },
        );
        sc.new[k - 1].reach = closing(sc.new[k - 1].reach, Some(next));
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

/// Writes the re-cut into the store, the changelog and the counters. In `final` mode, a
/// session whose closing a start marker lowered below what was emitted already is emitted now.
fn apply(
    step: &mut Step<'_, CappedSessionSpec>,
    sc: &mut Scratch,
    key: &[u8],
    marked: bool,
) -> Result<()> {
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
        let unchanged = n
            .same_as()
            .is_some_and(|o| old[o].flags == n.flags && old[o].reach == n.reach);
        if unchanged {
            continue;
        }
        value.clear();
        value.extend_from_slice(&n.end.to_le_bytes());
        value.push(n.flags);
        let state = &states[n.state.0..n.state.1];
        put_len(state, value)?;
        value.extend_from_slice(state);
        if let Some(o) = n.prefix {
            value.extend_from_slice(&bytes[old[o].raw.0..old[o].raw.1]);
        }
        for r in &region[n.records.0..n.records.1] {
            put_record(r, &bytes[r.state.0..r.state.1], marked, value)?;
        }
        if step.put(key, n.start, n.reach, value)? == PutOutcome::Expired {
            // Unreachable: a session that is not closed is within retention.
            return Err(Error::Internal(format!(
                "a capped session [{}, {}] expired as it was put",
                n.start, n.end
            )));
        }
        if step.mode == EmitMode::Final && n.reach < step.emitted_below {
            let session = Session {
                start: n.start,
                end: n.reach,
                value: &value[..],
            };
            CappedSessionSpec::final_row(&KeyedSession { key, session }, &mut step.finals);
        }
        step.latest_end = Some(step.latest_end.map_or(n.end, |e| e.max(n.end)));
    }
    for o in old.iter() {
        if !new.iter().any(|n| (n.start, n.reach) == (o.start, o.reach)) {
            step.store.remove(key, o.start, o.reach);
        }
    }
    let cuts = |flags: u8| u64::from(flags & CUT != 0);
    let was: u64 = old.iter().map(|o| cuts(o.flags)).sum();
    let now: u64 = new.iter().map(|n| cuts(n.flags)).sum();
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
