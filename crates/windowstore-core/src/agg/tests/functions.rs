//! Every function on small hand-made batches, through both paths, for each supported type.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::*;
use arrow_schema::DataType;

use super::{aggregator, assert_same, batch, both, fast, slow};
use crate::agg::{AggSpec, Overflow};
use crate::Error;

fn a<T: Array + 'static>(array: T) -> ArrayRef {
    Arc::new(array)
}

/// Windows used by most tests: overlapping, one all-null in the value columns below.
fn windows() -> Vec<Vec<usize>> {
    vec![vec![0, 1, 2], vec![1, 3], vec![2, 3, 4], vec![4]]
}

const TIMES: [i64; 5] = [10, 20, 30, 40, 50];

#[test]
fn count_sum_mean_of_integers_skip_nulls() {
    let b = batch(vec![
        (
            "x",
            a(Int64Array::from(vec![
                Some(1),
                None,
                Some(3),
                None,
                Some(-5),
            ])),
        ),
        (
            "y",
            a(Int8Array::from(vec![
                Some(-128),
                Some(-128),
                None,
                None,
                Some(127),
            ])),
        ),
        (
            "z",
            a(UInt32Array::from(vec![
                Some(u32::MAX),
                Some(u32::MAX),
                None,
                None,
                None,
            ])),
        ),
    ]);
    let agg = aggregator(
        vec![
            AggSpec::count(),
            AggSpec::sum("x"),
            AggSpec::mean("x"),
            AggSpec::sum("y"),
            AggSpec::sum("z"),
            AggSpec::mean("z"),
        ],
        &b,
    );
    let out = both(&agg, &b, &TIMES, &windows());
    assert_same(&out[0], &a(Int64Array::from(vec![3, 2, 3, 1])), "count");
    assert_same(
        &out[1],
        &a(Int64Array::from(vec![Some(4), None, Some(-2), Some(-5)])),
        "sum x",
    );
    assert_same(
        &out[2],
        &a(Float64Array::from(vec![
            Some(2.0),
            None,
            Some(-1.0),
            Some(-5.0),
        ])),
        "mean x",
    );
    assert_same(
        &out[3],
        &a(Int64Array::from(vec![
            Some(-256),
            Some(-128),
            Some(127),
            Some(127),
        ])),
        "sum y",
    );
    let m = i64::from(u32::MAX);
    assert_same(
        &out[4],
        &a(Int64Array::from(vec![Some(2 * m), Some(m), None, None])),
        "sum z",
    );
    assert_same(
        &out[5],
        &a(Float64Array::from(vec![
            Some(m as f64),
            Some(m as f64),
            None,
            None,
        ])),
        "mean z",
    );
}

