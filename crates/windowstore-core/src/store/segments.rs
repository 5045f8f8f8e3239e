//! The ordered segments of a store: segment ids, get-or-create-if-live, and expiry.
//!
//! A session lives in segment `floor(end / interval)`. Segments are kept in id order, so the
//! sessions of one key read segment after segment come out ordered by end; expiry drops whole
//! segments from the front.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::segment::Segment;

/// Segments indexed by id, each holding the sessions whose end falls in its interval.
///
/// New segments are made from the memory of expired ones: in a stream the store drops its
/// oldest segment about as often as it starts a new one, of about the same size, and filling a
/// new segment from nothing grew its map and arena again and again (copies, and fresh pages
/// from the kernel).
#[derive(Debug)]
pub struct Segments {
    interval: i64,
    map: BTreeMap<i64, Segment>,
    /// An expired segment, emptied, for the next new one ([`Self::recycle`]).
    spare: Option<Segment>,
}

impl Segments {
    /// Empty segments of `interval` ticks (`interval > 0`, checked by the store).
    pub fn new(interval: i64) -> Self {
        debug_assert!(interval > 0);
        Self {
            interval,
            map: BTreeMap::new(),
            spare: None,
        }
    }

    /// The segment interval in ticks.
    pub fn interval(&self) -> i64 {
        self.interval
    }

    /// `floor(end / interval)`, for any `end` in the i64 range.
    #[inline]
    pub fn segment_id(&self, end: i64) -> i64 {
        end.div_euclid(self.interval)
    }

    /// The segment for `end`, created if missing. The caller has checked that `end` is live.
    ///
    /// A new segment is the spare one if there is one; else, past the newest segment, one with
    /// the newest segment's room (the next time bucket of a stream holds about as much).
    #[inline]
    pub fn get_or_create(&mut self, end: i64) -> &mut Segment {
        let id = self.segment_id(end);
        if !self.map.contains_key(&id) {
            let new = match (self.spare.take(), self.map.last_key_value()) {
                (Some(spare), _) => spare,
                (None, Some((&newest, like))) if newest < id => Segment::sized_like(like),
                (None, _) => Segment::default(),
            };
            self.map.insert(id, new);
        }
        self.map.get_mut(&id).expect("inserted above")
    }

    /// Keeps an expired `segment`'s memory for the next new one (the larger of it and the
    /// spare already kept). The store has read and released what it stored there.
    pub fn recycle(&mut self, mut segment: Segment) {
        if self
            .spare
            .as_ref()
            .is_some_and(|spare| spare.heap_bytes() >= segment.heap_bytes())
        {
            return;
        }
        segment.clear();
        self.spare = Some(segment);
    }

    /// Heap bytes of the spare segment.
    pub fn spare_heap_bytes(&self) -> usize {
        self.spare.as_ref().map_or(0, Segment::heap_bytes)
    }

    /// The segment for `end`, if it exists.
    #[inline]
    pub fn get_mut(&mut self, end: i64) -> Option<&mut Segment> {
        let id = self.segment_id(end);
        self.map.get_mut(&id)
    }

    /// The segment for `end`, if it exists.
    #[inline]
    pub fn get(&self, end: i64) -> Option<&Segment> {
        self.map.get(&self.segment_id(end))
    }

