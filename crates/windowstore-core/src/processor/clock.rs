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

use arrow_schema::TimeUnit;

use crate::time::{nanos_per_tick, Duration};
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

    /// Refuses an idle timeout that is not positive.
    pub(crate) fn validate(self) -> Result<()> {
        match self {
            Clock::Idle(timeout) if timeout.is_negative() || timeout.is_zero() => Err(
                Error::invalid("idle_timeout", format!("must be > 0, got {timeout:?}")),
            ),
            _ => Ok(()),
        }
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
