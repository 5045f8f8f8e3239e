//! Session windows: the rules of docs/semantics.md sections 2, 5 and 6, and properties against the
//! complete-data definition.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common::{input, through_a_snapshot};
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use proptest::prelude::*;
use windowstore_core::agg::AggSpec;
use windowstore_core::emit::EmitMode;
use windowstore_core::processor::{Processor, WindowKind};
use windowstore_core::reject::Reason;
use windowstore_core::session::spec::OnInvalid;
use windowstore_core::session::{session_windows, GapSpec, SessionProcessor, SessionSpec};
use windowstore_core::time::Duration;

/// A record: key, time, value, gap (for the gap column; None = null).
pub(crate) type Rec = (i64, i64, i64, Option<i64>);
/// A window as compared here: key, start, end, count, sum, values in (time, arrival) order.
pub(crate) type Win = (i64, i64, i64, i64, i64, Vec<i64>);

pub(crate) fn schema() -> SchemaRef {
    crate::common::ktvg_schema()
}

pub(crate) fn batch(recs: &[Rec]) -> RecordBatch {
    crate::common::ktvg_batch(recs.iter().map(|r| [Some(r.0), Some(r.1), Some(r.2), r.3]))
}

pub(crate) fn aggs() -> Vec<AggSpec> {
    vec![
        AggSpec::count(),
        AggSpec::sum("v"),
        AggSpec::collect("v", None, windowstore_core::agg::Overflow::DropOldest),
    ]
}

pub(crate) fn fixed(gap: i64) -> GapSpec {
    GapSpec::Fixed(Duration::Ticks(gap))
}

pub(crate) fn column(max_gap: i64) -> GapSpec {
    GapSpec::Column {
        column: "g".into(),
        max_gap: Duration::Ticks(max_gap),
    }
}

fn processor(gap: GapSpec, grace: i64, emit: EmitMode) -> SessionProcessor {
    SessionProcessor::new(
        SessionSpec {
            gap,
            grace: Duration::Ticks(grace),
            retention: None,
            emit,
            on_invalid: OnInvalid::Drop,
        },
        input(),
        aggs(),
    )
    .unwrap()
}

/// Output rows as windows (plus whether each is a delete, for changelogs).
pub(crate) fn rows(b: &RecordBatch) -> Vec<(Win, bool)> {
    let i64s = |name: &str| {
        b.column_by_name(name)
            .unwrap()
            .as_primitive::<Int64Type>()
            .clone()
    };
    let (k, s, e, c, sum) = (
        i64s("k"),
        i64s("session_start"),
        i64s("session_end"),
        i64s("count"),
        i64s("sum_v"),
    );
    let list = b
        .column_by_name("collect_v")
        .unwrap()
        .as_list::<i32>()
        .clone();
    let op = b.column_by_name("op").map(|a| a.as_string::<i32>().clone());
    (0..b.num_rows())
        .map(|i| {
            let values = list.value(i).as_primitive::<Int64Type>().values().to_vec();
            let delete = op.as_ref().is_some_and(|o| o.value(i) == "delete");
            (
                (
                    k.value(i),
                    s.value(i),
                    e.value(i),
                    c.value(i),
                    sum.value(i),
                    values,
                ),
                delete,
            )
        })
        .collect()
}

pub(crate) fn sorted(mut w: Vec<Win>) -> Vec<Win> {
    w.sort();
    w
}

/// Runs records through a processor one batch per `chunk` records; returns every output row.
pub(crate) fn run<K: WindowKind>(
    p: &mut Processor<K>,
    recs: &[Rec],
    chunk: usize,
) -> Vec<(Win, bool)> {
    let mut out = rows(&p.process(&batch(&[])).unwrap());
    for c in recs.chunks(chunk.max(1)) {
        out.extend(rows(&p.process(&batch(c)).unwrap()));
    }
    out.extend(rows(&p.flush().unwrap().unwrap()));
    out
}

pub(crate) fn finals<K: WindowKind>(p: &mut Processor<K>, recs: &[Rec], chunk: usize) -> Vec<Win> {
    sorted(run(p, recs, chunk).into_iter().map(|(w, _)| w).collect())
}

fn complete(recs: &[Rec], gap: GapSpec) -> Vec<Win> {
    let r = session_windows(
        schema(),
        &[batch(recs)],
        input(),
        gap,
        None,
        aggs(),
        OnInvalid::Drop,
    )
    .unwrap();
    sorted(rows(&r.windows).into_iter().map(|(w, _)| w).collect())
}