    /// The segments that can hold a session with `earliest_end <= end <= latest_end`, in order.
    pub fn search(
        &self,
        earliest_end: i64,
        latest_end: i64,
    ) -> impl DoubleEndedIterator<Item = &Segment> + '_ {
        let range = self.ids(earliest_end, latest_end);
        self.map.range(range).map(|(_, s)| s)
    }

    /// [`Self::search`] with the segments mutable.
    pub fn search_mut(
        &mut self,
        earliest_end: i64,
        latest_end: i64,
    ) -> impl Iterator<Item = &mut Segment> + '_ {
        let range = self.ids(earliest_end, latest_end);
        self.map.range_mut(range).map(|(_, s)| s)
    }

    /// The ids of the segments that may hold ends in `[earliest_end, latest_end]`.
    fn ids(&self, earliest_end: i64, latest_end: i64) -> (Bound<i64>, Bound<i64>) {
        if earliest_end > latest_end {
            // An empty range: BTreeMap::range panics on inverted bounds.
            (Bound::Included(0), Bound::Excluded(0))
        } else {
            (
                Bound::Included(self.segment_id(earliest_end)),
                Bound::Included(self.segment_id(latest_end)),
            )
        }
    }

    /// Removes every segment whose interval lies wholly before `min_live_end` and returns
    /// them, oldest first.
    pub fn expire(&mut self, min_live_end: i64) -> Vec<Segment> {
        let first_live = self.segment_id(min_live_end);
        match self.map.first_key_value() {
            Some((&first, _)) if first < first_live => {}
            _ => return Vec::new(),
        }
        let live = self.map.split_off(&first_live);
        std::mem::replace(&mut self.map, live)
            .into_values()
            .collect()
    }

    /// Drops the segment for `end` if it holds no session any more.
    pub fn drop_if_empty(&mut self, end: i64) {
        let id = self.segment_id(end);
        if self.map.get(&id).is_some_and(Segment::is_empty) {
            self.map.remove(&id);
        }
    }

    /// All segments, in id order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (i64, &Segment)> + '_ {
        self.map.iter().map(|(&id, s)| (id, s))
    }

    /// Number of segments.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there is no segment.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_ids_floor_divide() {
        let s = Segments::new(1000);
        assert_eq!(s.segment_id(0), 0);
        assert_eq!(s.segment_id(500), 0);
        assert_eq!(s.segment_id(1000), 1);
        assert_eq!(s.segment_id(2000), 2);
        assert_eq!(s.segment_id(-1), -1);
        assert_eq!(s.segment_id(-1000), -1);
        assert_eq!(s.segment_id(-1001), -2);
        assert_eq!(s.segment_id(i64::MIN), i64::MIN / 1000 - 1);
        assert_eq!(s.segment_id(i64::MAX), i64::MAX / 1000);
    }

    #[test]
    fn inverted_search_is_empty() {
        let mut s = Segments::new(10);
        s.get_or_create(5).put(0, 5, 5, b"v").unwrap();
        assert_eq!(s.search(20, 3).count(), 0);
        assert_eq!(s.search(i64::MAX, i64::MIN).count(), 0);
        assert_eq!(s.search(0, 9).count(), 1);
    }

    #[test]
    fn expire_drops_whole_segments_before_the_live_one() {
        let mut s = Segments::new(10);
        for end in [0, 15, 25, 35] {
            s.get_or_create(end).put(0, end, end, b"v").unwrap();
        }
        // Segment 1 covers ends 10..=19, all before 24; segment 2 (20..=29) is still partly live.
        assert_eq!(s.expire(24).len(), 2);
        assert_eq!(s.len(), 2);
        assert_eq!(s.expire(24).len(), 0);
        assert_eq!(s.expire(30).len(), 1);
        assert_eq!(s.iter().map(|(id, _)| id).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn an_expired_segment_becomes_the_next_new_one_empty() {
        let mut s = Segments::new(10);
        for key in 0..100 {
            s.get_or_create(5).put(key, 0, 5, &[7; 40]).unwrap();
        }
        let room = s.get(5).unwrap().heap_bytes();
        for old in s.expire(10) {
            s.recycle(old);
        }
        assert_eq!(s.len(), 0);
        assert_eq!(s.spare_heap_bytes(), room, "the spare keeps the memory");
        // The next new segment is the spare: its memory, none of its sessions.
        let new = s.get_or_create(25);
        assert!(new.is_empty());
        assert_eq!(new.iter().count(), 0);
        assert_eq!(new.value_bytes(), 0);
        assert!(new.put(3, 20, 25, b"v").unwrap());
        assert_eq!(new.len(), 1);
        assert_eq!(new.sessions_of(3).len(), 1);
        assert_eq!(new.sessions_of(0).len(), 0);
        assert_eq!(s.spare_heap_bytes(), 0);
        // Without a spare, a segment past the newest has the newest one's room.
        s.get_or_create(35).put(3, 30, 35, b"w").unwrap();
        assert!(s.get(35).unwrap().heap_bytes() > 0);
    }
}
