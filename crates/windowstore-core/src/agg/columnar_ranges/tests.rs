//! Tests of the range fast path: the two-stacks fold and every spec, against the runs path.

use super::*;
use proptest::prelude::*;

/// Monotone ranges over `0..n` from random steps of both ends (empty ranges, jumps, ranges
/// that end where a block ends).
fn monotone(n: u32, steps: &[(u32, u32)]) -> (Vec<u32>, Vec<u32>) {
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    let (mut l, mut h) = (0u32, 0u32);
    for &(dh, dl) in steps {
        h = (h + dh).min(n);
        l = (l + dl).min(h);
        lo.push(l);
        hi.push(h);
    }
    (lo, hi)
}

proptest! {
    /// The two-stacks fold equals a direct fold of every range, for ranges of every shape.
    /// A non-commutative fold (string concatenation, as a polynomial hash) catches grouping
    /// and order mistakes.
    #[test]
    fn fold_monotone_equals_direct_folds(
        n in 0u32..50,
        steps in proptest::collection::vec((0u32..4, 0u32..4), 0..80),
    ) {
        let order: Vec<u32> = (0..n).collect();
        let (lo, hi) = monotone(n, &steps);
        let ranges = Ranges { order: &order, lo: &lo, hi: &hi };
        let mut got = Vec::new();
        fold_monotone(
            ranges,
            (0u64, 0u32),
            |i| (u64::from(i) + 1, 1),
            |(a, n), (b, m)| (a.wrapping_mul(41u64.wrapping_pow(m)).wrapping_add(b), n + m),
            |(v, _)| got.push(v),
        );
        let want: Vec<u64> = lo
            .iter()
            .zip(&hi)
            .map(|(&l, &h)| {
                (l..h).fold(0u64, |acc, i| acc.wrapping_mul(41).wrapping_add(u64::from(i) + 1))
            })
            .collect();
        prop_assert_eq!(got, want);
    }

    /// Columns without nulls take their own paths (prefix sums in `i64` when no sum can
    /// overflow, min and max folded as keys): they equal the runs path, with integers near
    /// the ends of `i64` (sums that overflow, or that only cancel back in range) and floats
    /// with NaN, infinities and signed zeros.
    #[test]
    fn columns_without_nulls_equal_runs(
        ints in proptest::collection::vec(prop_oneof![
            8 => -50i64..50,
            1 => Just(i64::MAX),
            1 => Just(i64::MIN + 1),
        ], 1..40),
        floats in proptest::collection::vec(prop_oneof![
            6 => (-8i32..8).prop_map(f64::from),
            1 => Just(f64::NAN),
            1 => Just(-0.0),
            1 => Just(f64::NEG_INFINITY),
        ], 40),
        steps in proptest::collection::vec((0u32..4, 0u32..4), 0..60),
        rotate in 0usize..40,
    ) {
        use arrow_array::{Float64Array, RecordBatch};
        use arrow_schema::{Field, Schema};

        use crate::agg::{AggSpec, Aggregator};

        let n = ints.len();
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, false),
            Field::new("f", DataType::Float64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(ints)),
                Arc::new(Float64Array::from(floats[..n].to_vec())),
            ],
        )
        .unwrap();
        let specs: Vec<AggSpec> = ["i", "f"]
            .iter()
            .flat_map(|&c| [AggSpec::sum(c), AggSpec::min(c), AggSpec::max(c)])
            .enumerate()
            .map(|(i, s)| s.with_alias(format!("a{i}")))
            .collect();
        let aggs = Aggregator::try_new(specs, &schema).unwrap();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.rotate_left(rotate % n);
        let (lo, hi) = monotone(n as u32, &steps);
        let mut copied = Vec::new();
        let mut offsets = vec![0usize];
        for (&l, &h) in lo.iter().zip(&hi) {
            copied.extend_from_slice(&order[l as usize..h as usize]);
            offsets.push(copied.len());
        }
        let got = aggs.aggregate_ranges(&batch, &order, &lo, &hi);
        let want = aggs.aggregate_runs(&batch, &vec![0i64; n], &copied, &offsets);
        match (got, want) {
            (Ok(got), Ok(want)) => {
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    prop_assert_eq!(g.as_ref(), w.as_ref(), "aggregate a{}", i);
                }
            }
            (Err(got), Err(want)) => prop_assert_eq!(got.to_string(), want.to_string()),
            (got, want) => prop_assert!(false, "ranges {:?}, runs {:?}", got.err(), want.err()),
        }
    }
}

/// Every function over monotone ranges equals the runs path over each window's rows
/// copied out (windows laid end to end), with nulls, ties and empty windows.
#[test]
fn ranges_equal_runs_for_every_function() {
    use arrow_array::{Float64Array, RecordBatch, StringArray};
    use arrow_schema::{Field, Schema};

    use crate::agg::{AggSpec, Aggregator, Overflow};

    let n = 64usize;
    let ints: Int64Array = (0..n)
        .map(|i| (i % 7 != 3).then_some((i as i64 * 37) % 11 - 5))
        .collect();
    // Small integers in f64: sums are exact in any grouping.
    let floats: Float64Array = (0..n)
        .map(|i| (i % 5 != 1).then_some(((i * 13) % 9) as f64 - 4.0))
        .collect();
    let strings: StringArray = (0..n)
        .map(|i| (i % 6 != 0).then(|| format!("s{}", (i * 7) % 10)))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, true),
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(ints), Arc::new(floats), Arc::new(strings)],
    )
    .unwrap();
    let mut specs = vec![AggSpec::count()];
    for c in ["i", "f"] {
        specs.extend([AggSpec::sum(c), AggSpec::mean(c)]);
    }
    for c in ["i", "f", "s"] {
        specs.extend(crate::agg::tests::ordered_specs(c));
        specs.extend([
            AggSpec::collect(c, None, Overflow::DropOldest),
            AggSpec::collect(c, Some(2), Overflow::DropOldest),
            AggSpec::collect(c, Some(2), Overflow::DropNewest),
            AggSpec::count_distinct(c),
            AggSpec::collect_all(c, None, Overflow::DropOldest),
            AggSpec::collect_all(c, Some(2), Overflow::DropNewest),
        ]);
    }
    let specs: Vec<AggSpec> = specs
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.with_alias(format!("a{i}")))
        .collect();
    let aggs = Aggregator::try_new(specs, &schema).unwrap();
    // A permuted order (as if grouped by key) and monotone ranges of every shape.
    let order: Vec<u32> = (0..n as u32).map(|i| (i * 29) % n as u32).collect();
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    let (mut l, mut h) = (0u32, 0u32);
    for step in 0..90u32 {
        h = (h + (step * 5) % 4).min(n as u32);
        l = (l + (step * 3) % 3).min(h);
        lo.push(l);
        hi.push(h);
    }
    let got = aggs.aggregate_ranges(&batch, &order, &lo, &hi).unwrap();
    let mut copied = Vec::new();
    let mut offsets = vec![0usize];
    for (&l, &h) in lo.iter().zip(&hi) {
        copied.extend_from_slice(&order[l as usize..h as usize]);
        offsets.push(copied.len());
    }
    let times = vec![0i64; n];
    let want = aggs
        .aggregate_runs(&batch, &times, &copied, &offsets)
        .unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.as_ref(), w.as_ref(), "aggregate a{i}");
    }
}
