//! Tests of the columnar engine: the two-stacks fold, and every spec over monotone ranges
//! against the merges of each window's records (the streaming processors' path).

use super::*;
use crate::agg::tests::{assert_same, per_record};
use crate::agg::Aggregator;
use arrow_array::RecordBatch;
use proptest::prelude::*;

/// The engine's outputs over `order[lo[w]..hi[w]]` against the merges: each non-empty window
/// equals `encode_row`/`merge`/`finish` of its records (time = position in `order`, so that
/// `(time, seq)` order is `order`'s), and an empty window holds what no records give: a count
/// of 0, an empty list, a null otherwise. Errors must match too.
fn check_against_merges(
    aggs: &Aggregator,
    batch: &RecordBatch,
    order: &[u32],
    lo: &[u32],
    hi: &[u32],
) -> std::result::Result<(), TestCaseError> {
    let mut times = vec![0i64; batch.num_rows()];
    for (p, &row) in order.iter().enumerate() {
        times[row as usize] = p as i64;
    }
    let windows: Vec<Vec<usize>> = lo
        .iter()
        .zip(hi)
        .filter(|(l, h)| l < h)
        .map(|(&l, &h)| {
            order[l as usize..h as usize]
                .iter()
                .map(|&r| r as usize)
                .collect()
        })
        .collect();
    let got = aggs.aggregate_ranges(batch, order, lo, hi);
    let want = per_record(aggs, batch, &times, &windows);
    let (got, want) = match (got, want) {
        (Ok(got), Ok(want)) => (got, want),
        (Err(got), Err(want)) => {
            prop_assert_eq!(got.to_string(), want.to_string());
            return Ok(());
        }
        (got, want) => {
            prop_assert!(false, "engine {:?}, merges {:?}", got.err(), want.err());
            unreachable!()
        }
    };
    let filled = arrow_array::BooleanArray::from_iter(lo.iter().zip(hi).map(|(l, h)| Some(l < h)));
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let g_filled = arrow_select::filter::filter(g.as_ref(), &filled).unwrap();
        assert_same(&g_filled, w, &format!("aggregate a{i}"));
        for window in (0..lo.len()).filter(|&w| lo[w] == hi[w]) {
            match aggs.slots[i].op {
                Op::Count | Op::CountDistinct(_) => {
                    prop_assert_eq!(g.as_primitive::<Int64Type>().value(window), 0);
                }
                Op::Collect { .. } => {
                    prop_assert!(g.is_valid(window));
                    prop_assert_eq!(g.as_list::<i32>().value_length(window), 0);
                }
                _ => prop_assert!(g.is_null(window), "a{} of empty window {}", i, window),
            }
        }
    }
    Ok(())
}

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
    /// overflow, min and max folded as keys): they equal the merges, with integers near the
    /// ends of `i64` (sums that overflow, or that only cancel back in range) and floats with
    /// NaN, infinities and signed zeros.
    #[test]
    fn columns_without_nulls_equal_the_merges(
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
        check_against_merges(&aggs, &batch, &order, &lo, &hi)?;
    }
}

/// Every function over monotone ranges equals the merges of each window's records, with
/// nulls, ties and empty windows.
#[test]
fn every_function_equals_the_merges() {
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
    check_against_merges(&aggs, &batch, &order, &lo, &hi).unwrap();
}

proptest! {
    /// Runs laid end to end (sessions' windows) add their float sums left to right, as the
    /// records' states merge: bit for bit the merges' sums and means, with values whose sums
    /// round differently in another grouping.
    #[test]
    fn runs_add_floats_in_merge_order(
        values in proptest::collection::vec(
            prop_oneof![
                4 => (-1e6f64..1e6).prop_map(|v| v / 7.0),
                1 => Just(1e16),
                1 => Just(-1e16),
                1 => Just(0.1),
            ].prop_map(Some).boxed().prop_union(Just(None).boxed()),
            1..60,
        ),
        cuts in proptest::collection::vec(0usize..60, 0..12),
    ) {
        use arrow_array::Float64Array;
        use arrow_schema::{Field, Schema};

        use crate::agg::AggSpec;

        let n = values.len();
        let schema = Arc::new(Schema::new(vec![Field::new("f", DataType::Float64, true)]));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(Float64Array::from(values))])
                .unwrap();
        let aggs = Aggregator::try_new(
            vec![AggSpec::sum("f"), AggSpec::mean("f").with_alias("m")],
            &schema,
        )
        .unwrap();
        let mut offsets: Vec<usize> = cuts.iter().map(|&c| c.min(n)).collect();
        offsets.extend([0, n]);
        offsets.sort_unstable();
        let order: Vec<u32> = (0..n as u32).collect();
        let times: Vec<i64> = (0..n as i64).collect();
        let got = aggs.aggregate_windows(&batch, &order, &offsets).unwrap();
        let windows: Vec<Vec<usize>> = offsets
            .windows(2)
            .filter(|w| w[0] < w[1])
            .map(|w| (w[0]..w[1]).collect())
            .collect();
        let want = per_record(&aggs, &batch, &times, &windows).unwrap();
        let filled = arrow_array::BooleanArray::from_iter(
            offsets.windows(2).map(|w| Some(w[0] < w[1])),
        );
        for (g, w) in got.iter().zip(&want) {
            let g = arrow_select::filter::filter(g.as_ref(), &filled).unwrap();
            assert_same(&g, w, "runs against merges");
        }
    }
}
