//! The state layout: version byte, fixed sizes, pinned bytes, and corrupted input that errors
//! (or gives garbage) without panicking.

use arrow_array::{
    BooleanArray, Decimal128Array, Float32Array, Float64Array, Int64Array, StringArray, UInt16Array,
};
use proptest::prelude::*;

use super::{a, agg_specs, aggregator, batch, fold, ordered_specs};
use crate::agg::fold::Order;
use crate::agg::{AggSpec, Aggregator, Overflow};
use crate::Error;

fn sample() -> (arrow_array::RecordBatch, Aggregator) {
    let x = Int64Array::from(vec![Some(5), None, Some(-2)]);
    let f = Float64Array::from(vec![Some(1.5), None, Some(f64::NAN)]);
    let g = Float32Array::from(vec![None, Some(2.5), Some(-1.0)]);
    let u = UInt16Array::from(vec![Some(7), None, Some(9)]);
    let flags = BooleanArray::from(vec![Some(true), None, Some(false)]);
    let s = StringArray::from(vec![Some("héllo"), None, Some("")]);
    let columns = ["x", "f", "g", "u", "b", "s"];
    let b = batch(
        columns
            .into_iter()
            .zip([a(x), a(f), a(g), a(u), a(flags), a(s)])
            .collect(),
    );
    let mut specs = agg_specs!(count sum(x) sum(f) mean(u) mean(g));
    for c in columns {
        specs.extend(ordered_specs(c));
        specs.extend([
            AggSpec::collect(c, Some(2), Overflow::DropOldest),
            AggSpec::collect(c, None, Overflow::Fail).with_alias(format!("all_{c}")),
        ]);
    }
    let agg = aggregator(specs, &b);
    (b, agg)
}

#[test]
fn fixed_width_states_have_one_size_null_or_not() {
    let b = batch(vec![
        ("x", a(Int64Array::from(vec![Some(5), None]))),
        ("f", a(Float64Array::from(vec![None, Some(2.0)]))),
        ("b", a(BooleanArray::from(vec![None, Some(true)]))),
    ]);
    let cases: Vec<(AggSpec, usize)> = vec![
        (AggSpec::count(), 8),
        (AggSpec::sum("x"), 17),
        (AggSpec::sum("f"), 9),
        (AggSpec::mean("x"), 24),
        (AggSpec::mean("f"), 16),
        (AggSpec::min("x"), 9),
        (AggSpec::max("b"), 2),
        (AggSpec::first("f"), 25),
        (AggSpec::last("b"), 18),
    ];
    for (spec, size) in cases {
        let agg = aggregator(vec![spec.clone()], &b);
        let mut sizes = Vec::new();
        for row in 0..2 {
            let mut s = Vec::new();
            agg.encode_row(&b, row, 0, row as u64, &mut s);
            assert_eq!(s[0], 1, "version byte");
            sizes.push(s.len());
        }
        let merged = fold(&agg, &b, &[(0, 0, 0), (1, 1, 1)]).expect("merge");
        sizes.push(merged.len());
        assert_eq!(sizes, vec![1 + size; 3], "{spec:?}");
    }
}

#[test]
fn folding_a_record_in_place_gives_the_bytes_of_the_merge() {
    let x = Int64Array::from(vec![Some(5), None, Some(-3), Some(i64::MAX)]);
    let f = Float64Array::from(vec![Some(0.1), Some(f64::NAN), None, Some(-0.7)]);
    let flags = BooleanArray::from(vec![Some(true), None, Some(false), None]);
    let b = batch(vec![("x", a(x)), ("f", a(f)), ("b", a(flags))]);
    let agg = aggregator(
        agg_specs!(count sum(x) sum(f) mean(x) mean(f) min(f) max(b) first(x) last(f)
            last(b) => "last_b"),
        &b,
    );
    assert!(agg.folds_in_place());
    // Records in an order that makes first/last and min/max move both ways.
    let records = [(2, 50, 0), (0, 10, 1), (3, 10, 2), (1, 99, 3)];
    let (mut folded, mut merged) = (Vec::new(), Vec::new());
    agg.encode_row(&b, records[0].0, records[0].1, records[0].2, &mut folded);
    merged.clone_from(&folded);
    let mut scratch = Vec::new();
    for &(row, t, seq) in &records[1..] {
        let input = (&agg.inputs(&b), row);
        agg.fold_row(
            &mut folded,
            input,
            (t, seq),
            &mut scratch,
            Order::RecordFirst,
        )
        .expect("fold");
        let mut one = Vec::new();
        agg.encode_row(&b, row, t, seq, &mut one);
        let mut out = Vec::new();
        agg.merge(&one, &merged, &mut out).expect("merge");
        merged = out;
        assert_eq!(folded, merged, "after row {row}");
    }
    // The state first: merge(state, record), folded in place from an encoded record.
    let mut state_first = Vec::new();
    agg.encode_row(
        &b,
        records[0].0,
        records[0].1,
        records[0].2,
        &mut state_first,
    );
    let mut expected = state_first.clone();
    for &(row, t, seq) in &records[1..] {
        let mut one = Vec::new();
        agg.encode_row(&b, row, t, seq, &mut one);
        let input = (&agg.inputs(&b), row);
        agg.fold_row(
            &mut state_first,
            input,
            (t, seq),
            &mut scratch,
            Order::StateFirst,
        )
        .expect("fold");
        let mut out = Vec::new();
        agg.merge(&expected, &one, &mut out).expect("merge");
        expected = out;
        assert_eq!(state_first, expected, "state first, after row {row}");
    }
    let inputs = agg.inputs(&b);
    assert!(agg
        .fold_row(
            &mut [1u8, 0],
            (&inputs, 0),
            (0, 0),
            &mut scratch,
            Order::StateFirst
        )
        .is_err());
    assert!(agg
        .fold_row(
            &mut [0u8],
            (&inputs, 0),
            (0, 0),
            &mut scratch,
            Order::StateFirst
        )
        .is_err());
    let lists = aggregator(vec![AggSpec::collect("x", None, Overflow::DropOldest)], &b);
    assert!(!lists.folds_in_place());
    let mut short = vec![1u8, 0];
    assert!(agg
        .fold_row(
            &mut short,
            (&inputs, 0),
            (0, 0),
            &mut scratch,
            Order::RecordFirst
        )
        .is_err());
}

