//! A throwaway timing of the fast path (ignored; run with `-- --ignored timing`).

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Float64Array, Int64Array};

use super::{aggregator, batch};
use crate::agg::AggSpec;

#[test]
#[ignore = "timing, not a test: run with -- --ignored"]
fn timing_count_sum_max_over_10m_rows() {
    let n = 10_000_000usize;
    let b = batch(vec![
        (
            "f",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| (i % 1000) as f64 * 0.5),
            )) as ArrayRef,
        ),
        (
            "i",
            Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| (i as i64 * 7919) % 100_003),
            )) as ArrayRef,
        ),
    ]);
    let agg = aggregator(
        vec![AggSpec::count(), AggSpec::sum("f"), AggSpec::max("i")],
        &b,
    );
    let times: Vec<i64> = (0..n as i64).collect();
    let order: Vec<u32> = (0..n as u32).collect();
    let offsets: Vec<usize> = (0..=n).step_by(10).collect();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let out = agg
            .aggregate_runs(&b, &times, &order, &offsets)
            .expect("runs");
        best = best.min(t.elapsed().as_secs_f64());
        assert_eq!(out[0].len(), n / 10);
    }
    println!(
        "aggregate_runs count+sum(f64)+max(i64), {n} rows, {} windows: best {:.1} ms",
        n / 10,
        best * 1e3
    );
}
