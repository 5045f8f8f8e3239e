//! Sliding window parameters as the caller gives them, and resolved into ticks.

use arrow_schema::TimeUnit;

use crate::emit::EmitMode;
use crate::reject::OnInvalid;
use crate::time::{Duration, TimeBase};
use crate::{Error, Result};

/// The parameters of a sliding window (docs/semantics.md section 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlidingSpec {
    /// `D`: a window spans `[start, start + D]`, both ends inclusive (>= 0).
    pub time_difference: Duration,
    /// How long after a window's end late records still update it (>= 0).
    pub grace: Duration,
    /// When windows are emitted.
    pub emit: EmitMode,
    /// What to do with unusable records.
    pub on_invalid: OnInvalid,
}

/// A [`SlidingSpec`] in ticks of the time column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// `D` in ticks.
    pub time_difference: i64,
    /// Grace in ticks.
    pub grace: i64,
    /// Retention of the window store: windows a record can still reach live `2D + grace`
    /// behind stream time, and store time (the largest window end put) runs up to `D + 1`
    /// ahead of it.
    pub retention: i64,
}

impl SlidingSpec {
    /// Checks what can be checked before the time column is known: signs, and overflows in
    /// the base [`TimeBase::before_binding`] gives for an integer column of `time_unit`.
    pub fn validate(&self, time_unit: Option<TimeUnit>) -> Result<()> {
        self.resolve(&TimeBase::before_binding(&self.durations(), time_unit))?;
        Ok(())
    }

    fn check_signs(&self) -> Result<()> {
        for (d, name) in [
            (self.time_difference, "time_difference"),
            (self.grace, "grace"),
        ] {
            if d.is_negative() {
                return Err(Error::invalid(name, format!("must be >= 0, got {d:?}")));
            }
        }
        Ok(())
    }

    /// Every duration of the spec.
    pub fn durations(&self) -> Vec<Duration> {
        vec![self.time_difference, self.grace]
    }

    /// The parameters in ticks of `base`.
    pub fn resolve(&self, base: &TimeBase) -> Result<Resolved> {
        self.check_signs()?;
        self.resolve_ticks(base)
    }

    fn resolve_ticks(&self, base: &TimeBase) -> Result<Resolved> {
        let d = self.time_difference.to_ticks(base, "time_difference")?;
        let grace = self.grace.to_ticks(base, "grace")?;
        // The store keeps windows 3 × time_difference + grace (+ 2) ticks: blame the
        // parameter that makes that overflow.
        let tripled = d.checked_mul(3).and_then(|r| r.checked_add(2));
        let retention = tripled.and_then(|r| r.checked_add(grace)).ok_or_else(|| {
            Error::invalid(
                if tripled.is_some() {
                    "grace"
                } else {
                    "time_difference"
                },
                format!("3 × time_difference ({d}) + grace ({grace}) overflows 64-bit ticks"),
            )
        })?;
        Ok(Resolved {
            time_difference: d,
            grace,
            retention,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(d: Duration, grace: Duration) -> SlidingSpec {
        SlidingSpec {
            time_difference: d,
            grace,
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Error,
        }
    }

    #[test]
    fn negative_durations_name_their_parameter() {
        let err = spec(Duration::Ticks(-1), Duration::Ticks(0))
            .validate(None)
            .unwrap_err();
        assert_eq!(err.invalid_parameter(), Some("time_difference"), "{err:?}");
        let err = spec(Duration::Ticks(0), Duration::Nanos(-1))
            .validate(None)
            .unwrap_err();
        assert_eq!(err.invalid_parameter(), Some("grace"), "{err:?}");
    }

    #[test]
    fn zero_is_valid_and_overflow_is_refused() {
        let r = spec(Duration::Ticks(0), Duration::Ticks(0))
            .resolve(&TimeBase::integer(TimeUnit::Millisecond))
            .unwrap();
        assert_eq!((r.time_difference, r.grace, r.retention), (0, 0, 2));
        assert!(spec(Duration::Ticks(i64::MAX / 2), Duration::Ticks(0))
            .validate(None)
            .is_err());
        let err = spec(Duration::Nanos(1_500_000), Duration::Ticks(0))
            .resolve(&TimeBase::integer(TimeUnit::Millisecond))
            .unwrap_err();
        assert!(err.to_string().contains("time_difference"), "{err}");
    }

    #[test]
    fn a_bare_integer_is_refused_on_a_timestamp_column() {
        let ts = TimeBase::timestamp("ts", TimeUnit::Millisecond);
        let ten_s = Duration::Nanos(10_000_000_000);
        for (spec, name) in [
            (spec(Duration::Ticks(10), ten_s), "time_difference"),
            (spec(ten_s, Duration::Ticks(10)), "grace"),
        ] {
            let err = spec.resolve(&ts).unwrap_err();
            assert!(
                matches!(err, Error::InvalidWindowSpec { parameter, .. } if parameter == name),
                "{err}"
            );
            assert!(spec.validate(None).is_ok());
        }
        assert!(spec(ten_s, Duration::Ticks(0)).resolve(&ts).is_ok());
    }
}
