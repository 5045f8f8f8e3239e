//! Every session-store fact of docs/semantics.md section 3, most of them from Kafka's own store tests.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use windowstore_core::store::session_store::PutOutcome;
use windowstore_core::{Error, SessionStore};

fn windows<'a>(it: impl Iterator<Item = windowstore_core::Session<'a>>) -> Vec<(i64, i64)> {
    it.map(|s| (s.start, s.end)).collect()
}

fn store(retention: i64) -> SessionStore {
    SessionStore::new(retention, None).expect("valid parameters")
}

/// A store of retention 10,000 holding `windows` of key `a`.
fn store_of_a(windows: &[(i64, i64)]) -> SessionStore {
    let mut s = store(10_000);
    for &(start, end) in windows {
        s.put(b"a", start, end, b"1").unwrap();
    }
    s
}

/// A store of retention 10,000 holding `sessions`, each `(key, start, end, value)`.
fn store_with(sessions: &[(&str, i64, i64, &str)]) -> SessionStore {
    let mut s = store(10_000);
    for &(key, start, end, value) in sessions {
        s.put(key.as_bytes(), start, end, value.as_bytes()).unwrap();
    }
    s
}

#[test]
fn default_segment_interval_is_half_the_retention_at_least_one() {
    assert_eq!(store(1000).segment_interval(), 500);
    assert_eq!(store(1).segment_interval(), 1);
    assert_eq!(store(3).segment_interval(), 1);
    assert_eq!(
        SessionStore::new(1000, Some(7)).unwrap().segment_interval(),
        7
    );
}

#[test]
fn sessions_go_to_the_segment_of_their_end() {
    let mut s = SessionStore::new(1_000_000, Some(1000)).unwrap();
    for end in [0, 500, 1000, 2000] {
        s.put(b"k", 0, end, b"v").unwrap();
    }
    // ends 0 and 500 share segment 0; 1000 and 2000 have their own.
    assert_eq!(s.metrics().segments, 3);
}

#[test]
fn find_sessions_matches_end_and_start_bounds() {
    let s = store_of_a(&[(0, 99), (101, 200), (201, 300), (301, 400)]);
    assert_eq!(
        windows(s.find_sessions(b"a", 150, 300)),
        vec![(101, 200), (201, 300)]
    );
}

#[test]
fn find_sessions_across_segments() {
    let s = store_of_a(&[(10, 10), (500, 1000), (1500, 2000), (2500, 3000)]);
    assert_eq!(
        windows(s.find_sessions(b"a", 0, 1000)),
        vec![(10, 10), (500, 1000)]
    );
    assert_eq!(windows(s.find_sessions(b"a", 400, 600)), vec![(500, 1000)]);
    assert_eq!(
        windows(s.backward_find_sessions(b"a", 0, 1000)),
        vec![(500, 1000), (10, 10)]
    );
}

#[test]
fn fetch_session_compares_key_bytes_and_window_exactly() {
    let mut s = store_with(&[
        ("aa", 0, 3, "aa03"),
        ("aa", 1, 4, "aa14"),
        ("a", 0, 4, "a04"),
        ("aaa", 0, 4, "aaa04"),
    ]);
    assert_eq!(s.fetch_session(b"aa", 0, 4), None);
    s.put(b"aa", 0, 4, b"aa04").unwrap();
    assert_eq!(s.fetch_session(b"aa", 0, 4), Some(&b"aa04"[..]));
    assert_eq!(s.fetch_session(b"aa", 0, 3), Some(&b"aa03"[..]));
    assert_eq!(s.fetch_session(b"a", 0, 4), Some(&b"a04"[..]));
    assert_eq!(s.fetch_session(b"aaa", 0, 4), Some(&b"aaa04"[..]));
    assert_eq!(s.fetch_session(b"b", 0, 4), None);
}

