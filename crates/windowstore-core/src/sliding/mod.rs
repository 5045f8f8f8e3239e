//! Sliding windows (docs/semantics.md section 4, KIP-450): one window per distinct set of records
//! within `time_difference` of each other, both ends inclusive, with grace and emit modes.
//!
//! - [`spec`]: the parameters and their checks;
//! - [`kind`]: sliding windows as a window kind of the streaming processor;
//! - `rule`: KIP-450's two-new-windows rule, what one record does to its key's windows;
//! - [`store`]: the windows of a stream, each key's together in start order (`windows`), its
//!   undo log (`undo`) and the windows not emitted yet, by end (`due`);
//! - `changelog`: the `updates` changelog of a call, coalesced as it is made;
//! - [`complete`]: complete mode, the sliding windows of bounded input (sort by key and time, two
//!   pointers).

mod changelog;
pub mod complete;
mod due;
pub mod kind;
mod rule;
pub mod spec;
pub mod store;
mod undo;
mod windows;

pub use complete::sliding_windows;
pub use kind::{SlidingCounters, SlidingProcessor};
pub use spec::SlidingSpec;
pub use store::SlidingStore;

use crate::input::time::TimeProblem;
use crate::reject::Reason;

/// Why a record cannot be used by a sliding window of difference `d`, if it cannot: a null key,
/// a null or out-of-range time, or a window bound (`t - d`, `t + 1 + d`) beyond 64 bits.
#[inline]
pub(crate) fn check_record(
    null_key: bool,
    time: Option<TimeProblem>,
    t: i64,
    d: i64,
) -> Option<Reason> {
    if null_key {
        return Some(Reason::NullKey);
    }
    match time {
        Some(TimeProblem::Null) => Some(Reason::NullTime),
        Some(TimeProblem::Overflow) => Some(Reason::TimeOverflow),
        None if t.checked_sub(d).is_none()
            || t.checked_add(d).and_then(|e| e.checked_add(1)).is_none() =>
        {
            Some(Reason::TimeOverflow)
        }
        None => None,
    }
}

/// The output columns of sliding windows.
pub(crate) const LAYOUT: crate::output::Layout = crate::output::Layout {
    start: "window_start",
    end: "window_end",
    time: Some("window_time"),
    op: false,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_gives_its_reason() {
        assert_eq!(check_record(true, None, 0, 5), Some(Reason::NullKey));
        assert_eq!(
            check_record(false, Some(TimeProblem::Null), 0, 5),
            Some(Reason::NullTime)
        );
        assert_eq!(
            check_record(false, None, i64::MAX - 5, 5),
            Some(Reason::TimeOverflow)
        );
        assert_eq!(
            check_record(false, None, i64::MIN + 4, 5),
            Some(Reason::TimeOverflow)
        );
        assert_eq!(check_record(false, None, i64::MAX - 6, 5), None);
        assert_eq!(check_record(false, None, i64::MIN + 5, 5), None);
    }
}