#[test]
fn sum_and_mean_of_floats() {
    let b = batch(vec![
        (
            "f",
            a(Float64Array::from(vec![
                Some(1.5),
                None,
                Some(-0.0),
                None,
                Some(f64::NAN),
            ])),
        ),
        (
            "g",
            a(Float32Array::from(vec![
                Some(0.5),
                Some(f32::INFINITY),
                Some(1.0),
                None,
                None,
            ])),
        ),
    ]);
    let agg = aggregator(
        vec![
            AggSpec::sum("f"),
            AggSpec::mean("f"),
            AggSpec::sum("g"),
            AggSpec::mean("g"),
        ],
        &b,
    );
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
    let b = batch(vec![
        (
            "x",
            a(Int64Array::from(vec![i64::MAX, 1, -1, i64::MIN, -1])),
        ),
        ("u", a(UInt64Array::from(vec![u64::MAX, 0, 0, 1, 5]))),
    ]);
    let agg = aggregator(vec![AggSpec::sum("x")], &b);
    // The intermediate i64::MAX + 1 does not fit Int64, the window's sum does.
    let out = both(&agg, &b, &TIMES, &[vec![0, 1, 2], vec![3, 4, 1]]);
    assert_same(
        &out[0],
        &a(Int64Array::from(vec![i64::MAX, i64::MIN])),
        "sum x",
    );
    for w in [vec![vec![0, 1]], vec![vec![3, 4]]] {
        for err in [slow(&agg, &b, &TIMES, &w), fast(&agg, &b, &TIMES, &w)] {
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
        slow(&agg, &b, &TIMES, &[vec![0]]),
        fast(&agg, &b, &TIMES, &[vec![0]]),
    ] {
        assert!(
            matches!(err, Err(Error::Schema { ref column, .. }) if column == "u"),
            "{err:?}"
        );
    }
}

#[test]
fn min_max_of_integers_and_unsigned() {
    let b = batch(vec![
        (
            "x",
            a(Int16Array::from(vec![
                Some(5),
                None,
                Some(-7),
                None,
                Some(2),
            ])),
        ),
        (
            "u",
            a(UInt64Array::from(vec![
                Some(u64::MAX),
                None,
                Some(1),
                None,
                Some(0),
            ])),
        ),
    ]);
    let agg = aggregator(
        vec![
            AggSpec::min("x"),
            AggSpec::max("x"),
            AggSpec::min("u"),
            AggSpec::max("u"),
        ],
        &b,
    );
    let out = both(&agg, &b, &TIMES, &windows());
    assert_same(
        &out[0],
        &a(Int16Array::from(vec![Some(-7), None, Some(-7), Some(2)])),
        "min x",
    );
    assert_same(
        &out[1],
        &a(Int16Array::from(vec![Some(5), None, Some(2), Some(2)])),
        "max x",
    );
    assert_same(
        &out[2],
        &a(UInt64Array::from(vec![Some(1), None, Some(0), Some(0)])),
        "min u",
    );
    assert_same(
        &out[3],
        &a(UInt64Array::from(vec![
            Some(u64::MAX),
            None,
            Some(1),
            Some(0),
        ])),
        "max u",
    );
}

#[test]
fn min_max_of_floats_nan_is_greatest_and_negative_zero_is_below_zero() {
    let weird_nan = f64::from_bits(0xfff8_0000_0000_1234); // a negative NaN with a payload
    let b = batch(vec![
        (
            "f",
            a(Float64Array::from(vec![
                Some(0.0),
                Some(-0.0),
                Some(weird_nan),
                Some(f64::INFINITY),
                None,
            ])),
        ),
        (
            "g",
            a(Float32Array::from(vec![
                Some(f32::NAN),
                Some(-1.0),
                None,
                Some(-0.0),
                Some(0.0),
            ])),
        ),
    ]);
    let agg = aggregator(
        vec![
            AggSpec::min("f"),
            AggSpec::max("f"),
            AggSpec::min("g"),
            AggSpec::max("g"),
        ],
        &b,
    );
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

#[test]
fn min_max_first_last_of_booleans() {
    let b = batch(vec![(
        "b",
        a(BooleanArray::from(vec![
            Some(true),
            None,
            Some(false),
            None,
            Some(true),
        ])),
    )]);
    let agg = aggregator(
        vec![
            AggSpec::min("b"),
            AggSpec::max("b"),
            AggSpec::first("b"),
            AggSpec::last("b"),
        ],
        &b,
    );
    let out = both(&agg, &b, &TIMES, &windows());
    assert_same(
        &out[0],
        &a(BooleanArray::from(vec![
            Some(false),
            None,
            Some(false),
            Some(true),
        ])),
        "min",
    );
    assert_same(
        &out[1],
        &a(BooleanArray::from(vec![
            Some(true),
            None,
            Some(true),
            Some(true),
        ])),
        "max",
    );
    assert_same(
        &out[2],
        &a(BooleanArray::from(vec![
            Some(true),
            None,
            Some(false),
            Some(true),
        ])),
        "first",
    );
    assert_same(
        &out[3],
        &a(BooleanArray::from(vec![
            Some(false),
            None,
            Some(true),
            Some(true),
        ])),
        "last",
    );
}

#[test]
fn strings_and_binaries_compare_bytewise() {
    let s = vec![Some("b"), None, Some("é"), None, Some("ab")];
    let bin: Vec<Option<&[u8]>> = vec![Some(b"\x01"), None, Some(b""), None, Some(b"\xff\x00")];
    let b = batch(vec![
        ("s", a(StringArray::from(s.clone()))),
        ("ls", a(LargeStringArray::from(s))),
        ("bin", a(BinaryArray::from(bin.clone()))),
        ("lbin", a(LargeBinaryArray::from(bin))),
    ]);
    let mut specs = Vec::new();
    for c in ["s", "ls", "bin", "lbin"] {
        specs.extend([
            AggSpec::min(c),
            AggSpec::max(c),
            AggSpec::first(c),
            AggSpec::last(c),
        ]);
    }
    let agg = aggregator(specs, &b);
    let out = both(&agg, &b, &TIMES, &windows());
    let expect_s = [
        vec![Some("b"), None, Some("ab"), Some("ab")],
        vec![Some("é"), None, Some("é"), Some("ab")],
        vec![Some("b"), None, Some("é"), Some("ab")],
        vec![Some("é"), None, Some("ab"), Some("ab")],
    ];
    for (i, want) in expect_s.iter().enumerate() {
        assert_same(&out[i], &a(StringArray::from(want.clone())), "utf8");
        assert_same(
            &out[4 + i],
            &a(LargeStringArray::from(want.clone())),
            "large utf8",
        );
    }
    let expect_b: [Vec<Option<&[u8]>>; 4] = [
        vec![Some(b""), None, Some(b""), Some(b"\xff\x00")],
        vec![Some(b"\x01"), None, Some(b"\xff\x00"), Some(b"\xff\x00")],
        vec![Some(b"\x01"), None, Some(b""), Some(b"\xff\x00")],
        vec![Some(b""), None, Some(b"\xff\x00"), Some(b"\xff\x00")],
    ];
    for (i, want) in expect_b.iter().enumerate() {
        assert_same(&out[8 + i], &a(BinaryArray::from(want.clone())), "binary");
        assert_same(
            &out[12 + i],
            &a(LargeBinaryArray::from(want.clone())),
            "large binary",
        );
    }
}

#[test]
fn temporal_types_keep_their_type_and_time_zone() {
    let ts = TimestampMicrosecondArray::from(vec![Some(3), None, Some(-1), None, Some(7)])
        .with_timezone("Asia/Tokyo");
    let ts_type = ts.data_type().clone();
    let b = batch(vec![
        ("ts", a(ts)),
        (
            "tn",
            a(TimestampNanosecondArray::from(vec![
                Some(1),
                Some(2),
                None,
                None,
                None,
            ])),
        ),
        (
            "d32",
            a(Date32Array::from(vec![
                Some(19000),
                None,
                Some(18000),
                None,
                None,
            ])),
        ),
        (
            "d64",
            a(Date64Array::from(vec![None, None, Some(5), None, Some(4)])),
        ),
        (
            "dur",
            a(DurationSecondArray::from(vec![
                Some(-3),
                None,
                Some(9),
                Some(1),
                None,
            ])),
        ),
    ]);
    let mut specs = Vec::new();
    for c in ["ts", "tn", "d32", "d64", "dur"] {
        specs.extend([
            AggSpec::min(c),
            AggSpec::max(c),
            AggSpec::first(c),
            AggSpec::last(c),
            AggSpec::collect(c, None, Overflow::Fail),
        ]);
    }
    let agg = aggregator(specs, &b);
    for (field, column) in agg.output_fields().iter().zip(
        ["ts", "tn", "d32", "d64", "dur"]
            .iter()
            .flat_map(|c| [*c; 5]),
    ) {
        let input = b
            .schema()
            .field_with_name(column)
            .expect("column")
            .data_type()
            .clone();
        match field.data_type() {
            DataType::List(item) => assert_eq!(item.data_type(), &input),
            other => assert_eq!(other, &input),
        }
    }
    assert_eq!(agg.output_fields()[0].data_type(), &ts_type);
    let out = both(&agg, &b, &TIMES, &windows());
    let tz =
        |v: Vec<Option<i64>>| a(TimestampMicrosecondArray::from(v).with_timezone("Asia/Tokyo"));
    assert_same(
        &out[0],
        &tz(vec![Some(-1), None, Some(-1), Some(7)]),
        "min ts",
    );
    assert_same(
        &out[1],
        &tz(vec![Some(3), None, Some(7), Some(7)]),
        "max ts",
    );
    assert_same(
        &out[2],
        &tz(vec![Some(3), None, Some(-1), Some(7)]),
        "first ts",
    );
    assert_same(
        &out[3],
        &tz(vec![Some(-1), None, Some(7), Some(7)]),
        "last ts",
    );
    let list = out[4].as_list::<i32>();
    assert_eq!(list.value(0).data_type(), &ts_type);
    assert_same(&list.value(0), &tz(vec![Some(3), Some(-1)]), "collect ts");
    assert_eq!(list.value(1).len(), 0);
    assert!(
        !list.is_null(1),
        "collect of an all-null window is an empty list"
    );
    assert_same(
        &out[5],
        &a(TimestampNanosecondArray::from(vec![
            Some(1),
            Some(2),
            None,
            None,
        ])),
        "min tn",
    );
    assert_same(
        &out[10],
        &a(Date32Array::from(vec![
            Some(18000),
            None,
            Some(18000),
            None,
        ])),
        "min d32",
    );
    assert_same(
        &out[11],
        &a(Date32Array::from(vec![
            Some(19000),
            None,
            Some(18000),
            None,
        ])),
        "max d32",
    );
    assert_same(
        &out[16],
        &a(Date64Array::from(vec![Some(5), None, Some(5), Some(4)])),
        "max d64",
    );
    assert_same(
        &out[17],
        &a(Date64Array::from(vec![Some(5), None, Some(5), Some(4)])),
        "first d64",
    );
    assert_same(
        &out[20],
        &a(DurationSecondArray::from(vec![
            Some(-3),
            Some(1),
            Some(1),
            None,
        ])),
        "min dur",
    );
    assert_same(
        &out[23],
        &a(DurationSecondArray::from(vec![
            Some(9),
            Some(1),
            Some(1),
            None,
        ])),
        "last dur",
    );
}

#[test]
fn first_last_collect_of_numbers_skip_nulls() {
    let b = batch(vec![
        (
            "x",
            a(Int32Array::from(vec![
                Some(1),
                None,
                Some(3),
                None,
                Some(5),
            ])),
        ),
        (
            "u",
            a(UInt8Array::from(vec![
                None,
                Some(200),
                Some(3),
                Some(4),
                None,
            ])),
        ),
        (
            "f",
            a(Float32Array::from(vec![
                Some(f32::NAN),
                None,
                Some(-0.0),
                None,
                None,
            ])),
        ),
    ]);
    let agg = aggregator(
        vec![
            AggSpec::first("x"),
            AggSpec::last("x"),
            AggSpec::collect("x", None, Overflow::DropOldest),
            AggSpec::first("u").with_alias("fu"),
            AggSpec::collect("u", Some(1), Overflow::DropOldest),
            AggSpec::first("f"),
            AggSpec::collect("f", None, Overflow::Fail),
        ],
        &b,
    );
    let out = both(&agg, &b, &TIMES, &windows());
    assert_same(
        &out[0],
        &a(Int32Array::from(vec![Some(1), None, Some(3), Some(5)])),
        "first x",
    );
    assert_same(
        &out[1],
        &a(Int32Array::from(vec![Some(3), None, Some(5), Some(5)])),
        "last x",
    );
    let xs = out[2].as_list::<i32>();
    let lens: Vec<usize> = (0..4).map(|i| xs.value(i).len()).collect();
    assert_eq!(lens, vec![2, 0, 2, 1]);
    assert_same(&xs.value(2), &a(Int32Array::from(vec![3, 5])), "collect x");
    assert_same(
        &out[3],
        &a(UInt8Array::from(vec![Some(200), Some(200), Some(3), None])),
        "first u",
    );
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
        vec![
            AggSpec::count(),
            AggSpec::sum("x"),
            AggSpec::min("x"),
            AggSpec::max("x"),
            AggSpec::mean("x"),
            AggSpec::first("s"),
            AggSpec::last("s"),
            AggSpec::collect("s", Some(3), Overflow::DropNewest),
            AggSpec::count().with_alias("n"),
            AggSpec::sum("x").with_alias("total"),
        ],
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
fn empty_runs_and_no_windows_in_the_fast_path() {
    let b = batch(vec![("x", a(Int64Array::from(vec![Some(4), None])))]);
    let agg = aggregator(
        vec![
            AggSpec::count(),
            AggSpec::sum("x"),
            AggSpec::max("x"),
            AggSpec::first("x"),
            AggSpec::collect("x", None, Overflow::Fail),
        ],
        &b,
    );
    let out = agg
        .aggregate_runs(&b, &[0, 0], &[0, 1], &[0, 0, 2, 2])
        .expect("runs");
    assert_same(&out[0], &a(Int64Array::from(vec![0, 2, 0])), "count");
    assert_same(
        &out[1],
        &a(Int64Array::from(vec![None, Some(4), None])),
        "sum",
    );
    assert_same(
        &out[2],
        &a(Int64Array::from(vec![None, Some(4), None])),
        "max",
    );
    assert_same(
        &out[3],
        &a(Int64Array::from(vec![None, Some(4), None])),
        "first",
    );
    assert_eq!(out[4].len(), 3);
    for offsets in [&[][..], &[0][..]] {
        let out = agg
            .aggregate_runs(&b, &[], &[], offsets)
            .expect("no windows");
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
fn fast_path_rejects_bad_runs_and_batches() {
    let b = batch(vec![("x", a(Int64Array::from(vec![1, 2])))]);
    let agg = aggregator(vec![AggSpec::sum("x")], &b);
    let bad = [
        (vec![0u32, 1], vec![0usize, 2, 1]),
        (vec![0, 1], vec![0, 3]),
        (vec![0, 2], vec![0, 2]),
    ];
    for (order, offsets) in bad {
        let err = agg
            .aggregate_runs(&b, &[0, 0], &order, &offsets)
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
        .aggregate_runs(&other, &[0, 0], &[0], &[0, 1])
        .expect_err("wrong type");
    assert!(
        matches!(err, Error::Schema { ref column, .. } if column == "x"),
        "{err:?}"
    );
    // The slow path reads a mismatched column as nulls rather than panicking.
    let mut state = Vec::new();
    agg.encode_row(&other, 0, 0, 0, &mut state);
    agg.encode_row(&b, 7, 0, 0, &mut state);
    let out = agg.finish(&[&state[..18]]).expect("finish");
    assert!(out[0].is_null(0));
}
