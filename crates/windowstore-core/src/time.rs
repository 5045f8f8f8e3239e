//! Time: ticks and their unit, durations given in ticks or in nanoseconds, checked arithmetic.
//!
//! Every time is an `i64` count of ticks; the tick is the unit of the input time column. A
//! duration given as a wall-clock length (nanoseconds) is converted into ticks once the unit is
//! known, and must be a whole number of ticks.

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

impl Duration {
    /// The duration in ticks of `unit`; `parameter` names it in errors.
    pub fn to_ticks(self, unit: TimeUnit, parameter: &'static str) -> Result<i64> {
        match self {
            Duration::Ticks(t) => Ok(t),
            Duration::Nanos(ns) => {
                let per_tick = nanos_per_tick(unit);
                if ns % per_tick != 0 {
                    return Err(Error::invalid(
                        parameter,
                        format!("{ns} ns is not a whole number of {} ticks", unit_name(unit)),
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

    #[test]
    fn durations_convert_exactly_or_fail_naming_the_parameter() {
        let thirty_s = Duration::Nanos(30_000_000_000);
        assert_eq!(
            thirty_s.to_ticks(TimeUnit::Millisecond, "gap").unwrap(),
            30_000
        );
        assert_eq!(
            thirty_s.to_ticks(TimeUnit::Microsecond, "gap").unwrap(),
            30_000_000
        );
        assert_eq!(
            Duration::Ticks(7)
                .to_ticks(TimeUnit::Second, "gap")
                .unwrap(),
            7
        );
        let err = Duration::Nanos(1_500).to_ticks(TimeUnit::Microsecond, "grace");
        assert!(matches!(
            err,
            Err(Error::InvalidWindowSpec {
                parameter: "grace",
                ..
            })
        ));
        let huge = Duration::Nanos(i128::from(i64::MAX) * 10);
        assert!(huge.to_ticks(TimeUnit::Nanosecond, "gap").is_err());
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
