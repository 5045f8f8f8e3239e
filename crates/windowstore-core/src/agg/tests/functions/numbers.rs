//! Counts, sums, means, minima and maxima of integers and floats, through both paths.

use arrow_array::cast::AsArray;
use arrow_array::*;
use arrow_schema::DataType;

use super::{min_max, windows, TIMES};
use crate::agg::tests::{
    a, agg_specs, aggregator, assert_outputs, assert_same, batch, both, columnar, per_record,
};
use crate::agg::AggSpec;
use crate::Error;

#[test]
fn count_sum_mean_of_integers_skip_nulls() {
    let x = Int64Array::from(vec![Some(1), None, Some(3), None, Some(-5)]);
    let y = Int8Array::from(vec![Some(-128), Some(-128), None, None, Some(127)]);
    let z = UInt32Array::from(vec![Some(u32::MAX), Some(u32::MAX), None, None, None]);
    let b = batch(vec![("x", a(x)), ("y", a(y)), ("z", a(z))]);
    let agg = aggregator(agg_specs!(count sum(x) mean(x) sum(y) sum(z) mean(z)), &b);
    let out = both(&agg, &b, &TIMES, &windows());
    let m = i64::from(u32::MAX);
    #[rustfmt::skip] // a table: a row per output
    let want = [
        (0, a(Int64Array::from(vec![3, 2, 3, 1])), "count"),
        (1, a(Int64Array::from(vec![Some(4), None, Some(-2), Some(-5)])), "sum x"),
        (2, a(Float64Array::from(vec![Some(2.0), None, Some(-1.0), Some(-5.0)])), "mean x"),
        (3, a(Int64Array::from(vec![Some(-256), Some(-128), Some(127), Some(127)])), "sum y"),
        (4, a(Int64Array::from(vec![Some(2 * m), Some(m), None, None])), "sum z"),
        (5, a(Float64Array::from(vec![Some(m as f64), Some(m as f64), None, None])), "mean z"),
    ];
    assert_outputs(&out, want);
}

#[test]
fn sum_and_mean_of_floats() {
    let f = Float64Array::from(vec![Some(1.5), None, Some(-0.0), None, Some(f64::NAN)]);
    let g = Float32Array::from(vec![Some(0.5), Some(f32::INFINITY), Some(1.0), None, None]);
    let b = batch(vec![("f", a(f)), ("g", a(g))]);
    let agg = aggregator(agg_specs!(sum(f) mean(f) sum(g) mean(g)), &b);
    assert_eq!(agg.output_fields()[0].data_type(), &DataType::Float64);
    assert_eq!(agg.output_fields()[2].data_type(), &DataType::Float64);
    let w = vec![vec![0, 1, 2], vec![1, 3], vec![2], vec![4], vec![0, 1]];
    let out = both(&agg, &b, &TIMES, &w);
    let sf = out[0].as_primitive::<arrow_array::types::Float64Type>();
    assert_eq!(sf.value(0), 1.5);
    assert!(sf.is_null(1));
    assert_eq!(
        sf.value(2).to_bits(),
        (-0.0f64).to_bits(),
        "a lone -0.0 sums to -0.0"
    );
    assert!(sf.value(3).is_nan());
    let mf = out[1].as_primitive::<arrow_array::types::Float64Type>();
    assert_eq!(mf.value(0), 0.75);
    assert!(mf.is_null(1));
    let sg = out[2].as_primitive::<arrow_array::types::Float64Type>();
    assert_eq!(sg.value(0), f64::INFINITY);
    assert_eq!(sg.value(2), 1.0);
    assert!(sg.is_null(3));
    let mg = out[3].as_primitive::<arrow_array::types::Float64Type>();
    assert_eq!(mg.value(2), 1.0);
    assert_eq!(mg.value(4), f64::INFINITY);
}

