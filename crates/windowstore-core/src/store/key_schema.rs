//! The session key schema: a session is identified by `(key bytes, end, start)`.
//!
//! Sessions of one key are ordered by end, then start, as Kafka's session key schema orders
//! them. A lookup `find_sessions(key, earliest_end, latest_start)` matches every session with
//! `end >= earliest_end` and `start <= latest_start`; because segments are indexed by end, only
//! the segments from `segment_id(earliest_end)` onwards can hold a match.

/// One session of a key, borrowed from the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session<'a> {
    /// Time of the session's first record (inclusive).
    pub start: i64,
    /// Time of the session's last record (inclusive).
    pub end: i64,
    /// The aggregate bytes stored for the session.
    pub value: &'a [u8],
}

/// A session together with its key, as returned by the cross-key scans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyedSession<'a> {
    /// The key bytes.
    pub key: &'a [u8],
    /// The session.
    pub session: Session<'a>,
}

impl KeyedSession<'_> {
    /// The session copied out of the store, to keep after the store changes: (key, start,
    /// end, value).
    pub fn to_owned_parts(&self) -> (Vec<u8>, i64, i64, Vec<u8>) {
        let Session { start, end, value } = self.session;
        (self.key.to_vec(), start, end, value.to_vec())
    }
}

/// The time bounds of a session lookup, after expiry has been applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionBounds {
    /// Smallest session end that matches.
    pub earliest_end: i64,
    /// Largest session end that matches.
    pub latest_end: i64,
    /// Largest session start that matches.
    pub latest_start: i64,
}

impl SessionBounds {
    /// Sessions with `end >= earliest_end` and `start <= latest_start` (any end above).
    pub fn find(earliest_end: i64, latest_start: i64) -> Self {
        Self {
            earliest_end,
            latest_end: i64::MAX,
            latest_start,
        }
    }

    /// Sessions with `earliest_end <= end <= latest_end` (any start).
    pub fn by_end(earliest_end: i64, latest_end: i64) -> Self {
        Self {
            earliest_end,
            latest_end,
            latest_start: i64::MAX,
        }
    }

    /// Whether a session `[start, end]` lies within the bounds.
    #[inline]
    pub fn contains(&self, start: i64, end: i64) -> bool {
        end >= self.earliest_end && end <= self.latest_end && start <= self.latest_start
    }

    /// The bounds with `earliest_end` raised to `min_live_end` (expired sessions are invisible).
    #[inline]
    pub fn live_from(self, min_live_end: i64) -> Self {
        Self {
            earliest_end: self.earliest_end.max(min_live_end),
            ..self
        }
    }

    /// Whether no session can match.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.earliest_end > self.latest_end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_bounds_match_end_and_start() {
        let b = SessionBounds::find(150, 300);
        assert!(b.contains(101, 200));
        assert!(b.contains(201, 300));
        assert!(!b.contains(0, 99));
        assert!(!b.contains(301, 400));
    }

    #[test]
    fn live_from_only_raises_the_lower_end() {
        let b = SessionBounds::by_end(0, 20).live_from(5);
        assert_eq!(b.earliest_end, 5);
        assert_eq!(SessionBounds::by_end(10, 20).live_from(5).earliest_end, 10);
        assert!(SessionBounds::by_end(0, 20).live_from(21).is_empty());
    }
}