/// A value drawn with its extremes: nulls, bounds, NaN, infinities and both zeros.
fn edgy_f64() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(None),
        Just(Some(f64::NAN)),
        // A NaN of another sign and payload: output arrays carry the canonical one.
        Just(Some(f64::from_bits(0xfff8_0000_0000_0001))),
        Just(Some(-0.0)),
        Just(Some(0.0)),
        Just(Some(f64::INFINITY)),
        Just(Some(f64::NEG_INFINITY)),
        Just(Some(f64::MAX)),
        (-1e6f64..1e6).prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every fixed-width function over every fixed-width kind: the state folded record by
    /// record equals the state merged record by record, byte for byte.
    #[test]
    fn folding_equals_merging_for_every_fixed_function(
        rows in proptest::collection::vec(
            (
                prop_oneof![Just(None), Just(Some(i64::MAX)), Just(Some(i64::MIN)), any::<i64>().prop_map(Some)],
                edgy_f64(),
                proptest::option::of(any::<f32>()),
                proptest::option::of(any::<u16>()),
                proptest::option::of(any::<bool>()),
                (-5i64..5, 0u64..4),
            ),
            1..24,
        ),
    ) {
        let b = batch(vec![
            ("x", a(Int64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>()))),
            ("f", a(Float64Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>()))),
            ("g", a(Float32Array::from(rows.iter().map(|r| r.2).collect::<Vec<_>>()))),
            ("u", a(UInt16Array::from(rows.iter().map(|r| r.3).collect::<Vec<_>>()))),
            ("b", a(BooleanArray::from(rows.iter().map(|r| r.4).collect::<Vec<_>>()))),
            ("d", a(Decimal128Array::from(rows.iter().map(|r| r.0.map(i128::from)).collect::<Vec<_>>())
                .with_data_type(arrow_schema::DataType::Decimal128(38, 3)))),
        ]);
        let mut specs = vec![AggSpec::count()];
        for col in ["x", "f", "g", "u", "b", "d"] {
            let named = |spec: AggSpec, what: &str| spec.with_alias(format!("{what}_{col}"));
            if col != "b" {
                specs.push(named(AggSpec::sum(col), "sum"));
                specs.push(named(AggSpec::mean(col), "mean"));
            }
            specs.push(named(AggSpec::min(col), "min"));
            specs.push(named(AggSpec::max(col), "max"));
            specs.push(named(AggSpec::first(col), "first"));
            specs.push(named(AggSpec::last(col), "last"));
        }
        let agg = aggregator(specs, &b);
        prop_assert!(agg.folds_in_place());
        let stamp = |i: usize| (rows[i].5 .0, rows[i].5 .1 + 4 * i as u64);
        let (mut folded, mut merged) = (Vec::new(), Vec::new());
        agg.encode_row(&b, 0, stamp(0).0, stamp(0).1, &mut folded);
        merged.clone_from(&folded);
        // The state first (the sliding step's order), from the same first row.
        let (mut after, mut merged_after) = (folded.clone(), folded.clone());
        let mut scratch = Vec::new();
        let inputs = agg.inputs(&b);
        for row in 1..rows.len() {
            let (t, seq) = stamp(row);
            agg.fold_row(&mut folded, (&inputs, row), (t, seq), &mut scratch, Order::RecordFirst).expect("fold");
            agg.fold_row(&mut after, (&inputs, row), (t, seq), &mut scratch, Order::StateFirst).expect("fold");
            let mut one = Vec::new();
            agg.encode_row(&b, row, t, seq, &mut one);
            let mut out = Vec::new();
            agg.merge(&one, &merged, &mut out).expect("merge");
            merged = out;
            prop_assert_eq!(&folded, &merged, "after row {}", row);
            let mut out = Vec::new();
            agg.merge(&merged_after, &one, &mut out).expect("merge");
            merged_after = out;
            prop_assert_eq!(&after, &merged_after, "state first, after row {}", row);
        }
        // Finishing cuts fixed states at their offsets: the same arrays (NaN bits included)
        // or the same error (an integer sum beyond Int64) as walking them.
        let states = [folded.as_slice(), after.as_slice(), merged.as_slice()];
        match (agg.finish(&states), agg.finish_walk(&states)) {
            (Ok(cut), Ok(walked)) => {
                prop_assert_eq!(cut.len(), walked.len());
                for (c, w) in cut.iter().zip(&walked) {
                    let (c, w) = (c.to_data(), w.to_data());
                    prop_assert_eq!(&c, &w);
                    prop_assert_eq!(c.buffers(), w.buffers());
                }
            }
            (cut, walked) => prop_assert_eq!(cut.map(|_| ()).map_err(|e| e.to_string()), walked.map(|_| ()).map_err(|e| e.to_string())),
        }
    }
}

