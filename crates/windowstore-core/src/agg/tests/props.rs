//! Properties against the model: merges in random groupings and orders equal aggregating all
//! records at once; the columnar path equals the model and the per-record path, overlapping windows
//! included; collect under `Fail` and integer sum overflow fail exactly when they should.

use std::sync::Arc;

use arrow_array::{ArrayRef, Decimal128Array, Int64Array};
use proptest::prelude::*;

use super::model::{data, expected, specs, Data, Rec};
use super::{assert_same, batch, columnar, per_record};
use crate::agg::{AggSpec, Aggregator, Overflow};
use crate::Error;

/// A tiny deterministic generator for merge orders (proptest picks the seed).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The state of `records`: encoded one by one, then merged pairwise in a random tree with
/// random operand order, until one state is left.
fn random_merge(
    agg: &Aggregator,
    b: &arrow_array::RecordBatch,
    records: &[Rec],
    rng: &mut Rng,
) -> crate::Result<Vec<u8>> {
    let mut states: Vec<Vec<u8>> = records
        .iter()
        .map(|&(row, time, seq)| {
            let mut s = Vec::new();
            agg.encode_row(b, row, time, seq, &mut s);
            s
        })
        .collect();
    while states.len() > 1 {
        let x = states.swap_remove(rng.below(states.len()));
        let y = states.swap_remove(rng.below(states.len()));
        let mut out = Vec::new();
        if rng.below(2) == 0 {
            agg.merge(&x, &y, &mut out)?;
        } else {
            agg.merge(&y, &x, &mut out)?;
        }
        states.push(out);
    }
    Ok(states.pop().expect("a window has a record"))
}

/// Data with windows: random non-empty row subsets.
fn data_and_windows() -> impl Strategy<Value = (Data, Vec<Vec<usize>>)> {
    data(1..24).prop_flat_map(|d| {
        let n = d.times.len();
        let rows: Vec<usize> = (0..n).collect();
        let windows = proptest::collection::vec(proptest::sample::subsequence(rows, 1..=n), 1..5);
        (Just(d), windows)
    })
}

