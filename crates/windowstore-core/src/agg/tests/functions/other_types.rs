//! Booleans, strings, binaries and temporal types, through both paths.

use arrow_array::cast::AsArray;
use arrow_array::*;
use arrow_schema::DataType;

use super::{windows, TIMES};
use crate::agg::tests::{a, aggregator, assert_outputs, assert_same, batch, both, ordered_specs};
use crate::agg::{AggSpec, Overflow};

#[test]
fn min_max_first_last_of_booleans() {
    let flags = BooleanArray::from(vec![Some(true), None, Some(false), None, Some(true)]);
    let b = batch(vec![("b", a(flags))]);
    let agg = aggregator(ordered_specs("b").into(), &b);
    let out = both(&agg, &b, &TIMES, &windows());
    let want = [
        ("min", [Some(false), None, Some(false), Some(true)]),
        ("max", [Some(true), None, Some(true), Some(true)]),
        ("first", [Some(true), None, Some(false), Some(true)]),
        ("last", [Some(false), None, Some(true), Some(true)]),
    ];
    for (i, (what, want)) in want.into_iter().enumerate() {
        assert_same(&out[i], &a(BooleanArray::from(want.to_vec())), what);
    }
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
        specs.extend(ordered_specs(c));
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
    let tn = TimestampNanosecondArray::from(vec![Some(1), Some(2), None, None, None]);
    let d32 = Date32Array::from(vec![Some(19000), None, Some(18000), None, None]);
    let d64 = Date64Array::from(vec![None, None, Some(5), None, Some(4)]);
    let dur = DurationSecondArray::from(vec![Some(-3), None, Some(9), Some(1), None]);
    let columns = ["ts", "tn", "d32", "d64", "dur"];
    let b = batch(
        columns
            .into_iter()
            .zip([a(ts), a(tn), a(d32), a(d64), a(dur)])
            .collect(),
    );
    let mut specs = Vec::new();
    for c in columns {
        specs.extend(ordered_specs(c));
        specs.push(AggSpec::collect(c, None, Overflow::Fail));
    }
    let agg = aggregator(specs, &b);
    for (field, column) in agg
        .output_fields()
        .iter()
        .zip(columns.iter().flat_map(|c| [*c; 5]))
    {
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
    #[rustfmt::skip] // a table: a row per output
    let want = [
        (0, tz(vec![Some(-1), None, Some(-1), Some(7)]), "min ts"),
        (1, tz(vec![Some(3), None, Some(7), Some(7)]), "max ts"),
        (2, tz(vec![Some(3), None, Some(-1), Some(7)]), "first ts"),
        (3, tz(vec![Some(-1), None, Some(7), Some(7)]), "last ts"),
        (5, a(TimestampNanosecondArray::from(vec![Some(1), Some(2), None, None])), "min tn"),
        (10, a(Date32Array::from(vec![Some(18000), None, Some(18000), None])), "min d32"),
        (11, a(Date32Array::from(vec![Some(19000), None, Some(18000), None])), "max d32"),
        (16, a(Date64Array::from(vec![Some(5), None, Some(5), Some(4)])), "max d64"),
        (17, a(Date64Array::from(vec![Some(5), None, Some(5), Some(4)])), "first d64"),
        (20, a(DurationSecondArray::from(vec![Some(-3), Some(1), Some(1), None])), "min dur"),
        (23, a(DurationSecondArray::from(vec![Some(9), Some(1), Some(1), None])), "last dur"),
    ];
    assert_outputs(&out, want);
    let list = out[4].as_list::<i32>();
    assert_eq!(list.value(0).data_type(), &ts_type);
    assert_same(&list.value(0), &tz(vec![Some(3), Some(-1)]), "collect ts");
    assert_eq!(list.value(1).len(), 0);
    assert!(
        !list.is_null(1),
        "collect of an all-null window is an empty list"
    );
}
