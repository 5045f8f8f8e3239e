//! The processor's clock: what gives a record its time, and what moves stream time besides
//! the records (docs/semantics.md, "Wall clock").
//!
//! - [`Clock::Event`]: a record's time is its time column; only records and `advance(t)` move
//!   stream time.
//! - [`Clock::Processing`]: a record's time is its arrival, `max(now, stream time)` on the
//!   caller's wall clock (epoch milliseconds); every call first advances stream time to that
//!   reading, so windows close on the clock alone (`poll`).
//! - [`Clock::Idle`]: event time, and once no record has arrived for the timeout, stream time
//!   runs with the wall clock from where the last record left it ([`IdleMark::target`]).
//!
//! The advance a clock makes runs inside the call's transaction, before its records, so a call
//! that fails leaves stream time, the windows and the idle mark as they were.

use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use arrow_schema::TimeUnit;

use super::{Processor, Then, WindowKind};
use crate::input::time::TimeColumn;
use crate::time::{nanos_per_tick, Duration, TimeBase};
use crate::{Error, Result};

/// What gives a record its time, and what else moves stream time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    /// A record's time is its time column.
    #[default]
    Event,
    /// A record's time is its arrival on the wall clock, in epoch milliseconds.
    Processing,
    /// Event time; after this long without a record (wall-clock time), stream time runs with
    /// the wall clock.
    Idle(Duration),
}

impl Clock {
    /// Whether calls read the wall clock.
    pub fn reads_wall(self) -> bool {
        self != Clock::Event
    }

    /// The clock's name in snapshots: `event`, `processing` or `idle`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Clock::Event => "event",
            Clock::Processing => "processing",
            Clock::Idle(_) => "idle",
        }
    }

    /// The clock from the caller's arguments: `"event"` (with `idle_timeout`, the idle
    /// clock) or `"processing"`.
    pub fn from_args(name: &str, idle_timeout: Option<Duration>) -> Result<Self> {
        match (name, idle_timeout) {
            ("event", None) => Ok(Clock::Event),
            ("event", Some(t)) => Ok(Clock::Idle(t)),
            ("processing", None) => Ok(Clock::Processing),
            ("processing", Some(_)) => Err(Error::invalid(
                "idle_timeout",
                "a processing-time processor closes windows on the wall clock already (poll()); \
                 idle_timeout is for event time",
            )),
            (other, _) => Err(Error::invalid(
                "clock",
                format!(
                    "{other:?}; expected \"event\" (a record's time is its time column) or \
                     \"processing\" (its arrival on the wall clock)"
                ),
            )),
        }
    }

    /// Refuses an idle timeout that is not positive.
    pub(crate) fn validate(self) -> Result<()> {
        match self {
            Clock::Idle(timeout) if timeout.is_negative() || timeout.is_zero() => Err(
                Error::invalid("idle_timeout", format!("must be > 0, got {timeout:?}")),
            ),
            _ => Ok(()),
        }
    }

    /// Checks the idle timeout against the time column's `base` as every other duration is
    /// checked (a whole number of ticks; no bare integer on a timestamp column).
    pub(crate) fn check(self, base: &TimeBase) -> Result<()> {
        if let Clock::Idle(timeout) = self {
            timeout.to_ticks(base, "idle_timeout")?;
        }
        Ok(())
    }
}

/// The system clock's reading in epoch milliseconds (the default `now`).
pub fn system_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// When the last record arrived on the wall clock, and stream time just after it: an idle
/// processor's stream time runs from there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdleMark {
    /// The reading (epoch ms) at which the last record arrived.
    pub wall_ms: i64,
    /// Stream time just after it.
    pub stream_time: i64,
}

impl IdleMark {
    /// The stream time the idle rule gives at reading `now` for `timeout` and a time column
    /// of `unit`: `stream_time + (now - wall_ms)` in ticks (rounded down) once `timeout` has
    /// passed; `None` before.
    pub fn target(&self, now: i64, timeout: Duration, unit: TimeUnit) -> Option<i64> {
        let per_tick = nanos_per_tick(unit);
        let elapsed_ns = (i128::from(now) - i128::from(self.wall_ms)) * 1_000_000;
        let timeout_ns = match timeout {
            Duration::Nanos(ns) => ns,
            Duration::Ticks(t) => i128::from(t) * per_tick,
        };
        if elapsed_ns < timeout_ns {
            return None;
        }
        let target = i128::from(self.stream_time) + elapsed_ns.div_euclid(per_tick);
        Some(i64::try_from(target).unwrap_or(i64::MAX))
    }
}

