//! The rule that cuts a key's records, taken in (time, arrival) order, into sessions: the gap,
//! the marker columns and the maximum duration (docs/semantics.md section 2). Complete mode and
//! the re-cutting processor kind (`capped`) both cut with it.
//!
//! Markers belong to a time, not to a record: the records at one time are never separated, so
//! the rule reads a time's *group flags*, the flags of all its records together.

use crate::input::markers::{ENDS, STARTS};

/// The session being cut: its first and last times, its reach and whether the records at its
/// end end it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Open {
    pub start: i64,
    pub end: i64,
    /// `max(t + gap)` of its records.
    pub reach: i64,
    /// A record at `end` ends the session (`ends_session`).
    pub ends: bool,
}

impl Open {
    /// A session begun by the records at `t` (group flags `group`), reaching `reach`.
    pub fn new(t: i64, reach: i64, group: u8) -> Self {
        Self {
            start: t,
            end: t,
            reach,
            ends: group & ENDS != 0,
        }
    }

    /// Whether a record at `t >= end` (group flags `group`) joins: a record at `end` always
    /// does; a later one if the gap rule joins it, no marker separates them and the session
    /// stays within `cap` (`i64::MAX`: no cap).
    #[inline]
    pub fn joins(&self, t: i64, group: u8, cap: i64) -> bool {
        t == self.end || (self.by_gap(t, group) && t <= self.start.saturating_add(cap))
    }

    /// Whether the gap rule joins a record at `t > end` and no marker separates them: if it
    /// does not join, the cap ended the session (`max_duration_cuts`).
    #[inline]
    pub fn by_gap(&self, t: i64, group: u8) -> bool {
        t <= self.reach && !self.ends && group & STARTS == 0
    }

    /// Adds a record at `t >= end` reaching `reach` (group flags `group`).
    #[inline]
    pub fn add(&mut self, t: i64, reach: i64, group: u8) {
        if t == self.end {
            self.ends |= group & ENDS != 0;
        } else {
            self.ends = group & ENDS != 0;
        }
        self.end = t;
        self.reach = self.reach.max(reach);
    }

    /// The last time a record can join the session: its end if a record there ends it, else
    /// its reach (a start marker after it can lower that further; see [`closing`]).
    pub fn last_join(&self) -> i64 {
        if self.ends {
            self.end
        } else {
            self.reach
        }
    }
}

/// When a session closes: the last time a record can still join it, `last_join`, lowered to
/// just before the next session's start if a start marker begins that session.
pub(crate) fn closing(last_join: i64, next: Option<(i64, u8)>) -> i64 {
    match next {
        Some((start, group)) if group & STARTS != 0 => last_join.min(start - 1),
        _ => last_join,
    }
}

/// The group flags of `n` records in time order, into `out`: record `i`'s flags (`flag(i)`)
/// ORed with those of every record at its time (`time(i)`).
pub(crate) fn group_flags(
    n: usize,
    time: impl Fn(usize) -> i64,
    flag: impl Fn(usize) -> u8,
    out: &mut Vec<u8>,
) {
    out.clear();
    let mut i = 0;
    while i < n {
        let t = time(i);
        let mut group = flag(i);
        let mut j = i + 1;
        while j < n && time(j) == t {
            group |= flag(j);
            j += 1;
        }
        out.extend(std::iter::repeat_n(group, j - i));
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_at_the_end_always_join_and_markers_separate_later_ones() {
        let s = Open::new(0, 10, ENDS);
        assert!(s.joins(0, STARTS, 5));
        assert!(!s.joins(3, 0, i64::MAX));
        let s = Open::new(0, 10, 0);
        assert!(s.joins(10, 0, i64::MAX));
        assert!(!s.joins(11, 0, i64::MAX));
        assert!(!s.joins(4, STARTS, i64::MAX));
        assert!(!s.joins(6, 0, 5) && s.by_gap(6, 0), "the cap ends it");
    }

    #[test]
    fn a_time_groups_its_records_flags() {
        let mut out = Vec::new();
        let (times, flags) = ([1, 1, 2, 3, 3], [0, STARTS, ENDS, 0, 0]);
        group_flags(5, |i| times[i], |i| flags[i], &mut out);
        assert_eq!(out, vec![STARTS, STARTS, ENDS, 0, 0]);
        assert_eq!(closing(20, Some((15, STARTS))), 14);
        assert_eq!(closing(20, Some((15, ENDS))), 20);
    }
}
