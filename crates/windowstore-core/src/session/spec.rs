//! Session window parameters as the caller gives them, and resolved into ticks.

use arrow_schema::TimeUnit;

use crate::emit::EmitMode;
use crate::time::Duration;

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
    /// Checks what can be checked before the time unit is known.
    pub fn validate(&self) -> Result<()> {
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
        // With every duration in ticks the unit does not matter: check the retention minimum
        // now rather than at the first batch.
        let ticks = |d: Duration| matches!(d, Duration::Ticks(_));
        let gap = match &self.gap {
            GapSpec::Fixed(g) | GapSpec::Column { max_gap: g, .. } => *g,
        };
        if ticks(gap) && ticks(self.grace) && self.retention.is_none_or(ticks) {
            self.resolve_ticks(TimeUnit::Millisecond)?;
        }
        Ok(())
    }

    /// The parameters in ticks of `unit`; checks retention against its minimum.
    pub fn resolve(&self, unit: TimeUnit) -> Result<Resolved> {
        self.validate()?;
        self.resolve_ticks(unit)
    }

    fn resolve_ticks(&self, unit: TimeUnit) -> Result<Resolved> {
        let (fixed_gap, max_gap) = match &self.gap {
            GapSpec::Fixed(g) => {
                let g = g.to_ticks(unit, "gap")?;
                (Some(g), g)
            }
            GapSpec::Column { max_gap, .. } => (None, max_gap.to_ticks(unit, "max_gap")?),
        };
        let grace = self.grace.to_ticks(unit, "grace")?;
        let minimum = max_gap.checked_add(grace).ok_or_else(|| {
            Error::invalid("grace", "gap + grace overflows 64-bit ticks".to_string())
        })?;
        let retention = match self.retention {
            None => minimum,
            Some(r) => {
                let r = r.to_ticks(unit, "retention")?;
                if r < minimum {
                    return Err(Error::invalid(
                        "retention",
                        format!(
                            "{r} ticks is below the minimum {minimum} (max gap {max_gap} + \
                             grace {grace}); closed sessions must stay findable that long"
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
        let ms = TimeUnit::Millisecond;
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
}