/// The processor's calls and settings that read or set the clock.
impl<K: WindowKind> Processor<K> {
    /// The processor with clock `clock` (see [`Clock`]). A processing-time clock reads no time
    /// column (`input.time` is empty), and takes no gap column and no grace; the event-time
    /// clocks need the time column.
    pub fn with_clock(mut self, clock: Clock) -> Result<Self> {
        clock.validate()?;
        if clock == Clock::Processing {
            if !self.input.time.is_empty() {
                return Err(Error::invalid(
                    "time",
                    format!(
                        "{:?}: a processing-time processor reads no time column (a record's time \
                         is its arrival on the wall clock, now=); leave time out, or use \
                         clock=\"event\"",
                        self.input.time
                    ),
                ));
            }
            if self.input.time_unit.is_some() {
                return Err(Error::invalid(
                    "time_unit",
                    "a processing-time processor reads no time column",
                ));
            }
            if self.kind.gap_column().is_some() {
                return Err(Error::invalid(
                    "gap_column",
                    "processing-time sessions take a fixed gap= (how long a key may stay \
                     silent on the wall clock)",
                ));
            }
            if !self.kind.grace_spec().is_zero() {
                return Err(Error::invalid(
                    "grace",
                    "processing-time records are never late (each arrives at the clock's \
                     latest reading), so there is no grace; leave it out",
                ));
            }
            // Arrival times are epoch milliseconds: every duration is known in ticks now.
            self.kind.resolve(&TimeColumn::arrival().base())?;
        } else if self.input.time.is_empty() {
            return Err(Error::invalid(
                "time",
                "an event-time processor needs its time column (time=\"ts\"); \
                 clock=\"processing\" uses arrival times instead",
            ));
        }
        self.clock = clock;
        Ok(self)
    }

    /// The processor's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Says who drives the processor (an opaque token, such as a streaming query's run), and
    /// keeps the idle mark a restored snapshot carried if the same `run` wrote it: a restore
    /// otherwise starts the idle period again at the first call after it (down time is not
    /// idle time).
    pub fn resume_idle(&mut self, run: Option<&str>) {
        self.run = run.map(str::to_string);
        if let Some((mark, wrote)) = &self.saved_idle {
            if run == Some(wrote.as_str()) {
                self.idle = Some(*mark);
            }
        }
    }

    /// Advances stream time to `t` (if later) without a record, as when an external clock,
    /// such as Spark's watermark, says that time has passed. Returns what that emits: in
    /// `final` mode the windows it closes; nothing in the changelog modes. `None` before the
    /// processor has seen a schema (it then holds no window).
    pub fn advance(&mut self, t: i64) -> Result<Option<RecordBatch>> {
        self.advance_then(t, &mut |_| Ok(()))
    }

    /// [`Self::advance`], running `then` on the output (if any) before the call commits.
    pub fn advance_then(&mut self, t: i64, then: &mut Then<'_>) -> Result<Option<RecordBatch>> {
        self.advance_at(t, None, then)
    }

    /// [`Self::advance_then`] at the wall clock's reading `now` (epoch milliseconds; `None`:
    /// the system clock). With an idle timeout the call first applies the idle rule at `now`,
    /// as a call with records does, and an advance that raises stream time counts as a record
    /// arriving at `now`: the idle period starts again from the stream time after the call.
    pub fn advance_at(
        &mut self,
        t: i64,
        now: Option<i64>,
        then: &mut Then<'_>,
    ) -> Result<Option<RecordBatch>> {
        self.call.life.check_usable("advance")?;
        let wall = self.wall(now);
        let before = self.call.life.stream_time;
        let idle = wall.and_then(|wall| self.idle_target(wall));
        let out = self.advance_to(idle.map_or(t, |idle| idle.max(t)), then)?;
        if let (Clock::Idle(_), Some(wall), Some(st)) =
            (self.clock, wall, self.call.life.stream_time)
        {
            if before.is_none_or(|b| t > b) {
                self.restart_idle(wall, st);
            }
        }
        Ok(out)
    }

