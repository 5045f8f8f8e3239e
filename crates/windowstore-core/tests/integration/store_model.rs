//! Random operation sequences against an obviously-correct model: a plain Vec of sessions that
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test
//! applies the retention rule on every read. Every read of the store must equal the model's.

use proptest::prelude::*;
use windowstore_core::store::session_store::PutOutcome;
use windowstore_core::store::snapshot_format;
use windowstore_core::SessionStore;

use crate::common::{rows, Row};

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, i64, i64, Vec<u8>),
    Remove(Vec<u8>, i64, i64),
    FetchSession(Vec<u8>, i64, i64),
    Find(Vec<u8>, i64, i64),
    Fetch(Vec<u8>),
    FetchRange(Vec<u8>, Vec<u8>),
    ByEnd(i64, i64),
    SnapshotRestore,
}

struct Model {
    retention: i64,
    store_time: Option<i64>,
    rows: Vec<Row>,
    puts: u64,
    removes: u64,
    expired_puts: u64,
}

impl Model {
    fn min_live(&self) -> i128 {
        self.store_time
            .map_or(i128::MIN, |t| t as i128 - self.retention as i128 + 1)
    }
    fn live(&self) -> impl Iterator<Item = &Row> {
        let min = self.min_live();
        self.rows.iter().filter(move |r| r.2 as i128 >= min)
    }
    fn put(&mut self, k: &[u8], s: i64, e: i64, v: &[u8]) -> PutOutcome {
        self.store_time = Some(self.store_time.map_or(e, |t| t.max(e)));
        if (e as i128) < self.min_live() {
            self.expired_puts += 1;
            return PutOutcome::Expired;
        }
        self.puts += 1;
        let min = self.min_live();
        self.rows.retain(|r| (r.2 as i128) >= min);
        match self
            .rows
            .iter_mut()
            .find(|r| r.0 == k && r.1 == s && r.2 == e)
        {
            Some(r) => {
                r.3 = v.to_vec();
                PutOutcome::Updated
            }
            None => {
                self.rows.push((k.to_vec(), s, e, v.to_vec()));
                PutOutcome::Inserted
            }
        }
    }
    fn remove(&mut self, k: &[u8], s: i64, e: i64) -> bool {
        let min = self.min_live();
        let before = self.rows.len();
        self.rows
            .retain(|r| !(r.0 == k && r.1 == s && r.2 == e && r.2 as i128 >= min));
        let removed = self.rows.len() < before;
        self.removes += removed as u64;
        removed
    }
    fn sorted(mut rows: Vec<Row>, by: impl Fn(&Row) -> (i64, i64, Vec<u8>)) -> Vec<Row> {
        rows.sort_by_key(|r| by(r));
        rows
    }
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(vec![]),
        Just(b"a".to_vec()),
        Just(b"aa".to_vec()),
        Just(b"b".to_vec()),
        Just(vec![0xff, 0]),
    ]
}

fn time() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -40i64..160,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
    ]
}

fn window() -> impl Strategy<Value = (i64, i64)> {
    (time(), time()).prop_map(|(a, b)| (a.min(b), a.max(b)))
}

fn op() -> impl Strategy<Value = Op> {
    let value = proptest::collection::vec(any::<u8>(), 0..6);
    prop_oneof![
        8 => (key(), window(), value).prop_map(|(k, (s, e), v)| Op::Put(k, s, e, v)),
        3 => (key(), window()).prop_map(|(k, (s, e))| Op::Remove(k, s, e)),
        2 => (key(), window()).prop_map(|(k, (s, e))| Op::FetchSession(k, s, e)),
        3 => (key(), time(), time()).prop_map(|(k, a, b)| Op::Find(k, a, b)),
        1 => key().prop_map(Op::Fetch),
        1 => (key(), key()).prop_map(|(a, b)| Op::FetchRange(a, b)),
        2 => (time(), time()).prop_map(|(a, b)| Op::ByEnd(a, b)),
        1 => Just(Op::SnapshotRestore),
    ]
}

