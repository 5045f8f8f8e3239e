//! Sliding window parameters as the caller gives them, and resolved into ticks.

use arrow_schema::TimeUnit;

use crate::emit::EmitMode;
use crate::reject::OnInvalid;
use crate::time::Duration;
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
    /// Checks what can be checked before the time unit is known.
    pub fn validate(&self) -> Result<()> {
        for (d, name) in [
            (self.time_difference, "time_difference"),
            (self.grace, "grace"),
        ] {
            if d.is_negative() {
                return Err(Error::invalid(name, format!("must be >= 0, got {d:?}")));
            }
        }
        let ticks = |d: Duration| matches!(d, Duration::Ticks(_));
        if ticks(self.time_difference) && ticks(self.grace) {
            self.resolve_ticks(TimeUnit::Millisecond)?;
        }
        Ok(())
    }

    /// The parameters in ticks of `unit`.
    pub fn resolve(&self, unit: TimeUnit) -> Result<Resolved> {
        self.validate()?;
        self.resolve_ticks(unit)
    }

    fn resolve_ticks(&self, unit: TimeUnit) -> Result<Resolved> {
        let d = self.time_difference.to_ticks(unit, "time_difference")?;
        let grace = self.grace.to_ticks(unit, "grace")?;
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
            .validate()
            .unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidWindowSpec {
                parameter: "time_difference",
                ..
            }
        ));
        let err = spec(Duration::Ticks(0), Duration::Nanos(-1))
            .validate()
            .unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidWindowSpec {
                parameter: "grace",
                ..
            }
        ));
    }

    #[test]
    fn zero_is_valid_and_overflow_is_refused() {
        let r = spec(Duration::Ticks(0), Duration::Ticks(0))
            .resolve(TimeUnit::Millisecond)
            .unwrap();
        assert_eq!((r.time_difference, r.grace, r.retention), (0, 0, 2));
        assert!(spec(Duration::Ticks(i64::MAX / 2), Duration::Ticks(0))
            .validate()
            .is_err());
        let err = spec(Duration::Nanos(1_500_000), Duration::Ticks(0))
            .resolve(TimeUnit::Millisecond)
            .unwrap_err();
        assert!(err.to_string().contains("time_difference"), "{err}");
    }
}
