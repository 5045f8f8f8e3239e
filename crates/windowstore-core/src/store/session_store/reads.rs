//! Reads of the store: lookups by key and by end, ordered scans, and reads ahead that warm
//! the cache for a batch of lookups.

use super::{value_in, Reads, SessionStore, READ_AHEAD_MIN_SESSIONS};
use crate::store::key_schema::{KeyedSession, Session, SessionBounds};
use crate::store::key_table::KeyId;
use crate::store::segment::{Entry, Segment};

impl SessionStore {
    /// The value of exactly the session `[start, end]` of `key`, if it is stored and live.
    pub fn fetch_session(&self, key: &[u8], start: i64, end: i64) -> Option<&[u8]> {
        if end < self.min_live_end() {
            return None;
        }
        value_in(&self.segments, self.keys.get(key)?, start, end)
    }

    /// Every live session of `key` with `end >= earliest_end` and `start <= latest_start`,
    /// ordered by end, then start. `.rev()` gives Kafka's `backwardFindSessions` order.
    #[inline]
    pub fn find_sessions(
        &self,
        key: &[u8],
        earliest_end: i64,
        latest_start: i64,
    ) -> impl DoubleEndedIterator<Item = Session<'_>> + '_ {
        self.keys
            .get(key)
            .into_iter()
            .flat_map(move |id| self.find_sessions_of(id, earliest_end, latest_start))
    }

    /// [`Self::find_sessions`] of the key the store holds under `id` ([`Self::key_id`]).
    pub(crate) fn find_sessions_of(
        &self,
        id: KeyId,
        earliest_end: i64,
        latest_start: i64,
    ) -> impl DoubleEndedIterator<Item = Session<'_>> + '_ {
        let bounds = SessionBounds::find(earliest_end, latest_start).live_from(self.min_live_end());
        self.scan_key(id, bounds)
    }

    /// Whether the store is large enough to read ahead ([`Self::warm`]): at least
    /// [`READ_AHEAD_MIN_SESSIONS`] sessions, about 100 MB, several times the cache: a smaller
    /// store stays mostly in the cache, where reading ahead costs more than it saves.
    pub(crate) fn reads_ahead(&self) -> bool {
        self.sessions >= READ_AHEAD_MIN_SESSIONS
    }

    /// Reads, for each lookup of `lookups`, the memory that [`Self::find_sessions`] with its
    /// bounds would read and its caller would use (see [`Reads`]), and returns a number made of
    /// it that means nothing: the caller hands it to [`std::hint::black_box`]. The point is the
    /// reads themselves, which bring that memory into the cache before the lookups proper.
    ///
    /// A lookup in a large store is a chain of cache misses (the key table, then each
    /// segment's hash table, then the session list, then the values), and a chain waits for
    /// each miss in turn. Here the reads go in stages, each stage over every lookup before the
    /// next stage, so that the misses of different keys, independent of one another, overlap.
    pub(crate) fn warm(&self, lookups: &[(&[u8], Reads)]) -> u64 {
        let live = self.min_live_end();
        let ids: Vec<Option<KeyId>> = lookups.iter().map(|l| self.keys.get(l.0)).collect();
        let mut lists: Vec<(&Segment, &[Entry], SessionBounds, i64)> =
            Vec::with_capacity(lookups.len() * 2);
        for (&(_, reads), id) in lookups.iter().zip(&ids) {
            let Some(id) = *id else { continue };
            let bounds =
                SessionBounds::find(reads.earliest_end, reads.latest_start).live_from(live);
            let latest_end = bounds.latest_end.min(self.keys.max_end(id));
            for segment in self.segments.search(bounds.earliest_end, latest_end) {
                lists.push((segment, segment.sessions_of(id), bounds, reads.values_from));
            }
        }
        // The lists first, a read of each end of each (a list spans a few cache lines), so
        // that the values' addresses are at hand when the next stage reads them.
        let mut sum = 0u64;
        for (_, list, _, _) in &lists {
            if let (Some(first), Some(last)) = (list.first(), list.last()) {
                sum = sum.wrapping_add((first.end ^ last.end) as u64);
            }
        }
        for (segment, list, bounds, values_from) in lists {
            let mut found = list.iter().filter(|e| bounds.contains(e.start, e.end));
            let mut before = None;
            for e in found.by_ref() {
                if e.end >= values_from {
                    sum = sum.wrapping_add(first_byte(segment.value(e)).into());
                    break;
                }
                before = Some(e);
            }
            for e in before.into_iter().chain(found) {
                sum = sum.wrapping_add(first_byte(segment.value(e)).into());
            }
        }
        sum
    }

    /// [`Self::find_sessions`] in reverse order: by end, then start, descending.
    pub fn backward_find_sessions(
        &self,
        key: &[u8],
        earliest_end: i64,
        latest_start: i64,
    ) -> impl Iterator<Item = Session<'_>> + '_ {
        self.find_sessions(key, earliest_end, latest_start).rev()
    }

