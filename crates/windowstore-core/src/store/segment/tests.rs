//! Unit tests of one segment: puts, removes, rewrites, their journaling and arena accounting.

use super::*;

#[test]
fn put_overwrite_remove() {
    let mut s = Segment::default();
    assert!(s.put(1, 0, 10, b"abc").unwrap());
    assert!(s.put(1, 5, 10, b"x").unwrap());
    assert!(s.put(1, 0, 3, b"y").unwrap());
    let ends: Vec<(i64, i64)> = s.sessions_of(1).iter().map(|e| (e.end, e.start)).collect();
    assert_eq!(ends, vec![(3, 0), (10, 0), (10, 5)]);
    assert!(!s.put(1, 0, 10, b"xyz").unwrap(), "same-size overwrite");
    assert!(!s.put(1, 0, 10, b"longer").unwrap(), "resized overwrite");
    let e = s.sessions_of(1)[1];
    assert_eq!(s.value(&e), b"longer");
    assert_eq!(s.len(), 3);
    assert!(s.remove(1, 0, 10));
    assert!(!s.remove(1, 0, 10));
    assert!(!s.remove(2, 0, 10));
    assert_eq!(s.len(), 2);
    assert_eq!(s.value_bytes(), 2);
}

#[test]
fn resizing_overwrites_alone_do_not_grow_garbage_without_bound() {
    let mut s = Segment::default();
    for i in 0..10_000usize {
        s.put(0, 0, 10, &vec![1u8; 1 + i % 50]).unwrap();
    }
    assert!(
        s.arena.len() < 2 * MIN_COMPACTION_BYTES + 100,
        "{}",
        s.arena.len()
    );
    assert_eq!(
        s.value(&s.sessions_of(0)[0]),
        &vec![1u8; 1 + 9_999 % 50][..]
    );
}

/// Rewrites `key`'s sessions under a journal (adding 1 to each byte); returns the windows
/// journaled.
fn rewrite_all(s: &mut Segment, key: KeyId) -> Vec<(i64, i64)> {
    let mut journaled = Vec::new();
    let journal = Some(|start, end, _: &[u8]| journaled.push((start, end)));
    let mut out = Vec::new();
    s.rewrite(
        key,
        SessionBounds::find(i64::MIN, i64::MAX),
        journal,
        &mut out,
        |_, _, old, out| {
            out.extend(old.iter().map(|b| b.wrapping_add(1)));
            Ok(())
        },
        &mut Rewritten::default(),
    )
    .unwrap();
    journaled
}

#[test]
fn every_rewrite_journals_the_old_values_of_the_sessions_it_rewrites() {
    let mut s = Segment::default();
    s.put(1, 0, 10, b"a").unwrap();
    s.put(1, 12, 20, b"c").unwrap();
    s.put(2, 0, 10, b"b").unwrap();
    assert_eq!(rewrite_all(&mut s, 1), vec![(0, 10), (12, 20)]);
    assert_eq!(rewrite_all(&mut s, 1), vec![(0, 10), (12, 20)]);
    assert_eq!(s.value(&s.sessions_of(1)[0]), b"c");
    assert_eq!(s.value(&s.sessions_of(2)[0]), b"b");
}

/// What records an old value in [`Segment::rewrite`].
type JournalFn = fn(i64, i64, &[u8]);

/// The segment's accounting against its entries: the sessions counted, and the arena's
/// garbage exactly the bytes no entry addresses.
fn check_accounting(s: &Segment) {
    let entries: Vec<&Entry> = s.by_key.values().flat_map(|l| l.iter()).collect();
    assert!(
        s.by_key.values().all(|l| !l.is_empty()),
        "a key without sessions is dropped"
    );
    assert_eq!(s.sessions, entries.len());
    let mut live = 0;
    for e in entries.iter().filter(|e| e.len != BIG) {
        assert!(e.offset as usize + e.len as usize <= s.arena.len());
        live += e.len as usize;
    }
    assert_eq!(s.arena.len() - s.garbage, live);
}

proptest::proptest! {
    /// Puts (small, resized and large values), removes, rewrites and detaches on a few
    /// keys, against a map of what each session holds: every value reads back, and the
    /// sessions and garbage counted stay right through compactions.
    #[test]
    fn values_and_accounting_survive_any_sequence_of_changes(
        ops in proptest::collection::vec(
            (
                0u8..4,
                0u32..5,
                0i64..12,
                proptest::sample::select(vec![0usize, 1, 8, 43, 200, 300]),
            ),
            1..300,
        ),
    ) {
        let mut s = Segment::default();
        let mut model = std::collections::BTreeMap::new();
        for (n, &(op, key, start, len)) in ops.iter().enumerate() {
            let value = vec![n as u8; len];
            match op {
                0 | 1 => {
                    let new = s.put(key, start, 20, &value).unwrap();
                    proptest::prop_assert_eq!(new, model.insert((key, start), value).is_none());
                }
                2 => {
                    proptest::prop_assert_eq!(
                        s.remove(key, start, 20),
                        model.remove(&(key, start)).is_some()
                    );
                }
                _ => {
                    // Every session of the key rewritten to this value.
                    let mut out = Vec::new();
                    let no_journal: Option<JournalFn> = None;
                    s.rewrite(
                        key,
                        SessionBounds::find(i64::MIN, i64::MAX),
                        no_journal,
                        &mut out,
                        |_, _, _, out| {
                            out.extend_from_slice(&value);
                            Ok(())
                        },
                        &mut Rewritten::default(),
                    )
                    .unwrap();
                    for ((k, _), v) in model.iter_mut() {
                        if *k == key {
                            v.clone_from(&value);
                        }
                    }
                }
            }
            check_accounting(&s);
        }
        proptest::prop_assert_eq!(s.len(), model.len());
        for (&(key, start), want) in &model {
            let e = s.sessions_of(key).iter().find(|e| e.start == start).copied();
            proptest::prop_assert_eq!(e.map(|e| s.value(&e)), Some(&want[..]));
        }
        for (&(key, start), want) in &model {
            let detached = s.detach(key, start, 20);
            proptest::prop_assert_eq!(detached.as_ref(), Some(want));
            check_accounting(&s);
        }
        proptest::prop_assert!(s.is_empty());
        proptest::prop_assert_eq!(s.value_bytes(), 0);
    }
}

#[test]
fn compaction_keeps_values() {
    let mut s = Segment::default();
    let big = vec![7u8; 1000];
    for i in 0..100 {
        s.put(i % 3, i as i64, 1000, &big).unwrap();
    }
    for i in 0..90 {
        assert!(s.remove(i % 3, i as i64, 1000));
    }
    assert!(s.arena.len() < 100 * 1000, "garbage was compacted");
    for (_, e) in s.iter() {
        assert_eq!(s.value(e), &big[..]);
    }
    assert_eq!(s.iter().count(), 10);
}
