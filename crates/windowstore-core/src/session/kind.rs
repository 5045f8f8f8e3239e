//! Session windows as a window kind of the streaming processor.
//!
//! The processor's store keeps each session under `[start, reach]` (its reach, `max(t + gap)`,
//! in the place of the end), with the value [`crate::state`] lays out: its end, then its
//! aggregate state. Keyed by reach, every question the processor asks is one exact range: a record at `t`
//! with gap `g` meets the sessions with `reach >= t` and `start <= t + g`, and the sessions that
//! close once stream time passes `x + grace` are those with reach `x`, so emitting them never
//! scans sessions that stay open (a large `max_gap` costs nothing per call). What a record does
//! to the sessions it meets, record by record or a key's records at once, is `super::rule`.

use arrow_schema::TimeUnit;

use super::record_checks::record_gap;
use super::spec::{GapSpec, OnInvalid, Resolved, SessionSpec};
use crate::emit::{EmitMode, Rows};
use crate::meta::{MetaReader, MetaWriter};
use crate::output::Layout;
use crate::processor::{Applying, KindCounters, Record, RunOutcome, Unchecked, WindowKind};
use crate::reject::Reason;
use crate::state;
use crate::store::session_store::Reads;
use crate::time::{Duration, TimeBase};
use crate::{KeyedSession, Result, SessionStore};

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

impl WindowKind for SessionSpec {
    type Ticks = Resolved;
    type Counters = SessionCounters;
    /// The record's gap in ticks.
    type Prepared = i64;
    type Scratch = super::rule::Scratch;
    type Store = SessionStore;

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

    fn validate(&self, time_unit: Option<TimeUnit>) -> Result<()> {
        SessionSpec::validate(self, time_unit)
    }

    fn gap_column(&self) -> Option<&str> {
        SessionSpec::gap_column(self)
    }

    fn grace_spec(&self) -> Duration {
        self.grace
    }

    fn resolve(&self, base: &TimeBase) -> Result<Resolved> {
        SessionSpec::resolve(self, base)
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

    fn new_store(&self, ticks: &Self::Ticks) -> Result<SessionStore> {
        SessionStore::new(Self::retention(ticks), None)
    }

    fn check(
        ticks: &Resolved,
        r: Unchecked,
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
        step: &mut Applying<'_, Self>,
        sc: &mut super::rule::Scratch,
        r: Record<'_, i64>,
    ) -> Result<bool> {
        super::rule::step_record(step, sc, &r, ticks.retention)
    }

    fn run_safe(ticks: &Resolved, t: i64, stream_time: i64) -> bool {
        // Such a record is not late, and every session it meets is open and visible (see
        // `super::rule`).
        t >= stream_time.saturating_sub(ticks.grace)
    }

    const RUN_LOGS: bool = true;

    fn step_run(
        _ticks: &Resolved,
        step: &mut Applying<'_, Self>,
        sc: &mut super::rule::Scratch,
        records: &[Record<'_, i64>],
    ) -> Result<RunOutcome> {
        super::rule::step_run(step, sc, records)
    }

    fn run_reads(_ticks: &Resolved, records: &[Record<'_, i64>]) -> Option<Reads> {
        let (lowest, highest) = super::rule::reads(records)?;
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

/// The streaming session processor.
pub type SessionProcessor = crate::processor::Processor<SessionSpec>;