fn check(retention: i64, interval: Option<i64>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut store = SessionStore::new(retention, interval).expect("valid");
    let mut model = Model {
        retention,
        store_time: None,
        rows: vec![],
        puts: 0,
        removes: 0,
        expired_puts: 0,
    };
    for op in ops {
        match op {
            Op::Put(k, s, e, v) => {
                prop_assert_eq!(
                    store.put(&k, s, e, &v).expect("put"),
                    model.put(&k, s, e, &v)
                );
            }
            Op::Remove(k, s, e) => prop_assert_eq!(store.remove(&k, s, e), model.remove(&k, s, e)),
            Op::FetchSession(k, s, e) => {
                let want = model
                    .live()
                    .find(|r| r.0 == k && r.1 == s && r.2 == e)
                    .map(|r| r.3.clone());
                prop_assert_eq!(store.fetch_session(&k, s, e).map(<[u8]>::to_vec), want);
            }
            Op::Find(k, ee, ls) => {
                let want: Vec<Row> = model
                    .live()
                    .filter(|r| r.0 == k && r.2 >= ee && r.1 <= ls)
                    .cloned()
                    .collect();
                let want = Model::sorted(want, |r| (r.2, r.1, vec![]));
                let got: Vec<Row> = store
                    .find_sessions(&k, ee, ls)
                    .map(|s| (k.clone(), s.start, s.end, s.value.to_vec()))
                    .collect();
                prop_assert_eq!(&got, &want);
                let mut back: Vec<Row> = store
                    .backward_find_sessions(&k, ee, ls)
                    .map(|s| (k.clone(), s.start, s.end, s.value.to_vec()))
                    .collect();
                back.reverse();
                prop_assert_eq!(back, want);
            }
            Op::Fetch(k) => {
                let want: Vec<Row> = model.live().filter(|r| r.0 == k).cloned().collect();
                let want = Model::sorted(want, |r| (r.2, r.1, vec![]));
                let got: Vec<Row> = store
                    .fetch(&k)
                    .map(|s| (k.clone(), s.start, s.end, s.value.to_vec()))
                    .collect();
                prop_assert_eq!(got, want);
            }
            Op::FetchRange(a, b) => {
                let mut want: Vec<Row> = model
                    .live()
                    .filter(|r| r.0 >= a && r.0 <= b)
                    .cloned()
                    .collect();
                want.sort_by(|x, y| (&x.0, x.2, x.1).cmp(&(&y.0, y.2, y.1)));
                let got = rows(&store.fetch_range(&a, &b));
                prop_assert_eq!(got, want);
            }
            Op::ByEnd(ee, le) => {
                let want: Vec<Row> = model
                    .live()
                    .filter(|r| r.2 >= ee && r.2 <= le)
                    .cloned()
                    .collect();
                let want = Model::sorted(want, |r| (r.2, r.1, r.0.clone()));
                let got = rows(&store.find_sessions_by_end(ee, le));
                prop_assert_eq!(got, want);
                // The index-free next close: the first end the held scan would emit.
                let first = store
                    .stored_sessions_by_end(ee, i64::MAX)
                    .first()
                    .map(|s| s.session.end);
                prop_assert_eq!(store.earliest_stored_end(ee), first);
            }
            Op::SnapshotRestore => {
                let bytes = snapshot_format::encode(&store, &Default::default()).expect("encode");
                let (restored, _) =
                    snapshot_format::decode(std::path::Path::new("mem"), &bytes).expect("decode");
                prop_assert_eq!(restored.store_time(), store.store_time());
                prop_assert_eq!(restored.segment_interval(), store.segment_interval());
                store = restored;
                prop_assert_eq!(store.metrics().live_sessions as usize, model.live().count());
            }
        }
        let m = store.metrics();
        prop_assert_eq!(store.store_time(), model.store_time);
        prop_assert_eq!(
            (m.puts, m.removes, m.expired_puts),
            (model.puts, model.removes, model.expired_puts)
        );
        prop_assert!(m.live_sessions as usize >= model.live().count());
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::common::cases(10_000))]

    #[test]
    fn store_matches_model(
        retention in prop_oneof![1i64..120, Just(i64::MAX)],
        interval in proptest::option::of(prop_oneof![1i64..60, Just(i64::MAX)]),
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        check(retention, interval, ops)?;
    }
}
