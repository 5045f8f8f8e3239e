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
//! **Per record** (stream time already advanced; `recut`). Records before `t` in time keep
//! their sessions: only the session `S0` holding the latest record at or before `t` (if `t` is
//! within its closing) and the sessions starting after `t` can change, and, for a record that
//! starts a session, the session before `S0`, whose closing it may lower. The key's sessions
//! are read into memory (`key`), the record is put in its place, and that part of the key's
//! sessions is cut again with the complete-data rule. A record in time order that starts no
//! session (the common case) joins `S0` or starts a session after it: that is done in place,
//! without reading `S0`'s records. Either way, the record is late if and only if the re-cut
//! changes a closed session (its records, bounds or flags), or, for a record beyond the grace,
//! makes a session that is closed already (a session whose records stay as they were may close
//! when a start marker lowers its closing: in `final` mode it is emitted, then or at the end of
//! the call), or if it is older than what the store still holds (a session it would join may
//! be gone); otherwise the sessions that changed are written back and those gone removed. For
//! a record within the grace none of that is closed (each starts after `t >= stream time -
//! grace`, or reaches past `t`), so such records are never late and the sessions equal complete
//! mode's.
//!
//! **A key's records of a call** (the processor's batched path, `final` mode): the key's
//! sessions are read once, its records applied one by one in memory as above, and what changed
//! is written back once; the counters and the store's metrics are those of the record path.
//!
//! The changelog follows the re-cut: a window the re-cut keeps, with new records, is forwarded
//! as an update without a delete first (plain sessions forward Kafka's delete, `super::rule`).
//!
//! - `value`: the stored value, read and written;
//! - `key`: a key's sessions in memory;
//! - `recut`: what one record does to them.

use arrow_schema::TimeUnit;

use super::complete::capped_ticks;
use super::kind::SessionCounters;
use super::spec::{OnInvalid, Resolved, SessionSpec};
use crate::emit::{EmitMode, Rows};
use crate::input::markers::ENDS;
use crate::input::Markers;
use crate::meta::{MetaReader, MetaWriter};
use crate::output::Layout;
use crate::processor::{Applying, KindCounters, Record, RunOutcome, Unchecked, WindowKind};
use crate::reject::Reason;
use crate::store::KeyedSession;
use crate::time::{Duration, TimeBase};
use crate::{Error, Result, SessionStore};

mod key;
mod recut;
mod value;

pub use recut::Scratch;

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
    /// Sessions stored or emitted so far that the cap ended (the next record of the key would have
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
        r: Unchecked,
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
        step: &mut Applying<'_, Self>,
        sc: &mut Scratch,
        r: Record<'_, Prepared>,
    ) -> Result<bool> {
        // A session the record would join may have expired from the store if the record is
        // older than what the store still shows; such a record is late (never one within the
        // grace: the store keeps max_gap + grace + max_gap behind its newest reach).
        if r.t < step.store.min_live_end() {
            return Ok(false);
        }
        let lower = r.t.saturating_sub(ticks.session.max_gap);
        sc.key.load(step.store, r.key, lower)?;
        if recut::apply_record(ticks, step, sc, &r, false)?.is_none() {
            return Ok(false);
        }
        sc.key.write_back(step, r.key, false, &mut sc.value)?;
        Ok(true)
    }

    fn run_safe(ticks: &CappedTicks, t: i64, stream_time: i64) -> bool {
        // Such a record is never late, and every session it can change is open and visible.
        t >= stream_time.saturating_sub(ticks.session.grace)
    }

    fn step_run(
        ticks: &CappedTicks,
        step: &mut Applying<'_, Self>,
        sc: &mut Scratch,
        records: &[Record<'_, Prepared>],
    ) -> Result<RunOutcome> {
        let Some(lowest) = records.iter().map(|r| r.t).min() else {
            return Ok(RunOutcome::default());
        };
        let key = records[0].key;
        sc.key.load(
            step.store,
            key,
            lowest.saturating_sub(ticks.session.max_gap),
        )?;
        let mut outcome = RunOutcome::default();
        for r in records {
            let applied = recut::apply_record(ticks, step, sc, r, true)?.ok_or_else(|| {
                Error::Internal(
                    "a run-safe record was not accepted: the call goes record by record".into(),
                )
            })?;
            outcome.puts += applied.puts;
            outcome.removes += applied.removes;
            outcome.max_end = outcome.max_end.max(applied.max_end);
            outcome.isolated += u64::from(applied.isolated);
        }
        sc.key.write_back(step, key, true, &mut sc.value)?;
        Ok(outcome)
    }

    fn stored_states<'v>(
        ticks: &CappedTicks,
        start: i64,
        reach: i64,
        value: &'v [u8],
        states: &mut Vec<&'v [u8]>,
    ) -> std::result::Result<(), String> {
        let s = value::parse(value)?;
        if !ticks.marked && s.flags & !CUT != 0 {
            return Err(format!("flags {} without marker columns", s.flags));
        }
        let mut b = s.records;
        let (mut last, mut max_reach, mut n) = (None, i64::MIN, 0usize);
        let (mut first_group, mut end_group) = (0u8, 0u8);
        while !b.is_empty() {
            let (t, seq, gap, flags, state) = value::take_record(&mut b, ticks.marked)?;
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
        let marks = recut::marks(first_group, if ended { ENDS } else { 0 });
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
            value::parse(s.session.value).map_or((s.session.start, &[][..]), |v| (v.end, v.state));
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
