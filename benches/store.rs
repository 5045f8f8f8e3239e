//! The per-record pattern of a session engine (find_sessions, then remove + put or put) on the
//! segmented SessionStore, beside a plain `BTreeMap<(key, end, start), value>` doing the same
//! work (with a FIFO for its expiry) in the same run. See [`Workload`] for the pattern.
//!
//! `WINDOWSTORE_BENCH_SIZES` (default `100000,1000000,10000000`) sets the live-session targets;
//! `WINDOWSTORE_BENCH_ONLY=store` or `=baseline` runs one side only (for profiling).
//! Before timing, each size prints the live sessions reached and the heap bytes per session
//! beyond its key and value bytes, for the store and the baseline.

use std::collections::{BTreeMap, VecDeque};
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use windowstore_benches::{allocated, CountingAlloc, Workload};
use windowstore_core::SessionStore;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn sizes() -> Vec<u64> {
    std::env::var("WINDOWSTORE_BENCH_SIZES")
        .unwrap_or_else(|_| "100000,1000000,10000000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("WINDOWSTORE_BENCH_SIZES: comma-separated integers")
        })
        .collect()
}

/// One record of the workload on the store; returns whether it merged into a session.
#[inline]
fn store_record(store: &mut SessionStore, w: Workload, i: u64) -> bool {
    let (key, t) = (w.key(i), i as i64);
    let found = store
        .find_sessions(&key, t - w.gap, t + w.gap)
        .next()
        .map(|s| (s.start, s.end, Workload::count(s.value)));
    match found {
        Some((start, end, count)) => {
            store.remove(&key, start, end);
            store
                .put(&key, start, t, &Workload::value(count + 1))
                .expect("put");
            true
        }
        None => {
            store.put(&key, t, t, &Workload::value(1)).expect("put");
            false
        }
    }
}

/// A plain ordered map with the same lookups, and a FIFO of puts to expire sessions by end.
struct Baseline {
    map: BTreeMap<(Vec<u8>, i64, i64), Vec<u8>>,
    expiry: VecDeque<(Vec<u8>, i64, i64)>,
}

impl Baseline {
    fn record(&mut self, w: Workload, i: u64) -> bool {
        let (key, t) = (w.key(i).to_vec(), i as i64);
        while let Some((_, end, _)) = self.expiry.front() {
            if *end > t - w.retention {
                break;
            }
            let (k, end, start) = self.expiry.pop_front().expect("front exists");
            self.map.remove(&(k, end, start));
        }
        let found = self
            .map
            .range((key.clone(), t - w.gap, i64::MIN)..=(key.clone(), i64::MAX, i64::MAX))
            .find(|((_, _, start), _)| *start <= t + w.gap)
            .map(|((_, end, start), v)| (*start, *end, Workload::count(v)));
        let (start, count) = match found {
            Some((start, end, count)) => {
                self.map.remove(&(key.clone(), end, start));
                (start, count + 1)
            }
            None => (t, 1),
        };
        self.map
            .insert((key.clone(), t, start), Workload::value(count).to_vec());
        self.expiry.push_back((key, t, start));
        found.is_some()
    }
}

fn warm_store(w: Workload) -> (SessionStore, u64) {
    let mut store = SessionStore::new(w.retention, None).expect("valid retention");
    let steps = 2 * w.retention as u64;
    for i in 0..steps {
        store_record(&mut store, w, i);
    }
    (store, steps)
}

fn warm_baseline(w: Workload) -> (Baseline, u64) {
    let mut b = Baseline {
        map: BTreeMap::new(),
        expiry: VecDeque::new(),
    };
    let steps = 2 * w.retention as u64;
    for i in 0..steps {
        b.record(w, i);
    }
    (b, steps)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("session-engine records");
    group.sample_size(10);
    group.throughput(Throughput::Elements(1));
    let only = std::env::var("WINDOWSTORE_BENCH_ONLY").unwrap_or_default();
    for target in sizes() {
        let w = Workload::new(target);
        if only == "baseline" {
            bench_baseline(&mut group, w);
            continue;
        }
        let before = allocated();
        let (mut store, mut i) = warm_store(w);
        let bytes = (allocated() - before) as f64;
        let live = store.metrics().live_sessions;
        let visible = store.find_sessions_by_end(i64::MIN, i64::MAX).len() as f64;
        let payload = visible * (13.0 + 16.0);
        println!(
            "store at {visible} visible sessions ({live} held, {} keys): {:.1} B/session beyond \
             key+value bytes (metrics().bytes says {:.1})",
            w.keys,
            (bytes - payload) / visible,
            (store.metrics().bytes as f64 - payload) / visible,
        );
        group.bench_with_input(BenchmarkId::new("SessionStore", target), &w, |b, &w| {
            b.iter(|| {
                let merged = store_record(&mut store, w, i);
                i += 1;
                black_box(merged)
            })
        });
        drop(store);
        if only != "store" {
            bench_baseline(&mut group, w);
        }
    }
    group.finish();
}

fn bench_baseline(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    w: Workload,
) {
    let target = w.live;
    let before = allocated();
    let (mut base, mut i) = warm_baseline(w);
    let bytes = (allocated() - before) as f64;
    let n = base.map.len() as f64;
    println!(
        "BTreeMap baseline at {n} sessions: {:.1} B/session beyond key+value bytes \
             (its expiry FIFO included)",
        (bytes - n * (13.0 + 16.0)) / n
    );
    group.bench_with_input(BenchmarkId::new("BTreeMap", target), &w, |b, &w| {
        b.iter(|| {
            let merged = base.record(w, i);
            i += 1;
            black_box(merged)
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
