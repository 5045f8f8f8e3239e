//! Record order: first/last/collect by (time, seq) with ties broken by arrival, and the
//! bounds of collect under the three overflow strategies, whatever the merge order.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};

use super::{a, aggregator, assert_same, batch, columnar, fold, per_record};
use crate::agg::{fill_overflow, AggSpec, Aggregator, Overflow};
use crate::Error;

/// All permutations of `items` (small inputs only).
fn permutations<T: Clone>(items: &[T]) -> Vec<Vec<T>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let head = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, head.clone());
            out.push(p);
        }
    }
    out
}

/// The state of `records` merged as two halves (right-leaning tree), after a permutation.
fn split_fold(
    agg: &Aggregator,
    b: &RecordBatch,
    records: &[(usize, i64, u64)],
) -> crate::Result<Vec<u8>> {
    let mid = records.len() / 2;
    let (left, right) = (
        fold(agg, b, &records[..mid])?,
        fold(agg, b, &records[mid..])?,
    );
    let mut out = Vec::new();
    agg.merge(&right, &left, &mut out)?;
    Ok(out)
}

fn ints(list: &ArrayRef, i: usize) -> Vec<i64> {
    list.as_list::<i32>()
        .value(i)
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}

#[test]
fn equal_times_break_ties_by_arrival_in_every_merge_order() {
    let x = Int64Array::from(vec![10, 20, 30, 40, 50]);
    let s = StringArray::from(vec!["a", "b", "c", "d", "e"]);
    let b = batch(vec![("x", a(x)), ("s", a(s))]);
    let agg = aggregator(
        vec![
            AggSpec::first("x"),
            AggSpec::last("x"),
            AggSpec::collect("x", None, Overflow::Fail),
            AggSpec::first("s"),
            AggSpec::last("s"),
            AggSpec::collect("x", Some(2), Overflow::DropOldest).with_alias("newest"),
            AggSpec::collect("x", Some(2), Overflow::DropNewest).with_alias("oldest"),
        ],
        &b,
    );
    // Rows 0..3 share time 5 and arrive as 3, 1, 0, 2 (seq 1, 3, 7, 9); row 4 is earlier in time
    // though it arrived last.
    let records = [(0, 5, 7), (1, 5, 3), (2, 5, 9), (3, 5, 1), (4, 4, 20)];
    for perm in permutations(&records) {
        for state in [fold(&agg, &b, &perm), split_fold(&agg, &b, &perm)] {
            let out = agg.finish(&[&state.expect("merge")]).expect("finish");
            assert_same(&out[0], &a(Int64Array::from(vec![50])), "first");
            assert_same(&out[1], &a(Int64Array::from(vec![30])), "last");
            assert_eq!(ints(&out[2], 0), vec![50, 40, 20, 10, 30], "collect");
            assert_same(&out[3], &a(StringArray::from(vec!["e"])), "first s");
            assert_same(&out[4], &a(StringArray::from(vec!["c"])), "last s");
            assert_eq!(ints(&out[5], 0), vec![10, 30], "newest 2");
            assert_eq!(ints(&out[6], 0), vec![50, 40], "oldest 2");
        }
    }
}

#[test]
fn columnar_path_breaks_ties_by_row_index() {
    let b = batch(vec![("x", a(Int64Array::from(vec![1, 2, 3, 4])))]);
    let agg = aggregator(
        vec![
            AggSpec::first("x"),
            AggSpec::last("x"),
            AggSpec::collect("x", None, Overflow::Fail),
        ],
        &b,
    );
    let times = [7, 7, 3, 7];
    let windows = vec![vec![0, 1, 2, 3], vec![3, 1]];
    let (s, f) = (
        per_record(&agg, &b, &times, &windows).expect("per-record"),
        columnar(&agg, &b, &times, &windows).expect("columnar"),
    );
    for (x, y) in s.iter().zip(&f) {
        assert_same(x, y, "per-record vs columnar");
    }
    assert_same(&f[0], &a(Int64Array::from(vec![3, 2])), "first");
    assert_same(&f[1], &a(Int64Array::from(vec![4, 4])), "last");
    assert_eq!(ints(&f[2], 0), vec![3, 1, 2, 4]);
    assert_eq!(ints(&f[2], 1), vec![2, 4]);
}