    /// Closes what the wall clock closes at reading `now` (epoch milliseconds; `None`: the
    /// system clock) without a record, for a caller's periodic timer: with a processing-time
    /// clock stream time advances to `max(now, stream time)`; with an idle timeout it
    /// advances as the idle rule says once the stream is idle (the first poll after a
    /// restore starts the idle period). Returns what that emits (`final` mode); `None` when
    /// nothing moved or before the processor has seen a schema. All or nothing, as every call.
    pub fn poll_then(
        &mut self,
        now: Option<i64>,
        then: &mut Then<'_>,
    ) -> Result<Option<RecordBatch>> {
        self.call.life.check_usable("poll")?;
        let Some(wall) = self.wall(now) else {
            return Ok(None);
        };
        match self.clock {
            Clock::Processing => self.advance_to(self.arrival(wall), then),
            Clock::Idle(_) if self.idle.is_none() => {
                if let Some(st) = self.call.life.stream_time {
                    self.restart_idle(wall, st);
                }
                Ok(None)
            }
            Clock::Idle(_) => match self.idle_target(wall) {
                Some(target) => self.advance_to(target, then),
                None => Ok(None),
            },
            Clock::Event => Ok(None),
        }
    }

    /// Stream time to `t` inside a transaction (observed only, before a schema is known).
    fn advance_to(&mut self, t: i64, then: &mut Then<'_>) -> Result<Option<RecordBatch>> {
        if self.bound.is_none() {
            self.call.life.observe(t);
            return Ok(None);
        }
        self.transaction(&[], Some(t), 0, then)
    }

    /// A processing-time record's time at reading `wall`: the latest reading so far (a clock
    /// that steps back stays there).
    pub(super) fn arrival(&self, wall: i64) -> i64 {
        self.call.life.stream_time.map_or(wall, |st| st.max(wall))
    }

    /// The idle period starts again: the last record arrived at `wall`, stream time just after
    /// it is `stream_time`.
    pub(super) fn restart_idle(&mut self, wall: i64, stream_time: i64) {
        self.idle = Some(IdleMark {
            wall_ms: wall,
            stream_time,
        });
    }

    /// The wall clock's reading for a call, if the clock reads it.
    pub(super) fn wall(&self, now: Option<i64>) -> Option<i64> {
        self.clock
            .reads_wall()
            .then(|| now.unwrap_or_else(system_now))
    }

    /// The stream time the idle rule gives at reading `wall`, if the stream is idle and that
    /// is ahead of stream time. Before the first batch, the time column's unit is the one the
    /// processor was given (`time_unit`, default milliseconds), as for `advance(t)`.
    pub(super) fn idle_target(&self, wall: i64) -> Option<i64> {
        let Clock::Idle(timeout) = self.clock else {
            return None;
        };
        let unit = match self.bound.as_ref() {
            Some(bound) => bound.input.time.unit(),
            None => self.input.time_unit.unwrap_or(TimeUnit::Millisecond),
        };
        let target = self.idle.as_ref()?.target(wall, timeout, unit)?;
        self.call
            .life
            .stream_time
            .is_none_or(|st| target > st)
            .then_some(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(wall_ms: i64, stream_time: i64) -> IdleMark {
        IdleMark {
            wall_ms,
            stream_time,
        }
    }

    #[test]
    fn idle_target_runs_with_the_clock_once_the_timeout_passed() {
        let m = mark(1_000, 50);
        let five_s = Duration::Nanos(5_000_000_000);
        assert_eq!(m.target(5_999, five_s, TimeUnit::Millisecond), None);
        assert_eq!(m.target(6_000, five_s, TimeUnit::Millisecond), Some(5_050));
        // Ticks of seconds: the elapsed time rounds down.
        assert_eq!(m.target(7_999, five_s, TimeUnit::Second), Some(56));
        // A timeout in ticks counts ticks of the column.
        assert_eq!(m.target(3_999, Duration::Ticks(3), TimeUnit::Second), None);
        assert_eq!(
            m.target(4_000, Duration::Ticks(3), TimeUnit::Second),
            Some(53)
        );
        // Far readings saturate instead of wrapping.
        assert_eq!(
            mark(0, i64::MAX - 1).target(i64::MAX, five_s, TimeUnit::Nanosecond),
            Some(i64::MAX)
        );
    }

    #[test]
    fn idle_timeout_must_be_positive() {
        assert!(Clock::Idle(Duration::Ticks(0)).validate().is_err());
        assert!(Clock::Idle(Duration::Nanos(-1)).validate().is_err());
        assert!(Clock::Idle(Duration::Ticks(1)).validate().is_ok());
        assert!(Clock::Processing.validate().is_ok());
    }
}