#[test]
fn layout_is_pinned() {
    let b = batch(vec![("x", a(Int64Array::from(vec![5])))]);
    let agg = aggregator(
        agg_specs!(count sum(x) first(x) collect(x, None, Overflow::Fail)),
        &b,
    );
    let mut s = Vec::new();
    agg.encode_row(&b, 0, -1, 2, &mut s);
    let mut want = vec![1u8];
    want.extend(1u64.to_le_bytes());
    want.push(1);
    want.extend(5i128.to_le_bytes());
    want.push(1);
    want.extend((-1i64).to_le_bytes());
    want.extend(2u64.to_le_bytes());
    want.extend(5i64.to_le_bytes());
    want.push(1);
    want.extend((-1i64).to_le_bytes());
    want.extend(2u64.to_le_bytes());
    want.extend(5i64.to_le_bytes());
    assert_eq!(s, want);
}

#[test]
fn bad_versions_and_truncations_are_errors() {
    let (b, agg) = sample();
    let state = fold(&agg, &b, &[(0, 1, 0), (1, 2, 1), (2, 3, 2)]).expect("merge");
    agg.finish(&[&state]).expect("a valid state finishes");
    let is_state_error = |r: crate::Result<_>| {
        matches!(
            r,
            Err(Error::InvalidWindowSpec {
                parameter: "state",
                ..
            })
        )
    };
    assert!(is_state_error(agg.finish(&[&[]]).map(|_| ())));
    let mut v2 = state.clone();
    v2[0] = 2;
    assert!(is_state_error(agg.finish(&[&v2]).map(|_| ())));
    for len in 0..state.len() {
        assert!(
            is_state_error(agg.finish(&[&state[..len]]).map(|_| ())),
            "truncated at {len}"
        );
        assert!(
            is_state_error(
                agg.merge(&state[..len], &state, &mut Vec::new())
                    .map(|_| ())
            ),
            "truncated at {len}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_bytes_never_panic(a in proptest::collection::vec(any::<u8>(), 0..300), b in proptest::collection::vec(any::<u8>(), 0..300)) {
        let (_, agg) = sample();
        let mut a = a;
        if let Some(first) = a.first_mut() {
            *first = 1;
        }
        let _ = agg.finish(&[&a, &b]);
        let mut out = Vec::new();
        let _ = agg.merge(&a, &b, &mut out);
        let _ = agg.merge(&a, &a, &mut out);
    }

    #[test]
    fn corrupted_valid_states_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        let (b, agg) = sample();
        let state = fold(&agg, &b, &[(0, 1, 0), (1, 2, 1), (2, 3, 2)]).expect("merge");
        let mut bad = state.clone();
        for (at, x) in flips {
            let i = at % bad.len();
            bad[i] ^= x;
        }
        bad[0] = 1;
        let _ = agg.finish(&[&bad]);
        let _ = agg.merge(&bad, &state, &mut Vec::new());
        let cut = cut % (bad.len() + 1);
        let _ = agg.finish(&[&bad[..cut]]);
        let _ = agg.merge(&state, &bad[..cut], &mut Vec::new());
    }
}