#[test]
fn collect_bounds_keep_what_aggregating_all_records_keeps() {
    let x = Int64Array::from(vec![
        Some(1),
        Some(2),
        None,
        Some(3),
        Some(4),
        Some(5),
        Some(6),
    ]);
    let b = batch(vec![("x", a(x))]);
    let times = [1, 2, 3, 4, 5, 6, 7];
    let specs = |overflow| vec![AggSpec::collect("x", Some(3), overflow)];
    let newest = aggregator(specs(Overflow::DropOldest), &b);
    let oldest = aggregator(specs(Overflow::DropNewest), &b);
    let records: Vec<(usize, i64, u64)> = (0..7).map(|r| (r, times[r], r as u64)).collect();
    // Merge order and grouping do not matter: a few shuffles and splits.
    let orders = [
        vec![0, 1, 2, 3, 4, 5, 6],
        vec![6, 5, 4, 3, 2, 1, 0],
        vec![3, 0, 6, 2, 5, 1, 4],
        vec![1, 5, 0, 4, 2, 6, 3],
    ];
    for order in &orders {
        let recs: Vec<_> = order.iter().map(|&i| records[i]).collect();
        for state in [fold(&newest, &b, &recs), split_fold(&newest, &b, &recs)] {
            let out = newest.finish(&[&state.expect("merge")]).expect("finish");
            assert_eq!(ints(&out[0], 0), vec![4, 5, 6]);
        }
        for state in [fold(&oldest, &b, &recs), split_fold(&oldest, &b, &recs)] {
            let out = oldest.finish(&[&state.expect("merge")]).expect("finish");
            assert_eq!(ints(&out[0], 0), vec![1, 2, 3]);
        }
    }
    let windows = vec![(0..7).collect::<Vec<_>>(), vec![1, 2, 3], vec![2]];
    for (agg, want) in [(&newest, vec![4, 5, 6]), (&oldest, vec![1, 2, 3])] {
        let f = columnar(agg, &b, &times, &windows).expect("columnar");
        let s = per_record(agg, &b, &times, &windows).expect("per-record");
        assert_same(&f[0], &s[0], "per-record vs columnar");
        assert_eq!(ints(&f[0], 0), want);
        assert_eq!(
            ints(&f[0], 1),
            vec![2, 3],
            "nulls do not count towards the bound"
        );
        assert_eq!(ints(&f[0], 2), Vec::<i64>::new());
    }
}

#[test]
fn collect_under_fail_errors_beyond_the_bound_and_the_caller_fills_the_window() {
    let x = Int64Array::from(vec![Some(1), None, Some(2), Some(3), Some(4)]);
    let b = batch(vec![("x", a(x))]);
    let agg = aggregator(
        vec![
            AggSpec::count(),
            AggSpec::collect("x", Some(3), Overflow::Fail),
        ],
        &b,
    );
    let times = [1, 2, 3, 4, 5];
    // Exactly at the bound (null not counted): fine in both paths.
    let ok = vec![vec![0, 1, 2, 3]];
    let out = per_record(&agg, &b, &times, &ok).expect("at the bound");
    assert_eq!(ints(&out[1], 0), vec![1, 2, 3]);
    assert_same(
        &columnar(&agg, &b, &times, &ok).expect("columnar")[1],
        &out[1],
        "columnar",
    );
    // One more value: both paths fail, naming the column and the bound.
    let over = vec![vec![0], vec![0, 1, 2, 3, 4]];
    for result in [
        per_record(&agg, &b, &times, &over),
        columnar(&agg, &b, &times, &over),
    ] {
        match result {
            Err(Error::CollectOverflow {
                key,
                start,
                end,
                column,
                max_size,
            }) => {
                assert_eq!(
                    (key.as_str(), start, end, column.as_str(), max_size),
                    ("", 0, 0, "x", 3)
                );
            }
            other => panic!("expected an overflow, got {other:?}"),
        }
    }
    let order = [0u32, 0, 1, 2, 3, 4];
    assert_eq!(agg.first_overflow(&b, &order, &[0, 1, 6]), Some((1, "x")));
    assert_eq!(agg.first_overflow(&b, &order, &[0, 1, 5]), None);
    // A failed merge leaves `out` untouched.
    let full = fold(&agg, &b, &[(0, 1, 0), (2, 3, 2), (3, 4, 3)]).expect("three values");
    let mut one = Vec::new();
    agg.encode_row(&b, 4, 5, 4, &mut one);
    let mut out = vec![42u8];
    assert!(agg.merge(&full, &one, &mut out).is_err());
    assert_eq!(out, vec![42u8]);
    // The caller fills key and window.
    let err = agg.merge(&one, &full, &mut out).expect_err("overflow");
    match fill_overflow(err, "user-1", 10, 20) {
        Error::CollectOverflow {
            key,
            start,
            end,
            column,
            max_size,
        } => {
            assert_eq!(
                (key.as_str(), start, end, column.as_str(), max_size),
                ("user-1", 10, 20, "x", 3)
            );
        }
        other => panic!("{other:?}"),
    }
    let other = fill_overflow(Error::invalid("gap", "x"), "k", 1, 2);
    assert!(matches!(
        other,
        Error::InvalidWindowSpec {
            parameter: "gap",
            ..
        }
    ));
    let msg = fill_overflow(
        agg.merge(&one, &full, &mut out).expect_err("overflow"),
        "k",
        1,
        2,
    )
    .to_string();
    assert!(
        msg.contains("collect(x)") && msg.contains("max_size 3"),
        "{msg}"
    );
    assert!(out.len() == 1 && out[0] == 42 && !b.column(0).is_empty());
}
