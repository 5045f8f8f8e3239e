//! The state layout: version byte, fixed sizes, pinned bytes, and corrupted input that errors
//! (or gives garbage) without panicking.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float32Array, Float64Array, Int64Array, StringArray, UInt16Array,
};
use proptest::prelude::*;

use super::{aggregator, batch, fold};
use crate::agg::{AggSpec, Aggregator, Overflow};
use crate::Error;

fn sample() -> (arrow_array::RecordBatch, Aggregator) {
    let b = batch(vec![
        (
            "x",
            Arc::new(Int64Array::from(vec![Some(5), None, Some(-2)])) as ArrayRef,
        ),
        (
            "f",
            Arc::new(Float64Array::from(vec![Some(1.5), None, Some(f64::NAN)])) as ArrayRef,
        ),
        (
            "g",
            Arc::new(Float32Array::from(vec![None, Some(2.5), Some(-1.0)])) as ArrayRef,
        ),
        (
            "u",
            Arc::new(UInt16Array::from(vec![Some(7), None, Some(9)])) as ArrayRef,
        ),
        (
            "b",
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])) as ArrayRef,
        ),
        (
            "s",
            Arc::new(StringArray::from(vec![Some("héllo"), None, Some("")])) as ArrayRef,
        ),
    ]);
    let mut specs = vec![
        AggSpec::count(),
        AggSpec::sum("x"),
        AggSpec::sum("f"),
        AggSpec::mean("u"),
        AggSpec::mean("g"),
    ];
    for c in ["x", "f", "g", "u", "b", "s"] {
        specs.extend([
            AggSpec::min(c),
            AggSpec::max(c),
            AggSpec::first(c),
            AggSpec::last(c),
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
        (
            "x",
            Arc::new(Int64Array::from(vec![Some(5), None])) as ArrayRef,
        ),
        (
            "f",
            Arc::new(Float64Array::from(vec![None, Some(2.0)])) as ArrayRef,
        ),
        (
            "b",
            Arc::new(BooleanArray::from(vec![None, Some(true)])) as ArrayRef,
        ),
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
fn layout_is_pinned() {
    let b = batch(vec![("x", Arc::new(Int64Array::from(vec![5])) as ArrayRef)]);
    let agg = aggregator(
        vec![
            AggSpec::count(),
            AggSpec::sum("x"),
            AggSpec::first("x"),
            AggSpec::collect("x", None, Overflow::Fail),
        ],
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