#[test]
fn time_range_scan_by_end_across_keys() {
    let s = store_with(&[("a", 0, 0, "a"), ("b", 10, 20, "b"), ("c", 30, 40, "c")]);
    let keys = |from, to| -> Vec<Vec<u8>> {
        s.find_sessions_by_end(from, to)
            .iter()
            .map(|k| k.key.to_vec())
            .collect()
    };
    assert_eq!(keys(0, 20), vec![b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(keys(0, 19), vec![b"a".to_vec()]);
    assert_eq!(keys(1, 20), vec![b"b".to_vec()]);
    assert_eq!(keys(19, 41), vec![b"b".to_vec(), b"c".to_vec()]);
    assert!(keys(41, 19).is_empty());
}

#[test]
fn fetch_and_fetch_range_order_by_key_then_end() {
    let s = store_with(&[
        ("b", 5, 6, ""),
        ("a", 7, 9, ""),
        ("a", 1, 2, ""),
        ("c", 0, 0, ""),
    ]);
    assert_eq!(windows(s.fetch(b"a")), vec![(1, 2), (7, 9)]);
    let got: Vec<(Vec<u8>, i64)> = s
        .fetch_range(b"a", b"b")
        .iter()
        .map(|k| (k.key.to_vec(), k.session.start))
        .collect();
    assert_eq!(
        got,
        vec![(b"a".to_vec(), 1), (b"a".to_vec(), 7), (b"b".to_vec(), 5)]
    );
    assert!(
        s.fetch_range(b"c", b"a").is_empty(),
        "an inverted range is empty"
    );
}

#[test]
fn put_overwrites_and_remove_of_missing_is_a_no_op() {
    let mut s = store(100);
    assert_eq!(s.put(b"k", 0, 5, b"x").unwrap(), PutOutcome::Inserted);
    assert_eq!(s.put(b"k", 0, 5, b"yy").unwrap(), PutOutcome::Updated);
    assert_eq!(s.fetch_session(b"k", 0, 5), Some(&b"yy"[..]));
    assert!(!s.remove(b"k", 0, 6));
    assert!(!s.remove(b"nope", 0, 5));
    assert!(s.remove(b"k", 0, 5));
    assert!(!s.remove(b"k", 0, 5));
    assert_eq!(s.fetch(b"k").count(), 0);
    let m = s.metrics();
    assert_eq!(
        (m.live_sessions, m.live_keys, m.puts, m.removes),
        (0, 0, 2, 1)
    );
}

#[test]
fn expired_sessions_are_invisible_and_expired_puts_counted() {
    // retention 100: with store time T, sessions with end < T - 99 are expired.
    let mut s = SessionStore::new(100, Some(10)).unwrap();
    s.put(b"k", 0, 0, b"old").unwrap();
    s.put(b"k", 0, 99, b"edge").unwrap();
    assert_eq!(s.store_time(), Some(99));
    assert_eq!(s.fetch(b"k").count(), 2, "end 0 >= 99 - 99 is still live");
    s.put(b"k", 100, 100, b"new").unwrap();
    assert_eq!(windows(s.fetch(b"k")), vec![(0, 99), (100, 100)]);
    assert_eq!(s.fetch_session(b"k", 0, 0), None);
    assert!(
        !s.remove(b"k", 0, 0),
        "an expired session cannot be removed"
    );
    assert_eq!(s.put(b"k", 0, 0, b"again").unwrap(), PutOutcome::Expired);
    assert_eq!(s.metrics().expired_puts, 1);
    assert_eq!(s.fetch_session(b"k", 0, 0), None);
    // Segment 0 (ends 0..=9) is dropped whole only once its last end, 9, is expired.
    assert_eq!(s.metrics().expired_sessions, 0);
    assert_eq!(s.metrics().live_sessions, 3, "held until its segment goes");
    s.put(b"k", 108, 108, b"").unwrap();
    assert_eq!(
        s.metrics().expired_sessions,
        0,
        "min live end 9: segment 0 still partly live"
    );
    s.put(b"k", 109, 109, b"").unwrap();
    assert_eq!(s.metrics().expired_sessions, 1);
    assert_eq!(s.metrics().segments, 2);
    assert_eq!(
        windows(s.fetch(b"k")),
        vec![(0, 99), (100, 100), (108, 108), (109, 109)]
    );
}

#[test]
fn store_time_only_moves_forward_with_puts() {
    let mut s = store(100);
    assert_eq!(s.store_time(), None);
    s.put(b"k", 0, 50, b"").unwrap();
    s.put(b"k", 0, 10, b"").unwrap();
    assert_eq!(s.store_time(), Some(50));
    s.remove(b"k", 0, 50);
    assert_eq!(s.store_time(), Some(50));
}

#[test]
fn bad_parameters_name_themselves() {
    for (retention, interval, name) in [
        (0, None, "retention"),
        (-5, None, "retention"),
        (10, Some(0), "segment_interval"),
        (10, Some(-1), "segment_interval"),
    ] {
        match SessionStore::new(retention, interval) {
            Err(Error::InvalidWindowSpec { parameter, .. }) => assert_eq!(parameter, name),
            other => panic!("expected InvalidWindowSpec({name}), got {other:?}"),
        }
    }
    let mut s = store(10);
    assert!(matches!(
        s.put(b"k", 5, 4, b""),
        Err(Error::InvalidWindowSpec {
            parameter: "start",
            ..
        })
    ));
}

#[test]
fn extreme_times_do_not_overflow() {
    let mut s = SessionStore::new(i64::MAX, None).unwrap();
    s.put(b"k", i64::MIN, i64::MIN, b"min").unwrap();
    assert_eq!(s.min_live_end(), i64::MIN, "saturates instead of wrapping");
    s.put(b"k", -5, -1, b"neg").unwrap();
    // store time -1: min live end is -1 - (MAX - 1) = MIN + 1, so MIN just expired.
    assert_eq!(windows(s.fetch(b"k")), vec![(-5, -1)]);
    s.put(b"k", i64::MAX, i64::MAX, b"max").unwrap();
    assert_eq!(s.min_live_end(), 1);
    assert_eq!(windows(s.fetch(b"k")), vec![(i64::MAX, i64::MAX)]);
    assert_eq!(s.put(b"k", -5, 0, b"").unwrap(), PutOutcome::Expired);
    let mut s = SessionStore::new(1, None).unwrap();
    s.put(b"k", i64::MIN, i64::MIN, b"").unwrap();
    s.put(b"k", i64::MIN, i64::MIN + 1, b"").unwrap();
    assert_eq!(windows(s.fetch(b"k")), vec![(i64::MIN, i64::MIN + 1)]);
    assert_eq!(windows(s.find_sessions(b"k", i64::MAX, i64::MIN)), vec![]);
    let mut s = SessionStore::new(3, Some(i64::MAX)).unwrap();
    s.put(b"k", -10, -3, b"").unwrap();
    s.put(b"k", 0, i64::MAX, b"").unwrap();
    assert_eq!(windows(s.fetch(b"k")), vec![(0, i64::MAX)]);
}
