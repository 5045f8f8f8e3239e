//! Sliding windows as a window kind of the streaming processor: each record goes through the
//! one rule (`super::rule`) against the key's windows in the sliding store (`super::store`).

use arrow_schema::TimeUnit;

use super::check_record;
use super::spec::{Resolved, SlidingSpec};
use super::store::SlidingStore;
use crate::emit::{EmitMode, Rows};
use crate::meta::{MetaReader, MetaWriter};
use crate::output::Layout;
use crate::processor::{Applying, KindCounters, Record, Unchecked, WindowKind};
use crate::reject::{OnInvalid, Reason};
use crate::state;
use crate::time::{Duration, TimeBase};
use crate::{KeyedSession, Result};

/// The counters of sliding processors, beyond the processor's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlidingCounters {
    /// Windows of the definition that contain a record but had closed when it arrived: their
    /// change is not in the output (one count per record and window).
    pub late_window_update: u64,
}

impl KindCounters for SlidingCounters {
    const NAMES: &'static [&'static str] = &["late_window_update"];
    fn values(&self) -> Vec<u64> {
        vec![self.late_window_update]
    }
    fn from_values(values: &[u64]) -> Self {
        Self {
            late_window_update: values.first().copied().unwrap_or(0),
        }
    }
}

impl WindowKind for SlidingSpec {
    type Ticks = Resolved;
    type Counters = SlidingCounters;
    type Prepared = ();
    type Scratch = super::rule::Scratch;
    type Store = SlidingStore;

    const KIND: &'static str = "sliding-processor/1";
    const PREFIX: &'static str = "windowstore.sliding.";
    const WHAT: &'static str = "sliding processor";
    const LAYOUT: Layout = super::LAYOUT;

    fn emit(&self) -> EmitMode {
        self.emit
    }

    fn on_invalid(&self) -> OnInvalid {
        self.on_invalid
    }

    fn validate(&self, time_unit: Option<TimeUnit>) -> Result<()> {
        SlidingSpec::validate(self, time_unit)
    }

    fn grace_spec(&self) -> Duration {
        self.grace
    }

    fn resolve(&self, base: &TimeBase) -> Result<Resolved> {
        SlidingSpec::resolve(self, base)
    }

    fn retention(ticks: &Resolved) -> i64 {
        ticks.retention
    }

    fn grace(ticks: &Resolved) -> i64 {
        ticks.grace
    }

    fn new_store(&self, ticks: &Resolved) -> Result<SlidingStore> {
        SlidingStore::new(
            ticks.time_difference,
            ticks.retention,
            self.emit == EmitMode::Final,
        )
    }

    fn check(
        ticks: &Resolved,
        r: Unchecked,
        _counters: &mut SlidingCounters,
    ) -> std::result::Result<(), Reason> {
        match check_record(r.null_key, r.time, r.t, ticks.time_difference) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    fn step(
        ticks: &Resolved,
        step: &mut Applying<'_, Self>,
        sc: &mut Self::Scratch,
        r: Record<'_, ()>,
    ) -> Result<bool> {
        super::rule::apply(ticks.time_difference, step, sc, &r)
    }

    fn changelog_rows(step: &Applying<'_, Self>, sc: &mut Self::Scratch) -> Result<Option<Rows>> {
        super::rule::changelog_rows(step, sc)
    }

    fn read_ahead(store: &SlidingStore, sc: &mut Self::Scratch, keys: &arrow_row::Rows) {
        super::rule::read_ahead(store, sc, keys);
    }

    fn check_stored(
        ticks: &Resolved,
        start: i64,
        end: i64,
        time: i64,
    ) -> std::result::Result<(), String> {
        if end.checked_sub(start) != Some(ticks.time_difference) {
            return Err("its length is not the time difference".into());
        }
        if !(start <= time && time <= end) {
            return Err(format!("window time {time} is outside it"));
        }
        Ok(())
    }

    fn final_row(s: &KeyedSession<'_>, rows: &mut Rows) {
        let (time, agg_state) = state::split(s.session.value);
        rows.push(
            s.key,
            (s.session.start, s.session.end, time),
            agg_state,
            false,
        );
    }

    fn write_meta(&self, w: &mut MetaWriter<'_>) {
        w.duration("time_difference", self.time_difference);
        w.duration("grace", self.grace);
    }

    fn read_meta(r: &MetaReader<'_>, emit: EmitMode, on_invalid: OnInvalid) -> Result<Self> {
        Ok(SlidingSpec {
            time_difference: r.duration("time_difference")?,
            grace: r.duration("grace")?,
            emit,
            on_invalid,
        })
    }
}

/// The streaming sliding window processor.
pub type SlidingProcessor = crate::processor::Processor<SlidingSpec>;
