//! Rewriting the values of a key's sessions in one pass: what a put of each does, without a
//! lookup of the key, the segment and the session per put, each old value journaled (see
//! [`Segment::rewrite`]).
//!
//! [`Segment::rewrite`]: super::super::segment::Segment::rewrite

use super::SessionStore;
use crate::store::key_schema::SessionBounds;
use crate::store::segment::Rewritten;
use crate::Result;

impl SessionStore {
    /// Replaces the value of every live session of `key` that
    /// [`find_sessions(key, earliest_end, latest_start)`](Self::find_sessions) returns, in that
    /// order: `f` gets the session's start, end and value and writes the new value into `out`
    /// (emptied first). Counted and journaled as a put of each; no session is added or
    /// removed, and store time does not move (every stored end is at or below it). Returns the
    /// number of sessions rewritten. An error from `f` stops there; an open transaction's
    /// rollback undoes what was rewritten.
    pub fn rewrite_sessions(
        &mut self,
        key: &[u8],
        earliest_end: i64,
        latest_start: i64,
        out: &mut Vec<u8>,
        mut f: impl FnMut(i64, i64, &[u8], &mut Vec<u8>) -> Result<()>,
    ) -> Result<u64> {
        let bounds = SessionBounds::find(earliest_end, latest_start).live_from(self.min_live_end());
        let Some(id) = self.keys.get(key) else {
            return Ok(0);
        };
        let latest_end = bounds.latest_end.min(self.keys.max_end(id));
        let mut done = Rewritten::default();
        let mut result = Ok(());
        for segment in self.segments.search_mut(bounds.earliest_end, latest_end) {
            let journal = self
                .journal
                .as_deref_mut()
                .map(|j| move |start, end, old: &[u8]| j.replaced(key, start, end, old));
            result = segment.rewrite(id, bounds, journal, out, &mut f, &mut done);
            if result.is_err() {
                break;
            }
        }
        self.counters.puts += done.sessions;
        self.bytes_written += done.bytes;
        result.map(|()| done.sessions)
    }
}