fn check_all(got: &[ArrayRef], want: &[ArrayRef], what: &str) {
    let names: Vec<String> = specs().iter().map(AggSpec::output_name).collect();
    assert_eq!(got.len(), want.len());
    for ((g, w), name) in got.iter().zip(want).zip(&names) {
        assert_same(g, w, &format!("{what}: {name}"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn merges_in_any_grouping_equal_the_model(
        (d, windows) in data_and_windows(),
        seqs in proptest::collection::vec(any::<u64>(), 24),
        seed in 1u64..,
    ) {
        let b = d.batch();
        let agg = Aggregator::try_new(specs(), &b.schema()).expect("specs");
        let mut rng = Rng(seed);
        // Arrival numbers unrelated to row order (unique: seq + row keeps ties apart).
        let records: Vec<Vec<Rec>> = windows
            .iter()
            .map(|w| w.iter().map(|&r| (r, d.times[r], (seqs[r] >> 8 << 8) | r as u64)).collect())
            .collect();
        let states = records
            .iter()
            .map(|w| random_merge(&agg, &b, w, &mut rng))
            .collect::<crate::Result<Vec<_>>>()
            .expect("merge");
        let refs: Vec<&[u8]> = states.iter().map(Vec::as_slice).collect();
        let got = agg.finish(&refs).expect("finish");
        check_all(&got, &expected(&d, &records), "merge");
    }

    #[test]
    fn columnar_path_equals_per_record_path_and_model_with_overlaps_and_empty_runs(
        (d, windows) in data_and_windows(),
        empty_at in proptest::collection::vec(0usize..6, 0..3),
    ) {
        let b = d.batch();
        let agg = Aggregator::try_new(specs(), &b.schema()).expect("specs");
        let records = |ws: &[Vec<usize>]| -> Vec<Vec<Rec>> {
            ws.iter().map(|w| w.iter().map(|&r| (r, d.times[r], r as u64)).collect()).collect()
        };
        let s = per_record(&agg, &b, &d.times, &windows).expect("per-record");
        check_all(&s, &expected(&d, &records(&windows)), "per-record");
        let mut with_empty = windows.clone();
        for at in empty_at {
            with_empty.insert(at.min(with_empty.len()), Vec::new());
        }
        let f = columnar(&agg, &b, &d.times, &with_empty).expect("columnar");
        check_all(&f, &expected(&d, &records(&with_empty)), "columnar");
    }

    #[test]
    fn collect_fail_errors_exactly_beyond_the_bound(
        (d, windows) in data_and_windows(),
        max_size in 1usize..5,
        seed in 1u64..,
    ) {
        let b = d.batch();
        let agg = Aggregator::try_new(
            vec![AggSpec::count(), AggSpec::collect("s", Some(max_size), Overflow::Fail)],
            &b.schema(),
        ).expect("specs");
        let over = windows.iter().position(|w| w.iter().filter(|&&r| d.s[r].is_some()).count() > max_size);
        let mut rng = Rng(seed);
        let merged: crate::Result<Vec<Vec<u8>>> = windows
            .iter()
            .map(|w| {
                let recs: Vec<Rec> = w.iter().map(|&r| (r, d.times[r], r as u64)).collect();
                random_merge(&agg, &b, &recs, &mut rng)
            })
            .collect();
        for result in [merged.map(|_| ()), columnar(&agg, &b, &d.times, &windows).map(|_| ()), per_record(&agg, &b, &d.times, &windows).map(|_| ())] {
            match (&result, over) {
                (Ok(()), None) => {}
                (Err(Error::CollectOverflow { column, max_size: m, .. }), Some(_)) => {
                    prop_assert_eq!(column.as_str(), "s");
                    prop_assert_eq!(*m, max_size);
                }
                _ => prop_assert!(false, "over {:?} but got {:?}", over, result),
            }
        }
        let mut order = Vec::new();
        let mut offsets = vec![0];
        for w in &windows {
            let mut w = w.clone();
            w.sort_by_key(|&r| (d.times[r], r));
            order.extend(w.iter().map(|&r| r as u32));
            offsets.push(order.len());
        }
        prop_assert_eq!(agg.first_overflow(&b, &order, &offsets).map(|(w, _)| w), over);
    }

    #[test]
    fn integer_sums_fail_exactly_when_the_window_sum_leaves_int64(
        values in proptest::collection::vec(
            proptest::option::of(prop_oneof![Just(i64::MIN), Just(i64::MAX), -3i64..3, Just(1i64 << 62)]),
            1..12,
        ),
        seed in 1u64..,
    ) {
        let n = values.len();
        let b = batch(vec![("x", Arc::new(Int64Array::from(values.clone())) as ArrayRef)]);
        let agg = Aggregator::try_new(vec![AggSpec::sum("x"), AggSpec::mean("x")], &b.schema()).expect("specs");
        let times = vec![0; n];
        let windows = vec![(0..n).collect::<Vec<_>>(), (0..n).rev().step_by(2).collect()];
        let mut want = Vec::new();
        let mut fits = true;
        for w in &windows {
            let vals: Vec<i128> = w.iter().filter_map(|&r| values[r]).map(i128::from).collect();
            let sum: i128 = vals.iter().sum();
            fits &= i64::try_from(sum).is_ok();
            want.push((!vals.is_empty()).then(|| i64::try_from(sum).unwrap_or(0)));
        }
        let mut rng = Rng(seed);
        let states: Vec<Vec<u8>> = windows
            .iter()
            .map(|w| {
                let recs: Vec<Rec> = w.iter().map(|&r| (r, 0, r as u64)).collect();
                random_merge(&agg, &b, &recs, &mut rng).expect("merges never fail for sums")
            })
            .collect();
        let refs: Vec<&[u8]> = states.iter().map(Vec::as_slice).collect();
        for result in [agg.finish(&refs), columnar(&agg, &b, &times, &windows)] {
            match result {
                Ok(out) => {
                    prop_assert!(fits);
                    assert_same(&out[0], &(Arc::new(Int64Array::from(want.clone())) as ArrayRef), "sum");
                }
                Err(Error::Schema { column, reason }) => {
                    prop_assert!(!fits);
                    prop_assert_eq!(column.as_str(), "x");
                    prop_assert!(reason.contains("sum overflows Int64"));
                }
                Err(other) => prop_assert!(false, "{:?}", other),
            }
        }
    }

    /// Non-negative decimal(38, 0) values, so that every partial sum is at most the window's:
    /// merges in any grouping and the columnar path fail exactly when the window's sum has more
    /// than 38 digits, with an error naming the aggregate and column, never a wrapped value.
    #[test]
    fn decimal_sums_fail_exactly_when_the_window_sum_leaves_the_precision(
        values in proptest::collection::vec(
            proptest::option::of(prop_oneof![0i128..3, Just(4 * 10i128.pow(37)), Just(10i128.pow(38) - 1)]),
            1..8,
        ),
        seed in 1u64..,
    ) {
        let n = values.len();
        let dt = arrow_schema::DataType::Decimal128(38, 0);
        let array = Decimal128Array::from(values.clone()).with_data_type(dt.clone());
        let b = batch(vec![("x", Arc::new(array) as ArrayRef)]);
        // (A mean of decimal(38, 0) is decimal(38, 4), whose own bound is tested in `decimal`.)
        let agg = Aggregator::try_new(vec![AggSpec::sum("x")], &b.schema()).expect("specs");
        let times = vec![0; n];
        let windows = vec![(0..n).collect::<Vec<_>>(), (0..n).rev().step_by(2).collect()];
        let limit = 10i128.pow(38);
        let mut want = Vec::new();
        let mut fits = true;
        for w in &windows {
            let vals: Vec<i128> = w.iter().filter_map(|&r| values[r]).collect();
            let sum = vals.iter().try_fold(0i128, |acc, &v| acc.checked_add(v)).filter(|&s| s < limit);
            fits &= sum.is_some();
            want.push((!vals.is_empty()).then(|| sum.unwrap_or(0)));
        }
        let mut rng = Rng(seed);
        let merged: crate::Result<Vec<Vec<u8>>> = windows
            .iter()
            .map(|w| {
                let recs: Vec<Rec> = w.iter().map(|&r| (r, 0, r as u64)).collect();
                random_merge(&agg, &b, &recs, &mut rng)
            })
            .collect();
        let finished = merged.and_then(|states| {
            let refs: Vec<&[u8]> = states.iter().map(Vec::as_slice).collect();
            agg.finish(&refs)
        });
        for result in [finished, columnar(&agg, &b, &times, &windows)] {
            match result {
                Ok(out) => {
                    prop_assert!(fits);
                    let want: ArrayRef = Arc::new(Decimal128Array::from(want.clone()).with_data_type(dt.clone()));
                    assert_same(&out[0], &want, "sum");
                }
                Err(Error::AggregateOverflow { aggregate, column, reason, .. }) => {
                    prop_assert!(!fits);
                    prop_assert_eq!(column.as_str(), "x");
                    prop_assert_eq!(aggregate.as_str(), "sum(x)");
                    prop_assert!(reason.contains("does not fit the output type Decimal128(38, 0)"), "{}", reason);
                }
                Err(other) => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
