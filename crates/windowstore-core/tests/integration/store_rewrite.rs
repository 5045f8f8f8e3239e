//! `SessionStore::rewrite_sessions` against a put of each session it rewrites, inside and
//! outside transactions that commit or roll back, mixed with puts, removes and in-place edits
//! (`amend`) of the same sessions: both stores must snapshot to the same bytes after every
//! operation, so a rolled-back rewrite leaves the bytes of before the transaction.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use windowstore_core::store::edits::Edits;
use windowstore_core::store::snapshot_format;
use windowstore_core::SessionStore;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, i64, i64, Vec<u8>),
    Remove(u8, i64, i64),
    /// Every byte plus `.3`, then `.4` bytes more: a length change, or a large value.
    Rewrite(u8, i64, i64, u8, usize),
    /// Splices `.4` over the first byte and moves the session to start `.3`.
    Amend(u8, i64, i64, i64, Vec<u8>),
    Begin,
    Commit,
    Rollback,
}

const KEYS: [&[u8]; 3] = [b"a", b"bb", b""];

fn time() -> impl Strategy<Value = i64> {
    0i64..120
}

fn op() -> impl Strategy<Value = Op> {
    let value = prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..8),
        1 => proptest::collection::vec(any::<u8>(), 250..300),
    ];
    let k = 0u8..3;
    prop_oneof![
        6 => (k.clone(), time(), time(), value).prop_map(|(k, a, b, v)| Op::Put(k, a.min(b), a.max(b), v)),
        2 => (k.clone(), time(), time()).prop_map(|(k, a, b)| Op::Remove(k, a.min(b), a.max(b))),
        6 => (k.clone(), time(), time(), any::<u8>(), prop_oneof![4 => Just(0usize), 1 => 1usize..3, 1 => Just(260usize)])
            .prop_map(|(k, e, s, add, grow)| Op::Rewrite(k, e, s, add, grow)),
        2 => (k, time(), time(), time(), proptest::collection::vec(any::<u8>(), 0..3))
            .prop_map(|(k, a, b, to, bytes)| Op::Amend(k, a.min(b), a.max(b), to.min(a.max(b)), bytes)),
        1 => Just(Op::Begin),
        1 => Just(Op::Commit),
        1 => Just(Op::Rollback),
    ]
}

/// A store's retention and segment interval (None: the default).
fn retention_and_interval() -> impl Strategy<Value = (i64, Option<i64>)> {
    (1i64..150, proptest::option::of(1i64..60))
}

/// A sequence of `len` ops.
fn ops(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), len)
}

fn rewritten(old: &[u8], add: u8, grow: usize, out: &mut Vec<u8>) {
    out.extend(old.iter().map(|b| b.wrapping_add(add)));
    out.extend(std::iter::repeat_n(add, grow));
}

fn bytes(store: &SessionStore) -> Vec<u8> {
    snapshot_format::encode(store, &Default::default()).unwrap()
}

fn check(retention: i64, interval: Option<i64>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut fast = SessionStore::new(retention, interval).unwrap();
    let mut slow = SessionStore::new(retention, interval).unwrap();
    let (mut out, mut edits) = (Vec::new(), Edits::default());
    for op in ops {
        match op {
            Op::Put(k, s, e, v) => {
                let k = KEYS[k as usize];
                prop_assert_eq!(
                    fast.put(k, s, e, &v).unwrap(),
                    slow.put(k, s, e, &v).unwrap()
                );
            }
            Op::Remove(k, s, e) => {
                let k = KEYS[k as usize];
                prop_assert_eq!(fast.remove(k, s, e), slow.remove(k, s, e));
            }
            Op::Rewrite(k, earliest_end, latest_start, add, grow) => {
                let k = KEYS[k as usize];
                let n = fast
                    .rewrite_sessions(k, earliest_end, latest_start, &mut out, |_, _, old, out| {
                        rewritten(old, add, grow, out);
                        Ok(())
                    })
                    .unwrap();
                let found: Vec<(i64, i64, Vec<u8>)> = slow
                    .find_sessions(k, earliest_end, latest_start)
                    .map(|s| (s.start, s.end, s.value.to_vec()))
                    .collect();
                prop_assert_eq!(n as usize, found.len());
                for (s, e, old) in found {
                    out.clear();
                    rewritten(&old, add, grow, &mut out);
                    slow.put(k, s, e, &out).unwrap();
                }
            }
            Op::Amend(k, s, e, to, bytes) => {
                let k = KEYS[k as usize];
                edits.clear();
                edits.push(0, 1, &bytes);
                let a = fast.amend(k, (s, e), (to, e), &edits).unwrap();
                let b = slow.amend(k, (s, e), (to, e), &edits).unwrap();
                prop_assert_eq!(a, b);
            }
            Op::Begin => {
                fast.begin();
                slow.begin();
            }
            Op::Commit => {
                fast.commit();
                slow.commit();
            }
            Op::Rollback => {
                fast.rollback().unwrap();
                slow.rollback().unwrap();
            }
        }
        prop_assert_eq!(bytes(&fast), bytes(&slow));
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::common::cases(2_000))]

    #[test]
    fn rewrite_is_a_put_of_each_session_also_when_rolled_back(
        (retention, interval) in retention_and_interval(),
        ops in ops(1..60),
    ) {
        check(retention, interval, ops)?;
    }
}

