//! Map-side partial sessions merged after a "shuffle" equal complete mode over all records,
//! however the records are split into parts.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common::input;
use crate::common::ktvg_schema as schema;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use proptest::prelude::*;
use windowstore_core::agg::AggSpec;
use windowstore_core::session::partial::{merge_session_partials, session_partials};
use windowstore_core::session::spec::OnInvalid;
use windowstore_core::session::{session_windows, GapSpec};
use windowstore_core::time::Duration;

/// key, time, value (None = null), gap (None = null).
type Rec = (i64, i64, Option<i64>, Option<i64>);
/// key, start, end, count, sum, min, max.
type Win = (i64, i64, i64, i64, Option<i64>, Option<i64>, Option<i64>);

fn batch(recs: &[Rec]) -> RecordBatch {
    crate::common::ktvg_batch(recs.iter().map(|r| [Some(r.0), Some(r.1), r.2, r.3]))
}

fn aggs() -> Vec<AggSpec> {
    vec![
        AggSpec::count(),
        AggSpec::sum("v"),
        AggSpec::min("v"),
        AggSpec::max("v"),
    ]
}

fn windows(b: &RecordBatch) -> Vec<Win> {
    let c = |i: usize| b.column(i).as_primitive::<Int64Type>();
    let opt = |a: &arrow_array::Int64Array, r: usize| a.is_valid(r).then(|| a.value(r));
    let mut out: Vec<Win> = (0..b.num_rows())
        .map(|r| {
            (
                c(0).value(r),
                c(1).value(r),
                c(2).value(r),
                c(3).value(r),
                opt(c(4), r),
                opt(c(5), r),
                opt(c(6), r),
            )
        })
        .collect();
    out.sort();
    out
}

fn complete(recs: &[Rec], gap: &GapSpec) -> Vec<Win> {
    let r = session_windows(
        schema(),
        &[batch(recs)],
        input(),
        gap.clone(),
        None,
        aggs(),
        OnInvalid::Drop,
    )
    .unwrap();
    windows(&r.windows)
}

/// Partials of each part, all merged in one call (as after a shuffle by key).
fn split_then_merged(parts: &[Vec<Rec>], gap: &GapSpec) -> Vec<Win> {
    let partials: Vec<RecordBatch> = parts
        .iter()
        .map(|part| {
            session_partials(
                schema(),
                &[batch(part)],
                input(),
                gap.clone(),
                aggs(),
                OnInvalid::Drop,
            )
            .unwrap()
            .partials
        })
        .collect();
    let merged = merge_session_partials(
        &schema(),
        partials[0].schema(),
        &partials,
        vec!["k".into()],
        aggs(),
    )
    .unwrap();
    windows(&merged)
}

fn fixed(gap: i64) -> GapSpec {
    GapSpec::Fixed(Duration::Ticks(gap))
}

#[test]
fn a_record_in_another_part_bridges_two_partials() {
    let parts = vec![
        vec![(1, 0, Some(1), None), (1, 20, Some(3), None)],
        vec![(1, 10, Some(2), None)],
    ];
    assert_eq!(
        split_then_merged(&parts, &fixed(10)),
        vec![(1, 0, 20, 3, Some(6), Some(1), Some(3))]
    );
    assert_eq!(
        split_then_merged(&parts, &fixed(9)),
        vec![
            (1, 0, 0, 1, Some(1), Some(1), Some(1)),
            (1, 10, 10, 1, Some(2), Some(2), Some(2)),
            (1, 20, 20, 1, Some(3), Some(3), Some(3)),
        ]
    );
}

#[test]
fn partials_keep_reach_and_state_and_reject_like_complete_mode() {
    let recs = vec![
        (1, 0, Some(1), Some(5)),
        (1, 3, None, Some(50)),
        (2, 7, Some(2), None),
    ];
    let gap = GapSpec::Column {
        column: "g".into(),
        max_gap: Duration::Ticks(20),
    };
    let p = session_partials(
        schema(),
        &[batch(&recs)],
        input(),
        gap,
        aggs(),
        OnInvalid::Drop,
    )
    .unwrap();
    let names: Vec<_> = p
        .partials
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        ["k", "session_start", "session_end", "ws_reach", "ws_state"]
    );
    // The clamped gap (50 -> 20) sets the reach: 3 + 20.
    assert_eq!(
        p.partials.column(3).as_primitive::<Int64Type>().values(),
        &[23]
    );
    assert_eq!(p.gap_clamped, 1);
    assert_eq!(p.rejected.num_rows(), 1);
    assert_eq!(
        p.rejected.column(4).as_string::<i32>().value(0),
        "invalid_gap"
    );
}

#[test]
fn merging_no_partials_gives_no_sessions() {
    let empty = session_partials(
        schema(),
        &[batch(&[])],
        input(),
        fixed(5),
        aggs(),
        OnInvalid::Drop,
    )
    .unwrap()
    .partials;
    let merged = merge_session_partials(
        &schema(),
        empty.schema(),
        &[empty],
        vec!["k".into()],
        aggs(),
    )
    .unwrap();
    assert_eq!(merged.num_rows(), 0);
    assert_eq!(merged.num_columns(), 7);
}

fn recs_strategy(dynamic: bool) -> impl Strategy<Value = Vec<(Rec, usize)>> {
    let gap = if dynamic {
        prop_oneof![4 => (1i64..40).prop_map(Some), 1 => Just(None)].boxed()
    } else {
        Just(None).boxed()
    };
    let value = prop_oneof![4 => (-50i64..50).prop_map(Some), 1 => Just(None)];
    proptest::collection::vec(((0i64..3, 0i64..300, value, gap), 0usize..4), 0..80)
}

fn parts_of(recs: &[(Rec, usize)]) -> (Vec<Rec>, Vec<Vec<Rec>>) {
    let mut parts = vec![Vec::new(); 4];
    for &(r, p) in recs {
        parts[p].push(r);
    }
    (recs.iter().map(|&(r, _)| r).collect(), parts)
}

proptest! {
    #![proptest_config(crate::common::cases(1000))]

    #[test]
    fn fixed_gaps_any_split_equals_complete_mode(recs in recs_strategy(false), gap in 1i64..40) {
        let (all, parts) = parts_of(&recs);
        prop_assert_eq!(split_then_merged(&parts, &fixed(gap)), complete(&all, &fixed(gap)));
    }

    #[test]
    fn dynamic_gaps_any_split_equals_complete_mode(recs in recs_strategy(true), max_gap in 1i64..30) {
        let (all, parts) = parts_of(&recs);
        let gap = GapSpec::Column { column: "g".into(), max_gap: Duration::Ticks(max_gap) };
        prop_assert_eq!(split_then_merged(&parts, &gap), complete(&all, &gap));
    }
}
