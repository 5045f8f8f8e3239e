//! Time: ticks and their unit, durations given in ticks or in nanoseconds, checked arithmetic.
//!
//! Every time is an `i64` count of ticks; the tick is the unit of the input time column. A
//! duration given as a wall-clock length (nanoseconds) is converted into ticks once the unit is
//! known, and must be a whole number of ticks. A bare integer duration is a count of ticks, and
//! only where a tick is an integer the caller wrote: an integer time column (its `time_unit`)
//! or processing time (epoch milliseconds). On a timestamp column it is refused, since its tick
//! (often microseconds, as Spark's) is not what a caller writing `gap=30` means ([`TimeBase`]).

use arrow_schema::TimeUnit;

use crate::{Error, Result};

/// A duration parameter: already in ticks, or a wall-clock length to convert into ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duration {
    /// A count of ticks (an integer given by the caller).
    Ticks(i64),
    /// A length in nanoseconds (from a `timedelta` or a string like `"30s"`).
    Nanos(i128),
}

/// What durations resolve into: the tick of the time column, and whether a bare integer
/// ([`Duration::Ticks`]) may stand for a count of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeBase {
    unit: TimeUnit,
    /// The timestamp column that refuses bare integers (`None`: integers are ticks).
    timestamp: Option<String>,
}

impl TimeBase {
    /// Ticks of `unit` that callers write as integers: an integer time column, or processing
    /// time (epoch milliseconds).
    pub fn integer(unit: TimeUnit) -> Self {
        Self {
            unit,
            timestamp: None,
        }
    }

    /// The ticks of the timestamp column `column`: durations must be lengths (`"30m"`), since
    /// a bare integer would silently be ticks of `unit`.
    pub fn timestamp(column: &str, unit: TimeUnit) -> Self {
        Self {
            unit,
            timestamp: Some(column.to_string()),
        }
    }

    /// The base to check `durations` in before the time column is known. With a bare integer
    /// among them the column must be an integer column of `time_unit` (default ms), so they
    /// resolve exactly as they will. With lengths only, the coarsest unit all of them are
    /// whole ticks of: whatever the column's unit, an error there (retention below its
    /// minimum, an overflow) is an error in the column's unit too.
    pub fn before_binding(durations: &[Duration], time_unit: Option<TimeUnit>) -> Self {
        if durations
            .iter()
            .any(|d| matches!(d, Duration::Ticks(t) if *t != 0))
        {
            return Self::integer(time_unit.unwrap_or(TimeUnit::Millisecond));
        }
        let whole = |unit: TimeUnit| {
            durations.iter().all(|d| match d {
                Duration::Nanos(ns) => ns % nanos_per_tick(unit) == 0,
                Duration::Ticks(_) => true,
            })
        };
        let unit = [
            TimeUnit::Second,
            TimeUnit::Millisecond,
            TimeUnit::Microsecond,
        ]
        .into_iter()
        .find(|u| whole(*u))
        .unwrap_or(TimeUnit::Nanosecond);
        Self::integer(unit)
    }

    /// The unit of a tick.
    pub fn unit(&self) -> TimeUnit {
        self.unit
    }
}

impl Duration {
    /// The duration in ticks of `base`; `parameter` names it in errors. A length must be a
    /// whole number of ticks; a bare integer is refused on a timestamp column, except 0 (zero
    /// in every unit).
    pub fn to_ticks(self, base: &TimeBase, parameter: &'static str) -> Result<i64> {
        let unit = base.unit;
        match self {
            Duration::Ticks(t) => match &base.timestamp {
                Some(column) if t != 0 => Err(Error::invalid(
                    parameter,
                    format!(
                        "{t} is a bare integer, but the time column {column:?} is a \
                         timestamp[{}]; give a length such as \"30m\" or \
                         timedelta(minutes=30)",
                        unit_name(unit)
                    ),
                )),
                _ => Ok(t),
            },
            Duration::Nanos(ns) => {
                let per_tick = nanos_per_tick(unit);
                if ns % per_tick != 0 {
                    return Err(Error::invalid(
                        parameter,
                        format!(
                            "{} is not a whole number of {} ticks (the time column's unit)",
                            length(ns),
                            unit_name(unit)
                        ),
                    ));
                }
                i64::try_from(ns / per_tick).map_err(|_| {
                    Error::invalid(parameter, format!("{ns} ns overflows 64-bit ticks"))
                })
            }
        }
    }

    /// Whether the duration is negative (checkable before the unit is known).
    pub fn is_negative(self) -> bool {
        match self {
            Duration::Ticks(t) => t < 0,
            Duration::Nanos(ns) => ns < 0,
        }
    }

    /// Whether the duration is zero.
    pub fn is_zero(self) -> bool {
        match self {
            Duration::Ticks(t) => t == 0,
            Duration::Nanos(ns) => ns == 0,
        }
    }
}