/// A rollback after many rewrites of the same sessions in one transaction (each journaled
/// once) restores the bytes of before it.
#[test]
fn repeated_rewrites_roll_back_to_the_start() {
    let mut store = SessionStore::new(1_000, Some(100)).unwrap();
    for s in 0..50 {
        store.put(b"k", s, s + 20, &[s as u8; 9]).unwrap();
    }
    let before = bytes(&store);
    store.begin();
    let mut out = Vec::new();
    for add in 1..30u8 {
        store
            .rewrite_sessions(b"k", 10, 60, &mut out, |_, _, old, out| {
                rewritten(old, add, usize::from(add % 3 == 0), out);
                Ok(())
            })
            .unwrap();
    }
    assert_ne!(bytes(&store), before);
    store.rollback().unwrap();
    assert_eq!(bytes(&store), before);
}

/// What a store holds, without its memory figures (a transaction keeps buffers and segments
/// for reuse): sessions, keys, segments, value bytes and counters.
fn held(store: &SessionStore) -> [u64; 9] {
    let m = store.metrics();
    [
        m.live_sessions,
        m.live_keys,
        m.segments,
        m.key_bytes,
        m.value_bytes,
        m.puts,
        m.removes,
        m.expired_puts,
        m.expired_sessions,
    ]
}

/// Applies the non-transaction ops of `ops` to `store`.
fn apply(store: &mut SessionStore, ops: &[Op]) {
    let (mut out, mut edits) = (Vec::new(), Edits::default());
    for op in ops {
        match op {
            Op::Put(k, s, e, v) => {
                store.put(KEYS[*k as usize], *s, *e, v).unwrap();
            }
            Op::Remove(k, s, e) => {
                store.remove(KEYS[*k as usize], *s, *e);
            }
            Op::Rewrite(k, earliest_end, latest_start, add, grow) => {
                store
                    .rewrite_sessions(
                        KEYS[*k as usize],
                        *earliest_end,
                        *latest_start,
                        &mut out,
                        |_, _, old, out| {
                            rewritten(old, *add, *grow, out);
                            Ok(())
                        },
                    )
                    .unwrap();
            }
            Op::Amend(k, s, e, to, bytes) => {
                edits.clear();
                edits.push(0, 1, bytes);
                store
                    .amend(KEYS[*k as usize], (*s, *e), (*to, *e), &edits)
                    .unwrap();
            }
            Op::Begin | Op::Commit | Op::Rollback => {}
        }
    }
}

proptest! {
    #![proptest_config(crate::common::cases(1_000))]

    /// Store time jumps within a transaction (`jump`) so that whole segments expire in it
    /// (the first held whole by the store, any later ones journaled): a rollback leaves the
    /// bytes and everything the store counts as before the transaction, and a commit leaves
    /// what the same changes leave without a transaction (the expired sessions' keys
    /// forgotten).
    #[test]
    fn segments_that_expire_in_a_transaction_come_back_on_rollback_and_go_on_commit(
        (retention, interval) in retention_and_interval(),
        before in ops(0..30),
        during in ops(0..30),
        jump in 0i64..400,
        after in ops(0..10),
    ) {
        let mut during = during;
        // A put far ahead, then more changes (late ones now expired and refused).
        during.insert(during.len() / 2, Op::Put(1, jump, jump, vec![7]));
        let empty = || SessionStore::new(retention, interval).unwrap();
        let (mut store, mut plain) = (empty(), empty());
        apply(&mut store, &before);
        apply(&mut plain, &before);
        let (bytes_before, held_before) = (bytes(&store), held(&store));

        store.begin();
        apply(&mut store, &during);
        store.rollback().unwrap();
        prop_assert_eq!(bytes(&store), bytes_before);
        prop_assert_eq!(held(&store), held_before);
        // The rolled-back store goes on as the one that never ran the transaction.
        apply(&mut store, &after);
        let mut twin = empty();
        apply(&mut twin, &before);
        apply(&mut twin, &after);
        prop_assert_eq!(bytes(&store), bytes(&twin));
        prop_assert_eq!(held(&store), held(&twin));

        let mut committed = empty();
        apply(&mut committed, &before);
        committed.begin();
        apply(&mut committed, &during);
        committed.commit();
        apply(&mut plain, &during);
        prop_assert_eq!(bytes(&committed), bytes(&plain));
        prop_assert_eq!(held(&committed), held(&plain));
        apply(&mut committed, &after);
        apply(&mut plain, &after);
        prop_assert_eq!(bytes(&committed), bytes(&plain));
        prop_assert_eq!(held(&committed), held(&plain));
    }
}
