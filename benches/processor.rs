//! The streaming processors themselves, without Python: a clickstream of `N` records over
//! `N / 100` keys, in time order (one record every 100 ms, each of a key drawn at random, so a
//! key's records are about `N / 1000` s apart, 1,000 s at the default `N`), cut into batches of
//! 65,536 rows, through the session processor (gap 30 s) and the sliding processor (`D` = 30 s;
//! and `D` = 10 × the key spacing, about 10 records a window, as in `bench_sliding.py`), all
//! `emit="final"` with `count` and `sum`; each also with its batched path off (record by
//! record), for the ratio.
//!
//! `WINDOWSTORE_BENCH_RECORDS` (default 1,000,000) sets `N`; `WINDOWSTORE_BENCH_ONLY=sessions`
//! or `=sliding` runs one processor (for profiling). The figure is records per second through a
//! fresh processor, so the cost of a growing store is in it.

use std::hint::black_box;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use windowstore_core::agg::AggSpec;
use windowstore_core::emit::EmitMode;
use windowstore_core::input::InputSpec;
use windowstore_core::processor::{Processor, WindowKind};
use windowstore_core::reject::OnInvalid;
use windowstore_core::session::{GapSpec, SessionSpec};
use windowstore_core::sliding::SlidingSpec;
use windowstore_core::time::Duration;

const BATCH_ROWS: usize = 1 << 16;

fn records() -> usize {
    std::env::var("WINDOWSTORE_BENCH_RECORDS")
        .map(|s| s.parse().expect("WINDOWSTORE_BENCH_RECORDS: an integer"))
        .unwrap_or(1_000_000)
}

fn runs(name: &str) -> bool {
    std::env::var("WINDOWSTORE_BENCH_ONLY").map_or(true, |only| only == name)
}

/// `n` records in time order, record `i` at `100 * i` ms, of a key drawn by a xorshift
/// generator with a fixed seed.
fn batches(n: usize) -> Vec<RecordBatch> {
    let keys = (n / 100).max(1) as u64;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next_key = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % keys
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, false),
        Field::new("ts", DataType::Int64, false),
        Field::new("x", DataType::Int64, false),
    ]));
    (0..n)
        .step_by(BATCH_ROWS)
        .map(|from| {
            let to = (from + BATCH_ROWS).min(n);
            let k: StringArray = (from..to)
                .map(|_| Some(format!("user{}", next_key())))
                .collect();
            let ts = Int64Array::from_iter_values((from..to).map(|i| (i as i64) * 100));
            let x = Int64Array::from_iter_values((from..to).map(|i| (i % 97) as i64));
            RecordBatch::try_new(schema.clone(), vec![Arc::new(k), Arc::new(ts), Arc::new(x)])
                .expect("batch")
        })
        .collect()
}

fn input() -> InputSpec {
    InputSpec {
        key: vec!["k".into()],
        time: "ts".into(),
        time_unit: None,
        gap: None,
    }
}

fn aggs() -> Vec<AggSpec> {
    vec![AggSpec::count(), AggSpec::sum("x")]
}

/// Every batch through a fresh processor of window kind `spec`, with the batched path on or
/// off; the rows it emits.
fn run<K: WindowKind>(spec: K, data: &[RecordBatch], batched: bool) -> usize {
    let mut p = Processor::new(spec, input(), aggs()).expect("processor");
    p.set_batched(batched);
    data.iter()
        .map(|batch| p.process(batch).expect("process").num_rows())
        .sum()
}

fn bench(c: &mut Criterion) {
    let n = records();
    let data = batches(n);
    let mut group = c.benchmark_group("processor");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n as u64));
    if runs("sessions") {
        let spec = SessionSpec {
            gap: GapSpec::Fixed(Duration::Ticks(30_000)),
            grace: Duration::Ticks(5_000),
            retention: None,
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        };
        group.bench_function("sessions_final_in_order", |b| {
            b.iter(|| black_box(run(spec.clone(), &data, true)));
        });
        // The record path the batched one replaces where every record is within the grace.
        group.bench_function("sessions_final_in_order_record_by_record", |b| {
            b.iter(|| black_box(run(spec.clone(), &data, false)));
        });
    }
    if runs("sliding") {
        let spec = SlidingSpec {
            time_difference: Duration::Ticks(30_000),
            grace: Duration::Ticks(5_000),
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        };
        group.bench_function("sliding_final_in_order", |b| {
            b.iter(|| black_box(run(spec.clone(), &data, true)));
        });
        group.bench_function("sliding_final_in_order_record_by_record", |b| {
            b.iter(|| black_box(run(spec.clone(), &data, false)));
        });
        // Windows of about 10 records, as in benches/bench_sliding.py: a key's records are
        // 100 ms x (N / 100) apart.
        let wide = SlidingSpec {
            time_difference: Duration::Ticks(10 * n as i64),
            ..spec.clone()
        };
        group.bench_function("sliding_final_in_order_10_a_window", |b| {
            b.iter(|| black_box(run(wide.clone(), &data, true)));
        });
        group.bench_function("sliding_final_in_order_10_a_window_record_by_record", |b| {
            b.iter(|| black_box(run(wide.clone(), &data, false)));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
