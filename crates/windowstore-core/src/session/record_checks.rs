//! The rules that make a record usable (docs/semantics.md sections 1 and 2), shared by the streaming
//! processor and complete mode so that both reject exactly the same records.

use crate::input::time::TimeProblem;
use crate::reject::Reason;

/// A record's gap in ticks and whether it was clamped to `max_gap`, or why it is rejected:
/// a null key, a null or out-of-range time, a null, zero or negative dynamic gap, or a
/// `t + gap` that overflows.
///
/// `fixed_gap` is the fixed gap, if any; otherwise `column_gap` is the record's gap column value
/// (`None` when null or not a whole number of ticks).
#[inline]
pub(crate) fn record_gap(
    null_key: bool,
    time: Option<TimeProblem>,
    t: i64,
    fixed_gap: Option<i64>,
    column_gap: Option<i64>,
    max_gap: i64,
) -> Result<(i64, bool), Reason> {
    if null_key {
        return Err(Reason::NullKey);
    }
    match time {
        Some(TimeProblem::Null) => return Err(Reason::NullTime),
        Some(TimeProblem::Overflow) => return Err(Reason::TimeOverflow),
        None => {}
    }
    let (gap, clamped) = match (fixed_gap, column_gap) {
        (Some(g), _) => (g, false),
        (None, Some(g)) if g > max_gap => (max_gap, true),
        (None, Some(g)) if g > 0 => (g, false),
        (None, _) => return Err(Reason::InvalidGap),
    };
    if t.checked_add(gap).is_none() {
        return Err(Reason::TimeOverflow);
    }
    Ok((gap, clamped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_gives_its_reason() {
        assert_eq!(
            record_gap(true, None, 0, Some(5), None, 5),
            Err(Reason::NullKey)
        );
        let null = Some(TimeProblem::Null);
        assert_eq!(
            record_gap(false, null, 0, Some(5), None, 5),
            Err(Reason::NullTime)
        );
        let big = Some(TimeProblem::Overflow);
        assert_eq!(
            record_gap(false, big, 0, Some(5), None, 5),
            Err(Reason::TimeOverflow)
        );
        assert_eq!(
            record_gap(false, None, 0, None, None, 5),
            Err(Reason::InvalidGap)
        );
        assert_eq!(
            record_gap(false, None, 0, None, Some(0), 5),
            Err(Reason::InvalidGap)
        );
        assert_eq!(
            record_gap(false, None, 0, None, Some(-1), 5),
            Err(Reason::InvalidGap)
        );
        assert_eq!(record_gap(false, None, 0, None, Some(9), 5), Ok((5, true)));
        assert_eq!(record_gap(false, None, 0, None, Some(3), 5), Ok((3, false)));
        assert_eq!(
            record_gap(false, None, i64::MAX, Some(1), None, 1),
            Err(Reason::TimeOverflow)
        );
        assert_eq!(
            record_gap(false, None, 7, Some(5), Some(-3), 5),
            Ok((5, false))
        );
    }
}
