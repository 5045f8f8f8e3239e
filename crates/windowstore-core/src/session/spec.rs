//! Session window parameters as the caller gives them, and resolved into ticks.

use arrow_schema::TimeUnit;

use crate::emit::EmitMode;
use crate::time::{Duration, TimeBase};

pub use crate::reject::OnInvalid;
use crate::{Error, Result};

/// A fixed gap or a gap read per record from a column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GapSpec {
    /// Every record covers `[t, t + gap]`.
    Fixed(Duration),
    /// Record gaps come from `column`, capped at `max_gap`.
    Column {
        /// The gap column.
        column: String,
        /// The cap; gaps above it are clamped (and counted).
        max_gap: Duration,
    },
}

impl GapSpec {
    /// The gap from the caller's arguments: `gap` alone (fixed), or `gap_column` with
    /// `max_gap` (dynamic).
    pub fn from_args(
        gap: Option<Duration>,
        gap_column: Option<String>,
        max_gap: Option<Duration>,
    ) -> Result<Self> {
        match (gap, gap_column, max_gap) {
            (Some(g), None, None) => Ok(GapSpec::Fixed(g)),
            (None, Some(column), Some(max_gap)) => Ok(GapSpec::Column { column, max_gap }),
            (None, Some(_), None) => Err(Error::invalid(
                "max_gap",
                "a gap column needs max_gap (the largest gap a record may have)",
            )),
            (Some(_), Some(_), _) => Err(Error::invalid("gap", "give gap or gap_column, not both")),
            (Some(_), None, Some(_)) => Err(Error::invalid(
                "max_gap",
                "max_gap goes with gap_column, not with a fixed gap",
            )),
            (None, None, _) => Err(Error::invalid(
                "gap",
                "give gap (fixed) or gap_column and max_gap (dynamic)",
            )),
        }
    }

    /// In ticks of `base`: the fixed gap (`None` for a gap column) and the largest gap a
    /// record can have.
    pub fn to_ticks(&self, base: &TimeBase) -> Result<(Option<i64>, i64)> {
        Ok(match self {
            GapSpec::Fixed(g) => {
                let g = g.to_ticks(base, "gap")?;
                (Some(g), g)
            }
            GapSpec::Column { max_gap, .. } => (None, max_gap.to_ticks(base, "max_gap")?),
        })
    }

    /// The fixed gap or `max_gap`: the largest gap a record can have.
    pub fn max_gap(&self) -> Duration {
        match self {
            GapSpec::Fixed(g) | GapSpec::Column { max_gap: g, .. } => *g,
        }
    }
}

/// The parameters of a session window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSpec {
    /// The gap.
    pub gap: GapSpec,
    /// How long after a session's reach late records are still accepted (>= 0).
    pub grace: Duration,
    /// How long closed sessions are kept (default and minimum: max gap + grace).
    pub retention: Option<Duration>,
    /// When windows are emitted.
    pub emit: EmitMode,
    /// What to do with unusable records.
    pub on_invalid: OnInvalid,
}

/// A [`SessionSpec`] in ticks of the time column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// The fixed gap, or `None` for a gap column.
    pub fixed_gap: Option<i64>,
    /// The largest gap a record can have (the fixed gap, or `max_gap`).
    pub max_gap: i64,
    /// Grace in ticks.
    pub grace: i64,
    /// Retention in ticks.
    pub retention: i64,
}

impl SessionSpec {
    /// Checks what can be checked before the time column is known: signs, and, in the base
    /// [`TimeBase::before_binding`] gives for an integer column of `time_unit`, the retention
    /// minimum and overflows.
    pub fn validate(&self, time_unit: Option<TimeUnit>) -> Result<()> {
        self.resolve(&TimeBase::before_binding(&self.durations(), time_unit))?;
        Ok(())
    }

    fn check_signs(&self) -> Result<()> {
        let positive = |d: Duration, name: &'static str| {
            if d.is_negative() || d.is_zero() {
                Err(Error::invalid(name, format!("must be > 0, got {d:?}")))
            } else {
                Ok(())
            }
        };
        match &self.gap {
            GapSpec::Fixed(g) => positive(*g, "gap")?,
            GapSpec::Column { max_gap, .. } => positive(*max_gap, "max_gap")?,
        }
        if self.grace.is_negative() {
            return Err(Error::invalid(
                "grace",
                format!("must be >= 0, got {:?}", self.grace),
            ));
        }
        if let Some(r) = self.retention {
            positive(r, "retention")?;
        }
        Ok(())
    }

    /// Every duration of the spec.
    pub fn durations(&self) -> Vec<Duration> {
        let mut all = vec![self.gap.max_gap(), self.grace];
        all.extend(self.retention);
        all
    }

    /// The parameters in ticks of `base`; checks retention against its minimum.
    pub fn resolve(&self, base: &TimeBase) -> Result<Resolved> {
        self.check_signs()?;
        self.resolve_ticks(base)
    }

    fn resolve_ticks(&self, base: &TimeBase) -> Result<Resolved> {
        let (fixed_gap, max_gap) = self.gap.to_ticks(base)?;
        let grace = self.grace.to_ticks(base, "grace")?;
        let minimum = max_gap.checked_add(grace).ok_or_else(|| {
            Error::invalid("grace", "gap + grace overflows 64-bit ticks".to_string())
        })?;
        let retention = match self.retention {
            None => minimum,
            Some(r) => {
                let r = r.to_ticks(base, "retention")?;
                if r < minimum {
                    return Err(Error::invalid(
                        "retention",
                        format!(
                            "{} is below the minimum {} (max gap {} + grace {}); closed \
                             sessions must stay findable that long",
                            in_unit(r, base),
                            in_unit(minimum, base),
                            in_unit(max_gap, base),
                            in_unit(grace, base)
                        ),
                    ));
                }
                r
            }
        };
        Ok(Resolved {
            fixed_gap,
            max_gap,
            grace,
            retention,
        })
    }

    /// The gap column's name, for dynamic gaps.
    pub fn gap_column(&self) -> Option<&str> {
        match &self.gap {
            GapSpec::Column { column, .. } => Some(column),
            GapSpec::Fixed(_) => None,
        }
    }
}