    /// Every live session of `key`, ordered by end, then start.
    pub fn fetch(&self, key: &[u8]) -> impl DoubleEndedIterator<Item = Session<'_>> + '_ {
        self.find_sessions(key, i64::MIN, i64::MAX)
    }

    /// Every live session of the keys in `[key_from, key_to]` (byte order, both inclusive),
    /// ordered by key, then end, then start. An inverted range is empty.
    pub fn fetch_range(&self, key_from: &[u8], key_to: &[u8]) -> Vec<KeyedSession<'_>> {
        if key_from > key_to {
            return Vec::new();
        }
        let bounds = SessionBounds::find(i64::MIN, i64::MAX).live_from(self.min_live_end());
        self.sessions_of_keys(self.keys.range(key_from, key_to), bounds)
    }

    /// Every live session of every key with `earliest_end <= end <= latest_end`, ordered by
    /// end, then start, then key. Reads only the segments that can hold such an end.
    pub fn find_sessions_by_end(
        &self,
        earliest_end: i64,
        latest_end: i64,
    ) -> Vec<KeyedSession<'_>> {
        let bounds = SessionBounds::by_end(earliest_end, latest_end).live_from(self.min_live_end());
        self.scan_by_end(bounds)
    }

    /// Like [`Self::find_sessions_by_end`], but also returns sessions that are expired and not
    /// dropped yet. An engine uses it to emit closed sessions that expiry has made invisible.
    pub fn stored_sessions_by_end(
        &self,
        earliest_end: i64,
        latest_end: i64,
    ) -> Vec<KeyedSession<'_>> {
        self.scan_by_end(SessionBounds::by_end(earliest_end, latest_end))
    }

    /// The smallest end at or after `earliest_end` of any stored session, expired ones not
    /// dropped yet included (what [`Self::stored_sessions_by_end`] would return first). Segments
    /// are ordered by end, so only the segments up to the first that holds such an end are
    /// read, and nothing is collected or sorted.
    pub fn earliest_stored_end(&self, earliest_end: i64) -> Option<i64> {
        self.segments
            .search(earliest_end, i64::MAX)
            .find_map(|segment| segment.earliest_end_from(earliest_end))
    }

    /// Whether a put of a session ending at `end` would drop segments (and what they hold).
    pub fn put_would_drop_segments(&self, end: i64) -> bool {
        if self.store_time.is_some_and(|t| t >= end) {
            return false;
        }
        let min_live_end = end.saturating_sub(self.retention - 1);
        self.segments
            .iter()
            .next()
            .is_some_and(|(first, _)| first < self.segments.segment_id(min_live_end))
    }

    fn scan_by_end(&self, bounds: SessionBounds) -> Vec<KeyedSession<'_>> {
        // Room for every session of the segments read, at most: growing the vector as it
        // fills copied it over and over (a call's closing windows number in the 100,000s).
        let most: usize = self
            .segments
            .search(bounds.earliest_end, bounds.latest_end)
            .map(Segment::len)
            .sum();
        if !self.reads_ahead() {
            let mut found: Vec<KeyedSession<'_>> = Vec::with_capacity(most);
            for segment in self.segments.search(bounds.earliest_end, bounds.latest_end) {
                for (id, e) in segment.iter_by_end(bounds.earliest_end, bounds.latest_end) {
                    if bounds.contains(e.start, e.end) {
                        found.push(self.keyed(id, e, segment));
                    }
                }
            }
            sort_by_end(&mut found);
            return found;
        }
        let mut hits: Vec<(KeyId, &Entry, &Segment)> = Vec::with_capacity(most);
        for segment in self.segments.search(bounds.earliest_end, bounds.latest_end) {
            for (id, e) in segment.iter_by_end_ahead(bounds.earliest_end, bounds.latest_end) {
                if bounds.contains(e.start, e.end) {
                    hits.push((id, e, segment));
                }
            }
        }
        // Each hit's key bytes and value, read first in a pass of independent reads (see
        // `Self::warm`): the caller copies both, and their cache misses then overlap.
        let touched = hits.iter().fold(0u64, |sum, &(id, e, segment)| {
            sum ^ u64::from(first_byte(self.keys.bytes(id)) ^ first_byte(segment.value(e)))
        });
        std::hint::black_box(touched);
        let mut found: Vec<KeyedSession<'_>> = hits
            .into_iter()
            .map(|(id, e, segment)| self.keyed(id, e, segment))
            .collect();
        sort_by_end(&mut found);
        found
    }

    /// Every live session, ordered by key, then end, then start (what a snapshot holds).
    ///
    /// One pass over the segments and one sort of the sessions by (key rank, end, start),
    /// integers all: a lookup per key and segment cost several times more (a snapshot of a
    /// large store reads every session).
    pub fn entries(&self) -> Vec<KeyedSession<'_>> {
        let ranks = self.keys.ranks();
        let live = self.min_live_end();
        let mut found: Vec<(u32, KeyId, &Entry, &Segment)> =
            Vec::with_capacity(self.sessions as usize);
        for (_, segment) in self.segments.iter() {
            found.extend(
                segment
                    .iter()
                    .filter(|(_, e)| e.end >= live)
                    .map(|(id, e)| (ranks[id as usize], id, e, segment)),
            );
        }
        found.sort_unstable_by_key(|&(rank, _, e, _)| (rank, e.end, e.start));
        found
            .into_iter()
            .map(|(_, id, e, segment)| self.keyed(id, e, segment))
            .collect()
    }

    /// Entry `e` of key `id` in `segment`, with its key bytes and value.
    fn keyed<'s>(&'s self, id: KeyId, e: &Entry, segment: &'s Segment) -> KeyedSession<'s> {
        KeyedSession {
            key: self.keys.bytes(id),
            session: Session {
                start: e.start,
                end: e.end,
                value: segment.value(e),
            },
        }
    }

    /// Every live session, in no particular order: [`Self::entries`] without its two sorts,
    /// for a reader that visits each session once whatever the order (the checks of a
    /// restore).
    pub fn entries_unordered(&self) -> Vec<KeyedSession<'_>> {
        let live = self.min_live_end();
        let mut found = Vec::with_capacity(self.sessions as usize);
        for (_, segment) in self.segments.iter() {
            found.extend(
                segment
                    .iter()
                    .filter(|(_, e)| e.end >= live)
                    .map(|(id, e)| self.keyed(id, e, segment)),
            );
        }
        found
    }

    /// The stored sessions (live, or expired and not dropped yet: what [`Self::stored_sessions_by_end`]
    /// reads) whose end is at least `earliest_end`, of the keys in `[from, to]` (byte order,
    /// both inclusive; `None`: every key), in no particular order. One key costs a hash probe
    /// per segment; a range of keys visits every key (the key table is hashed).
    pub fn stored_sessions(
        &self,
        keys: Option<(&[u8], &[u8])>,
        earliest_end: i64,
    ) -> Vec<KeyedSession<'_>> {
        let bounds = SessionBounds::by_end(earliest_end, i64::MAX);
        let ids = match keys {
            None => return self.scan_by_end(bounds),
            Some((from, to)) if from == to => self.keys.get(from).into_iter().collect(),
            Some((from, to)) => self.keys.range(from, to),
        };
        self.sessions_of_keys(ids, bounds)
    }

    /// The sessions within `bounds` of the keys `ids`, in the order of `ids`, then end, then
    /// start.
    fn sessions_of_keys(&self, ids: Vec<KeyId>, bounds: SessionBounds) -> Vec<KeyedSession<'_>> {
        ids.into_iter()
            .flat_map(|id| {
                let key = self.keys.bytes(id);
                self.scan_key(id, bounds)
                    .map(move |session| KeyedSession { key, session })
            })
            .collect()
    }

    /// The sessions of key `id` within `bounds`, ordered by end, then start.
    fn scan_key(
        &self,
        id: KeyId,
        bounds: SessionBounds,
    ) -> impl DoubleEndedIterator<Item = Session<'_>> + '_ {
        // Segments past the key's largest end hold none of its sessions: skipping them spares
        // a hash probe per segment, and all of them when the key has nothing late enough.
        let latest_end = bounds.latest_end.min(self.keys.max_end(id));
        self.segments
            .search(bounds.earliest_end, latest_end)
            .flat_map(move |segment| {
                segment
                    .sessions_of(id)
                    .iter()
                    .filter(move |e| bounds.contains(e.start, e.end))
                    .map(move |e| Session {
                        start: e.start,
                        end: e.end,
                        value: segment.value(e),
                    })
            })
    }
}

/// Sorts `sessions` by (end, start, key): by the two integers first, then the key bytes only
/// within a run of equal windows (rare: sessions of different keys seldom share both ends), so
/// that the sort's comparisons are of integers, with no call to compare bytes.
fn sort_by_end(sessions: &mut [KeyedSession<'_>]) {
    let window = |s: &KeyedSession<'_>| (s.session.end, s.session.start);
    sessions.sort_unstable_by_key(window);
    let mut from = 0;
    while from < sessions.len() {
        let w = window(&sessions[from]);
        let to = from
            + sessions[from..]
                .iter()
                .take_while(|s| window(s) == w)
                .count();
        if to - from > 1 {
            sessions[from..to].sort_unstable_by_key(|s| s.key);
        }
        from = to;
    }
}

/// The first byte of `bytes` (0 if empty): a read that brings them into the cache.
fn first_byte(bytes: &[u8]) -> u8 {
    bytes.first().copied().unwrap_or(0)
}
