//! What a snapshot reads of the store beyond its sessions, and how a restore refills it.

use super::{PutOutcome, SessionStore};
use crate::store::metrics::Counters;
use crate::Result;

impl SessionStore {
    /// Sessions that have expired but are still stored, in a segment not dropped yet because
    /// it also holds live ones. A snapshot leaves them out ([`Self::entries`]) and counts them
    /// as expired, the count the store reaches once their segment goes: so a store restored
    /// from a snapshot and the store it was taken from write the same snapshots from then on.
    pub(crate) fn expired_stored(&self) -> u64 {
        let live = self.min_live_end();
        self.segments
            .search(i64::MIN, live.saturating_sub(1))
            .map(|segment| segment.iter().filter(|(_, e)| e.end < live).count() as u64)
            .sum()
    }

    /// The store's own counters (what a snapshot carries).
    pub(crate) fn counters(&self) -> Counters {
        self.counters
    }

    /// An empty store at `store_time` with `counters`, to be filled by [`Self::restore_session`].
    pub(crate) fn restored(
        retention: i64,
        segment_interval: i64,
        store_time: Option<i64>,
        counters: Counters,
    ) -> Result<Self> {
        let mut store = Self::new(retention, Some(segment_interval))?;
        store.store_time = store_time;
        store.counters = counters;
        Ok(store)
    }

    /// Makes room for what a snapshot's rows will put: `keys` more keys, and per segment (by
    /// a session end in it) its new keys and value bytes, so that no map or arena
    /// grows while the rows go in. Only segments that can hold a restored session (live, at
    /// or before store time) are made: any other row fails the restore.
    pub(crate) fn reserve_restored(&mut self, keys: usize, segments: &[(i64, usize, usize)]) {
        self.keys.reserve(keys);
        let live = self.min_live_end();
        for &(end, keys, bytes) in segments {
            if end >= live && self.store_time.is_some_and(|t| end <= t) {
                self.segments.get_or_create(end).reserve(keys, bytes);
            }
        }
    }

    /// The segment of a session ending at `end`, as an id.
    pub(crate) fn segment_id(&self, end: i64) -> i64 {
        self.segments.segment_id(end)
    }

    /// Puts a session read back from a snapshot: no counter moves, and a session the snapshot
    /// could not have stored (after store time, expired, or twice) is refused with the reason.
    pub(crate) fn restore_session(
        &mut self,
        key: &[u8],
        start: i64,
        end: i64,
        value: &[u8],
    ) -> Result<(), String> {
        if start > end {
            return Err(format!("session [{start}, {end}] starts after it ends"));
        }
        if self.store_time.is_none_or(|t| end > t) {
            return Err(format!(
                "session [{start}, {end}] ends after the store time"
            ));
        }
        if end < self.min_live_end() {
            return Err(format!("session [{start}, {end}] is expired"));
        }
        let counters = self.counters;
        let outcome = self
            .put(key, start, end, value)
            .map_err(|e| e.to_string())?;
        self.counters = counters;
        match outcome {
            PutOutcome::Inserted => Ok(()),
            _ => Err(format!("session [{start}, {end}] appears twice")),
        }
    }
}