/// `ticks` for a message: with its unit, which is not the caller's own where durations were
/// lengths resolved before binding.
fn in_unit(ticks: i64, base: &TimeBase) -> String {
    format!("{ticks} {}", crate::time::unit_name(base.unit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(gap: i64, grace: i64, retention: Option<i64>) -> SessionSpec {
        SessionSpec {
            gap: GapSpec::Fixed(Duration::Ticks(gap)),
            grace: Duration::Ticks(grace),
            retention: retention.map(Duration::Ticks),
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        }
    }

    fn parameter(r: Result<Resolved>) -> &'static str {
        match r {
            Err(Error::InvalidWindowSpec { parameter, .. }) => parameter,
            other => panic!("expected InvalidWindowSpec, got {other:?}"),
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let ms = &TimeBase::integer(TimeUnit::Millisecond);
        assert_eq!(parameter(spec(0, 0, None).resolve(ms)), "gap");
        assert_eq!(parameter(spec(-1, 0, None).resolve(ms)), "gap");
        assert_eq!(parameter(spec(10, -1, None).resolve(ms)), "grace");
        assert_eq!(parameter(spec(10, 5, Some(14)).resolve(ms)), "retention");
        assert_eq!(parameter(spec(i64::MAX, 1, None).resolve(ms)), "grace");
        let r = spec(10, 5, None).resolve(ms).unwrap();
        assert_eq!(
            (r.fixed_gap, r.max_gap, r.grace, r.retention),
            (Some(10), 10, 5, 15)
        );
        assert_eq!(spec(10, 5, Some(100)).resolve(ms).unwrap().retention, 100);
    }

    fn lengths(gap_s: i128, grace_s: i128, retention_s: i128) -> SessionSpec {
        let s = |n: i128| Duration::Nanos(n * 1_000_000_000);
        SessionSpec {
            gap: GapSpec::Fixed(s(gap_s)),
            grace: s(grace_s),
            retention: Some(s(retention_s)),
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        }
    }

    #[test]
    fn retention_below_its_minimum_is_refused_before_binding() {
        let err = lengths(30, 10, 20).validate(None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid retention: 20 s is below the minimum 40 s (max gap 30 s + grace 10 s); \
             closed sessions must stay findable that long"
        );
        assert!(lengths(30, 10, 40).validate(None).is_ok());
        // A bare integer makes the column an integer column of time_unit.
        let mixed = SessionSpec {
            retention: Some(Duration::Ticks(40)),
            ..lengths(30, 10, 0)
        };
        assert!(mixed.validate(Some(TimeUnit::Second)).is_ok());
        let err = mixed.validate(None).unwrap_err();
        assert!(
            err.to_string()
                .contains("40 ms is below the minimum 40000 ms"),
            "{err}"
        );
    }

    #[test]
    fn every_duration_refuses_a_bare_integer_on_a_timestamp_column() {
        let ts = TimeBase::timestamp("ts", TimeUnit::Microsecond);
        assert_eq!(parameter(spec(10, 0, None).resolve(&ts)), "gap");
        let grace = SessionSpec {
            grace: Duration::Ticks(5),
            ..lengths(30, 0, 40)
        };
        assert_eq!(parameter(grace.resolve(&ts)), "grace");
        let retention = SessionSpec {
            retention: Some(Duration::Ticks(50_000_000)),
            ..lengths(30, 0, 0)
        };
        assert_eq!(parameter(retention.resolve(&ts)), "retention");
        let max_gap = SessionSpec {
            gap: GapSpec::Column {
                column: "g".into(),
                max_gap: Duration::Ticks(10),
            },
            ..lengths(30, 0, 40)
        };
        assert_eq!(parameter(max_gap.resolve(&ts)), "max_gap");
        assert!(lengths(30, 0, 40).resolve(&ts).is_ok());
    }
}