#[test]
fn integer_sums_are_exact_and_fail_beyond_int64() {
    let x = Int64Array::from(vec![i64::MAX, 1, -1, i64::MIN, -1]);
    let u = UInt64Array::from(vec![u64::MAX, 0, 0, 1, 5]);
    let b = batch(vec![("x", a(x)), ("u", a(u))]);
    let agg = aggregator(vec![AggSpec::sum("x")], &b);
    // The intermediate i64::MAX + 1 does not fit Int64, the window's sum does.
    let out = both(&agg, &b, &TIMES, &[vec![0, 1, 2], vec![3, 4, 1]]);
    assert_same(
        &out[0],
        &a(Int64Array::from(vec![i64::MAX, i64::MIN])),
        "sum x",
    );
    for w in [vec![vec![0, 1]], vec![vec![3, 4]]] {
        for err in [
            per_record(&agg, &b, &TIMES, &w),
            columnar(&agg, &b, &TIMES, &w),
        ] {
            match err {
                Err(Error::Schema { column, reason }) => {
                    assert_eq!(column, "x");
                    assert!(reason.contains("sum overflows Int64"), "{reason}");
                }
                other => panic!("expected an overflow error, got {other:?}"),
            }
        }
    }
    let agg = aggregator(
        vec![AggSpec::sum("u").with_alias("su"), AggSpec::mean("u")],
        &b,
    );
    let out = both(&agg, &b, &TIMES, &[vec![1, 2, 3, 4]]);
    assert_same(&out[0], &a(Int64Array::from(vec![6])), "sum u");
    assert_same(&out[1], &a(Float64Array::from(vec![1.5])), "mean u");
    // A lone u64::MAX does not fit Int64 either.
    let agg = aggregator(vec![AggSpec::sum("u")], &b);
    for err in [
        per_record(&agg, &b, &TIMES, &[vec![0]]),
        columnar(&agg, &b, &TIMES, &[vec![0]]),
    ] {
        assert!(
            matches!(err, Err(Error::Schema { ref column, .. }) if column == "u"),
            "{err:?}"
        );
    }
}

#[test]
fn min_max_of_integers_and_unsigned() {
    let x = Int16Array::from(vec![Some(5), None, Some(-7), None, Some(2)]);
    let u = UInt64Array::from(vec![Some(u64::MAX), None, Some(1), None, Some(0)]);
    let b = batch(vec![("x", a(x)), ("u", a(u))]);
    let agg = aggregator(min_max(&["x", "u"]), &b);
    let out = both(&agg, &b, &TIMES, &windows());
    #[rustfmt::skip] // a table: a row per output
    let want = [
        (0, a(Int16Array::from(vec![Some(-7), None, Some(-7), Some(2)])), "min x"),
        (1, a(Int16Array::from(vec![Some(5), None, Some(2), Some(2)])), "max x"),
        (2, a(UInt64Array::from(vec![Some(1), None, Some(0), Some(0)])), "min u"),
        (3, a(UInt64Array::from(vec![Some(u64::MAX), None, Some(1), Some(0)])), "max u"),
    ];
    assert_outputs(&out, want);
}

#[test]
fn min_max_of_floats_nan_is_greatest_and_negative_zero_is_below_zero() {
    let weird_nan = f64::from_bits(0xfff8_0000_0000_1234); // a negative NaN with a payload
    let f = Float64Array::from(vec![
        Some(0.0),
        Some(-0.0),
        Some(weird_nan),
        Some(f64::INFINITY),
        None,
    ]);
    let g = Float32Array::from(vec![
        Some(f32::NAN),
        Some(-1.0),
        None,
        Some(-0.0),
        Some(0.0),
    ]);
    let b = batch(vec![("f", a(f)), ("g", a(g))]);
    let agg = aggregator(min_max(&["f", "g"]), &b);
    let w = vec![
        vec![0, 1],
        vec![2, 3],
        vec![3, 4],
        vec![4],
        vec![0, 1, 2, 3, 4],
    ];
    let out = both(&agg, &b, &TIMES, &w);
    let bits = |arr: &ArrayRef| -> Vec<Option<u64>> {
        arr.as_primitive::<arrow_array::types::Float64Type>()
            .iter()
            .map(|v| v.map(f64::to_bits))
            .collect()
    };
    let nan = f64::NAN.to_bits();
    assert_eq!(
        bits(&out[0]),
        vec![
            Some((-0.0f64).to_bits()),
            Some(f64::INFINITY.to_bits()),
            Some(f64::INFINITY.to_bits()),
            None,
            Some((-0.0f64).to_bits())
        ]
    );
    assert_eq!(
        bits(&out[1]),
        vec![
            Some(0.0f64.to_bits()),
            Some(nan),
            Some(f64::INFINITY.to_bits()),
            None,
            Some(nan)
        ]
    );
    let g = |arr: &ArrayRef| -> Vec<Option<u32>> {
        arr.as_primitive::<arrow_array::types::Float32Type>()
            .iter()
            .map(|v| v.map(f32::to_bits))
            .collect()
    };
    assert_eq!(
        g(&out[2]),
        vec![
            Some((-1.0f32).to_bits()),
            Some((-0.0f32).to_bits()),
            Some((-0.0f32).to_bits()),
            Some(0.0f32.to_bits()),
            Some((-1.0f32).to_bits())
        ]
    );
    assert_eq!(
        g(&out[3]),
        vec![
            Some(f32::NAN.to_bits()),
            Some((-0.0f32).to_bits()),
            Some(0.0f32.to_bits()),
            Some(0.0f32.to_bits()),
            Some(f32::NAN.to_bits())
        ]
    );
}