/// The definition itself: per key, connected components of the intervals [t, t + g].
fn model(recs: &[Rec], gap: Option<i64>, max_gap: i64) -> Vec<Win> {
    let mut by_key: BTreeMap<i64, Vec<(i64, usize, i64, i64)>> = BTreeMap::new();
    for (arrival, &(k, t, v, g)) in recs.iter().enumerate() {
        let g = match gap {
            Some(g) => g,
            None => match g {
                Some(g) if g > 0 => g.min(max_gap),
                _ => continue,
            },
        };
        by_key.entry(k).or_default().push((t, arrival, g, v));
    }
    let mut out = Vec::new();
    for (k, mut rs) in by_key {
        rs.sort();
        let mut current: Option<(i64, i64, i64, Vec<i64>)> = None; // start, end, reach, values
        for (t, _, g, v) in rs {
            match &mut current {
                Some((_, end, reach, values)) if t <= *reach => {
                    *end = t;
                    *reach = (*reach).max(t + g);
                    values.push(v);
                }
                _ => {
                    if let Some((s, e, _, vs)) = current.take() {
                        out.push((k, s, e, vs.len() as i64, vs.iter().sum(), vs));
                    }
                    current = Some((t, t, t + g, vec![v]));
                }
            }
        }
        if let Some((s, e, _, vs)) = current {
            out.push((k, s, e, vs.len() as i64, vs.iter().sum(), vs));
        }
    }
    sorted(out)
}

/// Applies a changelog: the windows present at the end.
pub(crate) fn replay(log: &[(Win, bool)]) -> Vec<Win> {
    let mut current: BTreeMap<(i64, i64, i64), Win> = BTreeMap::new();
    for (w, delete) in log {
        let id = (w.0, w.1, w.2);
        if *delete {
            assert!(
                current.remove(&id).is_some(),
                "delete of a window never upserted: {w:?}"
            );
        } else {
            current.insert(id, w.clone());
        }
    }
    sorted(current.into_values().collect())
}

#[test]
fn fixed_gap_touching_records_share_a_session() {
    let recs = [(1, 0, 1, None), (1, 10, 2, None), (1, 21, 3, None)];
    let mut p = processor(fixed(10), 0, EmitMode::Final);
    assert_eq!(
        finals(&mut p, &recs, 10),
        vec![(1, 0, 10, 2, 3, vec![1, 2]), (1, 21, 21, 1, 3, vec![3])]
    );
    assert_eq!(
        complete(&recs, fixed(10)),
        finals(&mut processor(fixed(10), 0, EmitMode::Final), &recs, 1)
    );
}

#[test]
fn dynamic_gaps_are_order_independent() {
    // A long gap at 0 reaches the record at 50 whose own gap is tiny: one session either way.
    let a = (1, 0, 1, Some(100));
    let b = (1, 50, 2, Some(1));
    let want = vec![(1, 0, 50, 2, 3, vec![1, 2])];
    for recs in [[a, b], [b, a]] {
        let mut p = processor(column(1000), 1000, EmitMode::Final);
        assert_eq!(finals(&mut p, &recs, 1), want);
        assert_eq!(complete(&recs, column(1000)), want);
    }
}

#[test]
fn late_records_are_rejected_and_closed_sessions_never_change() {
    // gap 10, grace 5: [0, 0] closes once stream time > 15.
    let mut p = processor(fixed(10), 5, EmitMode::Final);
    let out = rows(
        &p.process(&batch(&[(1, 0, 1, None), (1, 10, 2, None)]))
            .unwrap(),
    );
    assert!(out.is_empty(), "[0,10] is one open session: {out:?}");
    let out = rows(
        &p.process(&batch(&[(2, 31, 9, None), (1, 3, 3, None)]))
            .unwrap(),
    );
    // Stream time 31 closes [0, 10] (reach 20 + grace 5 < 31): emitted; the record at 3 is late.
    assert_eq!(out, vec![((1, 0, 10, 2, 3, vec![1, 2]), false)]);
    assert_eq!(p.rejected_count(Reason::Late), 1);
    let rejected = p.rejected().unwrap().unwrap();
    assert_eq!(rejected.num_rows(), 1);
    assert_eq!(
        rejected
            .column_by_name("reason")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "late"
    );
    assert_eq!(
        rejected
            .column_by_name("t")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(0),
        3
    );
    let rest = finals(&mut p, &[], 1);
    assert_eq!(rest, vec![(2, 31, 31, 1, 9, vec![9])]);
}