/// A length in nanoseconds as people read it: `1500 us`, `1.5 ms` reads worse than the exact
/// count in the largest unit it is whole in.
fn length(ns: i128) -> String {
    for unit in [
        TimeUnit::Second,
        TimeUnit::Millisecond,
        TimeUnit::Microsecond,
    ] {
        let per = nanos_per_tick(unit);
        if ns % per == 0 {
            return format!("{} {}", ns / per, unit_name(unit));
        }
    }
    format!("{ns} ns")
}

/// Nanoseconds in one tick of `unit`.
pub fn nanos_per_tick(unit: TimeUnit) -> i128 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

/// The short name of a unit: `s`, `ms`, `us`, `ns`.
pub fn unit_name(unit: TimeUnit) -> &'static str {
    match unit {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

/// Parses `s`, `ms`, `us`, `ns` into a unit.
pub fn parse_unit(name: &str) -> Result<TimeUnit> {
    match name {
        "s" => Ok(TimeUnit::Second),
        "ms" => Ok(TimeUnit::Millisecond),
        "us" => Ok(TimeUnit::Microsecond),
        "ns" => Ok(TimeUnit::Nanosecond),
        other => Err(Error::invalid(
            "time_unit",
            format!("unknown unit {other:?}; expected one of s, ms, us, ns"),
        )),
    }
}

/// Converts `value` ticks of `from` into ticks of `to`: exact, or `None` (overflow or a
/// fraction of a tick).
pub fn convert_ticks(value: i64, from: TimeUnit, to: TimeUnit) -> Option<i64> {
    let ns = value as i128 * nanos_per_tick(from);
    let per = nanos_per_tick(to);
    if ns % per != 0 {
        return None;
    }
    i64::try_from(ns / per).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parameter(r: Result<i64>) -> &'static str {
        match r {
            Err(Error::InvalidWindowSpec { parameter, .. }) => parameter,
            other => panic!("expected InvalidWindowSpec, got {other:?}"),
        }
    }

    #[test]
    fn durations_convert_exactly_or_fail_naming_the_parameter() {
        let ms = TimeBase::integer(TimeUnit::Millisecond);
        let us = TimeBase::timestamp("ts", TimeUnit::Microsecond);
        let thirty_s = Duration::Nanos(30_000_000_000);
        assert_eq!(thirty_s.to_ticks(&ms, "gap").unwrap(), 30_000);
        assert_eq!(thirty_s.to_ticks(&us, "gap").unwrap(), 30_000_000);
        assert_eq!(
            Duration::Ticks(7)
                .to_ticks(&TimeBase::integer(TimeUnit::Second), "gap")
                .unwrap(),
            7
        );
        assert_eq!(
            parameter(Duration::Nanos(1_500).to_ticks(&us, "grace")),
            "grace"
        );
        let huge = Duration::Nanos(i128::from(i64::MAX) * 10);
        assert!(huge
            .to_ticks(&TimeBase::integer(TimeUnit::Nanosecond), "gap")
            .is_err());
    }

    #[test]
    fn a_bare_integer_is_refused_on_a_timestamp_column_naming_its_unit() {
        let us = TimeBase::timestamp("ts", TimeUnit::Microsecond);
        let err = Duration::Ticks(1_800_000).to_ticks(&us, "gap").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid gap: 1800000 is a bare integer, but the time column \"ts\" is a \
             timestamp[us]; give a length such as \"30m\" or timedelta(minutes=30)"
        );
        // Zero is zero in every unit.
        assert_eq!(Duration::Ticks(0).to_ticks(&us, "grace").unwrap(), 0);
        let err = Duration::Nanos(1_500_000)
            .to_ticks(&TimeBase::integer(TimeUnit::Millisecond), "idle_timeout")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid idle_timeout: 1500 us is not a whole number of ms ticks (the time \
             column's unit)"
        );
    }

    #[test]
    fn the_base_before_binding_is_the_integer_unit_or_the_coarsest_whole_unit() {
        use TimeUnit::*;
        let before = |d: &[Duration], u| TimeBase::before_binding(d, u).unit();
        let s = Duration::Nanos(20_000_000_000);
        let half_ms = Duration::Nanos(500_000);
        assert_eq!(before(&[s, Duration::Ticks(0)], None), Second);
        assert_eq!(before(&[s, half_ms], None), Microsecond);
        assert_eq!(before(&[Duration::Nanos(1)], None), Nanosecond);
        assert_eq!(before(&[s, Duration::Ticks(5)], None), Millisecond);
        assert_eq!(before(&[s, Duration::Ticks(5)], Some(Second)), Second);
    }

    #[test]
    fn tick_conversion_is_exact() {
        use TimeUnit::*;
        assert_eq!(convert_ticks(3, Second, Millisecond), Some(3000));
        assert_eq!(convert_ticks(3000, Millisecond, Second), Some(3));
        assert_eq!(convert_ticks(3001, Millisecond, Second), None);
        assert_eq!(convert_ticks(i64::MAX, Second, Nanosecond), None);
        assert_eq!(parse_unit("us").unwrap(), Microsecond);
        assert!(parse_unit("minutes").is_err());
    }
}
