//! A throwaway timing of both paths (ignored; run with `-- --ignored timing --nocapture`).

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray};

use super::{aggregator, batch};
use crate::agg::{AggSpec, Overflow};

/// The best of five runs of `f`, in milliseconds.
fn best_ms(mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::MAX, f64::min)
}

#[test]
#[ignore = "timing, not a test: run with -- --ignored"]
fn timing_of_the_columnar_and_per_record_paths() {
    let n = 10_000_000usize;
    let strings: Vec<String> = (0..1000).map(|i| format!("user-{i:04}")).collect();
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
        (
            "n",
            Arc::new(Int64Array::from_iter(
                (0..n).map(|i| (i % 10 != 3).then_some(i as i64)),
            )) as ArrayRef,
        ),
        (
            "s",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| strings[(i * 7) % 1000].as_str()),
            )) as ArrayRef,
        ),
    ]);
    let times: Vec<i64> = (0..n as i64).collect();
    let order: Vec<u32> = (0..n as u32).collect();
    let offsets: Vec<usize> = (0..=n).step_by(10).collect();
    let cases: Vec<(&str, Vec<AggSpec>)> = vec![
        (
            "count+sum(f64)+max(i64)",
            vec![AggSpec::count(), AggSpec::sum("f"), AggSpec::max("i")],
        ),
        (
            "sum+mean+min of an Int64 with 10% nulls",
            vec![AggSpec::sum("n"), AggSpec::mean("n"), AggSpec::min("n")],
        ),
        (
            "first+last of an Int64 with 10% nulls",
            vec![AggSpec::first("n"), AggSpec::last("n")],
        ),
        (
            "sum+mean of an Int64 without nulls",
            vec![AggSpec::sum("i"), AggSpec::mean("i")],
        ),
        ("max of Utf8", vec![AggSpec::max("s")]),
        ("count_distinct of Utf8", vec![AggSpec::count_distinct("s")]),
        (
            "collect(i64, max_size=5, drop_oldest)",
            vec![AggSpec::collect("i", Some(5), Overflow::DropOldest)],
        ),
    ];
    for (what, specs) in cases {
        let agg = aggregator(specs, &b);
        let ms = best_ms(|| {
            let out = agg.aggregate_windows(&b, &order, &offsets).expect("runs");
            assert_eq!(out[0].len(), n / 10);
        });
        println!(
            "aggregate_windows {what}: {n} rows, {} windows: {ms:.1} ms",
            n / 10
        );
    }
    // The per-record path: encode_row then merge into the window's state.
    let agg = aggregator(
        vec![AggSpec::count(), AggSpec::sum("f"), AggSpec::max("i")],
        &b,
    );
    let rows = 1_000_000;
    let ms = best_ms(|| {
        let (mut state, mut one, mut out) = (Vec::new(), Vec::new(), Vec::new());
        for (row, &time) in times[..rows].iter().enumerate() {
            one.clear();
            agg.encode_row(&b, row, time, row as u64, &mut one);
            if row % 10 == 0 {
                std::mem::swap(&mut state, &mut one);
            } else {
                out.clear();
                agg.merge(&state, &one, &mut out).expect("merge");
                std::mem::swap(&mut state, &mut out);
            }
        }
    });
    println!("encode_row+merge count+sum(f64)+max(i64): {rows} records: {ms:.1} ms");
}