#[test]
fn a_record_that_would_reopen_a_closed_session_in_store_is_late() {
    // gap 10, grace 0, retention 100: [0,0] closes at stream time 11 but stays in the store, so
    // a record at 10 (whose interval touches it) is late instead of reopening it, as Kafka would.
    let mut p = SessionProcessor::new(
        SessionSpec {
            gap: fixed(10),
            grace: Duration::Ticks(0),
            retention: Some(Duration::Ticks(100)),
            emit: EmitMode::Changes,
            on_invalid: OnInvalid::Drop,
        },
        input(),
        aggs(),
    )
    .unwrap();
    let log = run(
        &mut p,
        &[(1, 0, 1, None), (2, 11, 1, None), (1, 10, 2, None)],
        1,
    );
    assert_eq!(p.rejected_count(Reason::Late), 1, "{log:?}");
    assert_eq!(log.len(), 2, "[0,0] and [11,11] only: {log:?}");
    // With the minimum retention the closed session may already be gone: then the record
    // starts a session of its own, as if [0,0] did not exist (docs/semantics.md 2.6, like Kafka).
    let mut p = processor(fixed(10), 0, EmitMode::Changes);
    let log = run(
        &mut p,
        &[(1, 0, 1, None), (2, 11, 1, None), (1, 10, 2, None)],
        1,
    );
    assert_eq!(p.rejected_count(Reason::Late), 0);
    assert!(log.iter().any(|(w, _)| (w.1, w.2) == (10, 10)), "{log:?}");
}

#[test]
fn the_open_boundary_session_stays_findable() {
    // Kafka's default retention loses a session with end == stream time - gap - grace, though it
    // is still open; here a record at end + gap still merges with it.
    let mut p = processor(fixed(10), 5, EmitMode::Final);
    let recs = [(1, 0, 1, None), (2, 15, 1, None), (1, 10, 2, None)];
    assert_eq!(
        finals(&mut p, &recs, 1),
        vec![(1, 0, 10, 2, 3, vec![1, 2]), (2, 15, 15, 1, 1, vec![1])]
    );
    assert_eq!(p.rejected_count(Reason::Late), 0);
}

#[test]
fn changes_follow_kafka_forwarding() {
    let mut p = processor(fixed(10), 100, EmitMode::Changes);
    let got: Vec<(i64, i64, i64, bool)> = run(
        &mut p,
        &[
            (1, 5, 1, None),
            (1, 5, 2, None),
            (1, 2, 3, None),
            (1, 3, 4, None),
        ],
        10,
    )
    .into_iter()
    .map(|(w, d)| (w.1, w.2, w.3, d))
    .collect();
    assert_eq!(
        got,
        vec![
            (5, 5, 1, false),
            (5, 5, 2, false), // same instant as a [t, t] session: overwritten, no delete
            (5, 5, 2, true),
            (2, 5, 3, false),
            (2, 5, 3, true), // merged window equals the old one: Kafka still deletes first
            (2, 5, 4, false),
        ]
    );
}

#[test]
fn invalid_records_are_counted_never_lost() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("t", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
        Field::new("g", DataType::Int64, true),
    ]));
    let b = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec![
                None,
                Some("a"),
                Some("a"),
                Some("a"),
                Some("a"),
                Some("a"),
            ])),
            Arc::new(Int64Array::from(vec![
                Some(1),
                None,
                Some(2),
                Some(3),
                Some(i64::MAX - 1),
                Some(4),
            ])),
            Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5, 6])),
            Arc::new(Int64Array::from(vec![
                Some(5),
                Some(5),
                None,
                Some(0),
                Some(5),
                Some(500),
            ])),
        ],
    )
    .unwrap();
    let mut p = SessionProcessor::new(
        SessionSpec {
            gap: column(50),
            grace: Duration::Ticks(0),
            retention: None,
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        },
        input(),
        vec![AggSpec::count()],
    )
    .unwrap();
    p.process(&b).unwrap();
    let reasons: Vec<String> = {
        let r = p.rejected().unwrap().unwrap();
        let a = r
            .column_by_name("reason")
            .unwrap()
            .as_string::<i32>()
            .clone();
        (0..a.len()).map(|i| a.value(i).to_string()).collect()
    };
    assert_eq!(
        reasons,
        [
            "null_key",
            "null_time",
            "invalid_gap",
            "invalid_gap",
            "time_overflow"
        ]
    );
    assert_eq!(p.counters().kind.gap_clamped, 1);
    assert_eq!(
        p.counters().accepted + p.rejected_count(Reason::InvalidGap) + 3,
        6
    );

    let mut strict = SessionProcessor::new(
        SessionSpec {
            gap: column(50),
            grace: Duration::Ticks(0),
            retention: None,
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Error,
        },
        input(),
        vec![AggSpec::count()],
    )
    .unwrap();
    let err = strict.process(&b).unwrap_err();
    assert!(err.to_string().contains("null_key"), "{err}");
    assert_eq!(strict.counters().records, 0, "nothing applied");
}

