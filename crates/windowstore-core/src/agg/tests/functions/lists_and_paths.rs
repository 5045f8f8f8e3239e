//! `first`, `last` and `collect`, the output schema, and the columnar path's own edge cases.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::*;
use arrow_schema::DataType;

use super::{windows, TIMES};
use crate::agg::tests::{a, agg_specs, aggregator, assert_outputs, assert_same, batch, both};
use crate::agg::{AggSpec, Overflow};
use crate::Error;

#[test]
fn first_last_collect_of_numbers_skip_nulls() {
    let x = Int32Array::from(vec![Some(1), None, Some(3), None, Some(5)]);
    let u = UInt8Array::from(vec![None, Some(200), Some(3), Some(4), None]);
    let f = Float32Array::from(vec![Some(f32::NAN), None, Some(-0.0), None, None]);
    let b = batch(vec![("x", a(x)), ("u", a(u)), ("f", a(f))]);
    let agg = aggregator(
        agg_specs!(first(x) last(x) collect(x, None, Overflow::DropOldest) first(u) => "fu"
            collect(u, Some(1), Overflow::DropOldest) first(f) collect(f, None, Overflow::Fail)),
        &b,
    );
    let out = both(&agg, &b, &TIMES, &windows());
    #[rustfmt::skip] // a table: a row per output
    let want = [
        (0, a(Int32Array::from(vec![Some(1), None, Some(3), Some(5)])), "first x"),
        (1, a(Int32Array::from(vec![Some(3), None, Some(5), Some(5)])), "last x"),
        (3, a(UInt8Array::from(vec![Some(200), Some(200), Some(3), None])), "first u"),
    ];
    assert_outputs(&out, want);
    let xs = out[2].as_list::<i32>();
    let lens: Vec<usize> = (0..4).map(|i| xs.value(i).len()).collect();
    assert_eq!(lens, vec![2, 0, 2, 1]);
    assert_same(&xs.value(2), &a(Int32Array::from(vec![3, 5])), "collect x");
    let us = out[4].as_list::<i32>();
    assert_same(
        &us.value(0),
        &a(UInt8Array::from(vec![3])),
        "collect u newest",
    );
    assert_same(
        &us.value(1),
        &a(UInt8Array::from(vec![4])),
        "collect u newest",
    );
    let f = out[5].as_primitive::<arrow_array::types::Float32Type>();
    assert!(f.value(0).is_nan() && f.is_null(1) && f.value(2).to_bits() == (-0.0f32).to_bits());
    let fs = out[6].as_list::<i32>();
    assert_eq!(fs.value(0).len(), 2);
    // first/last/collect keep values bit-exact, NaN payloads included.
    let odd_nan = f64::from_bits(0x7ff8_0000_0000_0042);
    let b = batch(vec![("f", a(Float64Array::from(vec![odd_nan])))]);
    let agg = aggregator(vec![AggSpec::first("f"), AggSpec::max("f")], &b);
    let out = both(&agg, &b, &[0], &[vec![0]]);
    assert_eq!(
        out[0]
            .as_primitive::<arrow_array::types::Float64Type>()
            .value(0)
            .to_bits(),
        odd_nan.to_bits()
    );
    assert_eq!(
        out[1]
            .as_primitive::<arrow_array::types::Float64Type>()
            .value(0)
            .to_bits(),
        f64::NAN.to_bits()
    );
}

#[test]
fn output_names_types_and_nullability() {
    let b = batch(vec![
        ("x", a(Int64Array::from(vec![1]))),
        ("s", a(StringArray::from(vec!["a"]))),
    ]);
    let agg = aggregator(
        agg_specs!(count sum(x) min(x) max(x) mean(x) first(s) last(s)
            collect(s, Some(3), Overflow::DropNewest) count => "n" sum(x) => "total"),
        &b,
    );
    let fields = agg.output_fields();
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        vec![
            "count",
            "sum_x",
            "min_x",
            "max_x",
            "mean_x",
            "first_s",
            "last_s",
            "collect_s",
            "n",
            "total"
        ]
    );
    let nullable: Vec<bool> = fields.iter().map(|f| f.is_nullable()).collect();
    assert_eq!(
        nullable,
        vec![false, true, true, true, true, true, true, true, false, true]
    );
    let types: Vec<DataType> = fields.iter().map(|f| f.data_type().clone()).collect();
    assert_eq!(types[0], DataType::Int64);
    assert_eq!(types[1], DataType::Int64);
    assert_eq!(types[4], DataType::Float64);
    assert_eq!(types[5], DataType::Utf8);
    assert!(matches!(&types[7], DataType::List(item) if item.data_type() == &DataType::Utf8));
    assert_eq!(agg.len(), 10);
    // The outputs have exactly the declared types.
    let out = both(&agg, &b, &[0], &[vec![0]]);
    for (f, o) in fields.iter().zip(&out) {
        assert_eq!(f.data_type(), o.data_type(), "{}", f.name());
    }
    assert_eq!(out[1].as_primitive::<Int64Type>().value(0), 1);
}

#[test]
fn empty_runs_and_no_windows_in_the_columnar_path() {
    let b = batch(vec![("x", a(Int64Array::from(vec![Some(4), None])))]);
    let agg = aggregator(
        agg_specs!(count sum(x) max(x) first(x) collect(x, None, Overflow::Fail)),
        &b,
    );
    let out = agg
        .aggregate_windows(&b, &[0, 1], &[0, 0, 2, 2])
        .expect("runs");
    assert_same(&out[0], &a(Int64Array::from(vec![0, 2, 0])), "count");
    let only_the_second = a(Int64Array::from(vec![None, Some(4), None]));
    for (i, what) in [(1, "sum"), (2, "max"), (3, "first")] {
        assert_same(&out[i], &only_the_second, what);
    }
    assert_eq!(out[4].len(), 3);
    for offsets in [&[][..], &[0][..]] {
        let out = agg.aggregate_windows(&b, &[], offsets).expect("no windows");
        assert!(out.iter().all(|o| o.is_empty()));
        assert_eq!(out.len(), 5);
    }
    let none: Vec<&[u8]> = Vec::new();
    assert!(agg
        .finish(&none)
        .expect("no states")
        .iter()
        .all(|o| o.is_empty()));
}

#[test]
fn columnar_path_rejects_bad_runs_and_batches() {
    let b = batch(vec![("x", a(Int64Array::from(vec![1, 2])))]);
    let agg = aggregator(vec![AggSpec::sum("x")], &b);
    let bad = [
        (vec![0u32, 1], vec![0usize, 2, 1]),
        (vec![0, 1], vec![0, 3]),
        (vec![0, 2], vec![0, 2]),
    ];
    for (order, offsets) in bad {
        let err = agg
            .aggregate_windows(&b, &order, &offsets)
            .expect_err("bad runs");
        assert!(
            matches!(
                err,
                Error::InvalidWindowSpec {
                    parameter: "offsets" | "order",
                    ..
                }
            ),
            "{err:?}"
        );
    }
    let other = batch(vec![("x", a(Int32Array::from(vec![1, 2])))]);
    let err = agg
        .aggregate_windows(&other, &[0], &[0, 1])
        .expect_err("wrong type");
    assert!(
        matches!(err, Error::Schema { ref column, .. } if column == "x"),
        "{err:?}"
    );
    // The per-record path reads a mismatched column as nulls rather than panicking.
    let mut state = Vec::new();
    agg.encode_row(&other, 0, 0, 0, &mut state);
    agg.encode_row(&b, 7, 0, 0, &mut state);
    let out = agg.finish(&[&state[..18]]).expect("finish");
    assert!(out[0].is_null(0));
}