#[test]
fn snapshot_mid_stream_then_continue_equals_never_stopping() {
    let recs: Vec<Rec> = (0..400)
        .map(|i| (i % 7, i * 3 + (i % 5), i, None))
        .collect();
    let batches: Vec<RecordBatch> = recs.chunks(50).map(batch).collect();
    for emit in [EmitMode::Final, EmitMode::Updates, EmitMode::Changes] {
        let want = run(&mut processor(fixed(9), 4, emit), &recs, 50);
        let got = through_a_snapshot(processor(fixed(9), 4, emit), &batches, 4, recs[199].1);
        assert_eq!(
            got.iter().flat_map(rows).collect::<Vec<_>>(),
            want,
            "{emit:?}"
        );
    }
}

fn recs_strategy(max_key: i64, dynamic: bool) -> impl Strategy<Value = Vec<Rec>> {
    let gap = if dynamic {
        prop_oneof![4 => (1i64..40).prop_map(Some), 1 => Just(None), 1 => (-3i64..=0).prop_map(Some)].boxed()
    } else {
        Just(None).boxed()
    };
    proptest::collection::vec((0..max_key, 0i64..300, -50i64..50, gap), 0..60)
}

proptest! {
    #![proptest_config(crate::common::cases(1000))]

    /// Complete mode equals the definition; the processor fed in time order equals complete
    /// mode; with unbounded grace any arrival order does too; changelogs replay to it.
    #[test]
    fn fixed_gap_sessions_match_the_definition(
        recs in recs_strategy(3, false),
        gap in 1i64..40,
        chunk in 1usize..20,
        shuffle in any::<proptest::sample::Index>(),
    ) {
        let want = model(&recs, Some(gap), gap);
        prop_assert_eq!(&complete(&recs, fixed(gap)), &want);
        let mut in_order = recs.clone();
        in_order.sort_by_key(|r| r.1);
        prop_assert_eq!(&finals(&mut processor(fixed(gap), 0, EmitMode::Final), &in_order, chunk), &want);
        let mut shuffled = recs.clone();
        let n = shuffled.len();
        if n > 1 { shuffled.rotate_left(shuffle.index(n)); shuffled.swap(0, n / 2); }
        // Collect orders equal times by arrival, so the model sees the order actually fed.
        let want_shuffled = model(&shuffled, Some(gap), gap);
        prop_assert_eq!(&finals(&mut processor(fixed(gap), 1_000, EmitMode::Final), &shuffled, chunk), &want_shuffled);
        for emit in [EmitMode::Updates, EmitMode::Changes] {
            let log = run(&mut processor(fixed(gap), 1_000, emit), &shuffled, chunk);
            prop_assert_eq!(&replay(&log), &want_shuffled);
        }
    }

    #[test]
    fn dynamic_gap_sessions_match_the_definition(
        recs in recs_strategy(2, true),
        max_gap in 1i64..30,
        chunk in 1usize..20,
        reverse in any::<bool>(),
    ) {
        let want = model(&recs, None, max_gap);
        prop_assert_eq!(&complete(&recs, column(max_gap)), &want);
        let mut order = recs.clone();
        if reverse { order.reverse(); }
        let mut p = processor(column(max_gap), 1_000, EmitMode::Final);
        prop_assert_eq!(&finals(&mut p, &order, chunk), &model(&order, None, max_gap));
        let invalid = recs.iter().filter(|r| !matches!(r.3, Some(g) if g > 0)).count() as u64;
        prop_assert_eq!(p.rejected_count(Reason::InvalidGap), invalid);
        prop_assert_eq!(p.counters().accepted + invalid, recs.len() as u64);
    }

    /// With finite grace and any order: accepted + rejected = input, and the accepted records
    /// form exactly the sessions of the definition over the accepted records.
    #[test]
    fn nothing_is_lost_with_late_records(
        recs in recs_strategy(2, false),
        gap in 1i64..20,
        grace in 0i64..30,
        chunk in 1usize..10,
    ) {
        let mut p = processor(fixed(gap), grace, EmitMode::Final);
        let got = finals(&mut p, &recs, chunk);
        let late = p.rejected_count(Reason::Late);
        prop_assert_eq!(p.counters().accepted + late, recs.len() as u64);
        let counted: i64 = got.iter().map(|w| w.3).sum();
        prop_assert_eq!(counted as u64, p.counters().accepted);
        let rejected = p.rejected().unwrap().unwrap();
        prop_assert_eq!(rejected.num_rows() as u64, late);
    }

    #[test]
    fn a_constant_gap_column_equals_the_fixed_gap(recs in recs_strategy(3, false), gap in 1i64..40) {
        let with_column: Vec<Rec> = recs.iter().map(|&(k, t, v, _)| (k, t, v, Some(gap))).collect();
        prop_assert_eq!(complete(&with_column, column(gap)), complete(&recs, fixed(gap)));
        let mut a = processor(column(gap), 0, EmitMode::Final);
        let mut b = processor(fixed(gap), 0, EmitMode::Final);
        prop_assert_eq!(finals(&mut a, &with_column, 7), finals(&mut b, &recs, 7));
    }
}
