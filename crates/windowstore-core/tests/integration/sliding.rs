//! Sliding windows: the Kafka facts of docs/semantics.md section 4, and properties against a
//! brute-force model that rescans the raw records of every candidate window.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common::{input, through_a_snapshot};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use proptest::prelude::*;
use windowstore_core::agg::{AggSpec, Overflow};
use windowstore_core::emit::EmitMode;
use windowstore_core::reject::{OnInvalid, Reason};
use windowstore_core::sliding::{sliding_windows, SlidingProcessor, SlidingSpec};
use windowstore_core::time::Duration;
use windowstore_core::Error;

/// A record: key, time, value.
type Rec = (i64, i64, i64);
/// A window as compared here: key, start, end, window time, count, sum, max, values in
/// (time, arrival) order.
type Win = (i64, i64, i64, i64, i64, i64, i64, Vec<i64>);

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("t", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn batch(recs: &[Rec]) -> RecordBatch {
    let col = |f: &dyn Fn(&Rec) -> i64| -> ArrayRef {
        Arc::new(recs.iter().map(|r| Some(f(r))).collect::<Int64Array>())
    };
    RecordBatch::try_new(schema(), vec![col(&|r| r.0), col(&|r| r.1), col(&|r| r.2)]).unwrap()
}

fn aggs() -> Vec<AggSpec> {
    vec![
        AggSpec::count(),
        AggSpec::sum("v"),
        AggSpec::max("v"),
        AggSpec::collect("v", None, Overflow::DropOldest),
    ]
}

fn processor(d: i64, grace: i64, emit: EmitMode) -> SlidingProcessor {
    SlidingProcessor::new(
        SlidingSpec {
            time_difference: Duration::Ticks(d),
            grace: Duration::Ticks(grace),
            emit,
            on_invalid: OnInvalid::Drop,
        },
        input(),
        aggs(),
    )
    .unwrap()
}

/// Output rows as windows (plus the `op`, for changelogs).
fn rows(b: &RecordBatch) -> Vec<Win> {
    let i64s = |name: &str| {
        b.column_by_name(name)
            .unwrap()
            .as_primitive::<Int64Type>()
            .clone()
    };
    let cols = [
        "k",
        "window_start",
        "window_end",
        "window_time",
        "count",
        "sum_v",
        "max_v",
    ]
    .map(i64s);
    if let Some(op) = b.column_by_name("op") {
        assert!(op.as_string::<i32>().iter().all(|o| o == Some("upsert")));
    }
    let list = b.column_by_name("collect_v").unwrap().as_list::<i32>();
    (0..b.num_rows())
        .map(|i| {
            let v = |c: usize| cols[c].value(i);
            let values = list.value(i).as_primitive::<Int64Type>().values().to_vec();
            (v(0), v(1), v(2), v(3), v(4), v(5), v(6), values)
        })
        .collect()
}

fn sorted(mut w: Vec<Win>) -> Vec<Win> {
    w.sort();
    w
}

/// Runs records through a processor one batch per `chunk` records; returns every output row.
fn run(p: &mut SlidingProcessor, recs: &[Rec], chunk: usize) -> Vec<Win> {
    let mut out = rows(&p.process(&batch(&[])).unwrap());
    for c in recs.chunks(chunk.max(1)) {
        out.extend(rows(&p.process(&batch(c)).unwrap()));
    }
    out.extend(rows(&p.flush().unwrap().unwrap()));
    out
}

fn complete(recs: &[Rec], d: i64) -> Vec<Win> {
    let r = sliding_windows(
        schema(),
        &[batch(recs)],
        input(),
        Duration::Ticks(d),
        aggs(),
        OnInvalid::Drop,
    )
    .unwrap();
    assert_eq!(r.rejected.num_rows(), 0);
    sorted(rows(&r.windows))
}

/// The definition, by brute force: for every record time `u` of a key, the candidate windows
/// `[u - D, u]` and `[u + 1, u + 1 + D]`, each aggregated by rescanning every record of the
/// key; empty ones dropped, one window per start. Values in (time, arrival) order.
fn model(recs: &[Rec], d: i64) -> Vec<Win> {
    let mut out = Vec::new();
    let keys: BTreeSet<i64> = recs.iter().map(|r| r.0).collect();
    for k in keys {
        let mine: Vec<(usize, &Rec)> = recs.iter().enumerate().filter(|(_, r)| r.0 == k).collect();
        let mut starts = BTreeSet::new();
        for (_, r) in &mine {
            starts.insert(r.1 - d);
            starts.insert(r.1 + 1);
        }
        for s in starts {
            let mut inside: Vec<(i64, usize, i64)> = mine
                .iter()
                .filter(|(_, r)| s <= r.1 && r.1 <= s + d)
                .map(|&(i, r)| (r.1, i, r.2))
                .collect();
            if inside.is_empty() {
                continue;
            }
            inside.sort();
            let values: Vec<i64> = inside.iter().map(|x| x.2).collect();
            out.push((
                k,
                s,
                s + d,
                inside.iter().map(|x| x.0).max().unwrap(),
                values.len() as i64,
                values.iter().sum(),
                *values.iter().max().unwrap(),
                values,
            ));
        }
    }
    sorted(out)
}

/// Applies a changelog: the windows present at the end.
fn replay(log: &[Win]) -> Vec<Win> {
    let mut current: BTreeMap<(i64, i64), Win> = BTreeMap::new();
    for w in log {
        current.insert((w.0, w.1), w.clone());
    }
    sorted(current.into_values().collect())
}

/// Windows by start with their values, for the fact sets.
fn by_start(windows: &[Win]) -> Vec<(i64, Vec<i64>)> {
    windows.iter().map(|w| (w.1, w.7.clone())).collect()
}

#[test]
fn kafka_facts_d5000() {
    let recs = [(1, 8000, 1), (1, 9200, 2), (1, 12400, 3)];
    let want = vec![
        (3000, vec![1]),
        (4200, vec![1, 2]),
        (7400, vec![1, 2, 3]),
        (8001, vec![2, 3]),
        (9201, vec![3]),
    ];
    assert_eq!(by_start(&complete(&recs, 5000)), want);
    let mut p = processor(5000, 0, EmitMode::Final);
    assert_eq!(by_start(&sorted(run(&mut p, &recs, 1))), want);
    // Ends are inclusive: [7400, 12400] holds the record at 12400; window time = latest record.
    let w = complete(&recs, 5000);
    assert_eq!((w[2].2, w[2].3), (12400, 12400));
    assert_eq!((w[3].2, w[3].3), (13001, 12400));
}

#[test]
fn kafka_facts_d10_grace5() {
    let times = [10, 10, 14, 15, 20, 22, 30];
    let recs: Vec<Rec> = times
        .iter()
        .enumerate()
        .map(|(i, &t)| (1, t, i as i64 + 1))
        .collect();
    let want = vec![
        (0, vec![1, 2]),
        (4, vec![1, 2, 3]),
        (5, vec![1, 2, 3, 4]),
        (10, vec![1, 2, 3, 4, 5]),
        (11, vec![3, 4, 5]),
        (12, vec![3, 4, 5, 6]),
        (15, vec![4, 5, 6]),
        (16, vec![5, 6]),
        (20, vec![5, 6, 7]),
        (21, vec![6, 7]),
        (23, vec![7]),
    ];
    assert_eq!(by_start(&complete(&recs, 10)), want);
    for chunk in [1, 3, 7] {
        let mut p = processor(10, 5, EmitMode::Final);
        assert_eq!(by_start(&sorted(run(&mut p, &recs, chunk))), want);
        assert_eq!(p.counters().kind.late_window_update, 0);
    }
}

#[test]
fn late_records_are_dropped_whole_and_closed_windows_are_not_updated() {
    // D = 10, grace 5. After 40, close = 35: a record at 24 (24 + 10 < 35) is late.
    let mut p = processor(10, 5, EmitMode::Final);
    let mut got = run_open(&mut p, &[(1, 20, 1), (1, 28, 2), (1, 40, 3), (1, 24, 4)]);
    assert_eq!(p.rejected_count(Reason::Late), 1);
    assert_eq!(p.rejected().unwrap().unwrap().num_rows(), 1);
    // A record at 30 is accepted. It belongs to 20's right window [21, 31] (closed: skipped),
    // 40's left window [30, 40] (updated), 28's right window [29, 39] (new) and its own left
    // window [20, 30] (closed: not created); its right window [31, 41] holds 40 only.
    got.extend(run_open(&mut p, &[(1, 30, 5)]));
    assert_eq!(p.counters().kind.late_window_update, 2);
    got.extend(rows(&p.flush().unwrap().unwrap()));
    assert_eq!(
        by_start(&sorted(got)),
        vec![
            (10, vec![1]),
            (18, vec![1, 2]),
            (21, vec![2]),
            (29, vec![5]),
            (30, vec![5, 3]),
            (31, vec![3]),
        ]
    );
    assert_eq!(p.counters().accepted, 4);
}

#[test]
fn a_record_whose_windows_all_closed_is_rejected_not_lost() {
    // Stream time 100 (key 2), grace 0, D = 10: key 1's record at 95 is not late by the rule
    // (95 + 10 >= 100) but its only window [85, 95] is closed, so it would be in no window.
    let mut p = processor(10, 0, EmitMode::Final);
    let got = run(&mut p, &[(2, 100, 1), (1, 95, 2)], 1);
    assert_eq!(p.counters().kind.late_window_update, 1);
    assert_eq!(p.rejected_count(Reason::Late), 1);
    assert_eq!(p.counters().accepted, 1);
    assert!(got.iter().all(|w| w.0 == 2));
}

fn run_open(p: &mut SlidingProcessor, recs: &[Rec]) -> Vec<Win> {
    rows(&p.process(&batch(recs)).unwrap())
}

#[test]
fn bad_parameters_and_records() {
    let spec = |d: i64, grace: i64| SlidingSpec {
        time_difference: Duration::Ticks(d),
        grace: Duration::Ticks(grace),
        emit: EmitMode::Final,
        on_invalid: OnInvalid::Error,
    };
    for (d, g, name) in [(-1, 0, "time_difference"), (0, -1, "grace")] {
        let err = SlidingProcessor::new(spec(d, g), input(), aggs()).unwrap_err();
        assert!(
            matches!(err, Error::InvalidWindowSpec { parameter, .. } if parameter == name),
            "{err}"
        );
    }
    let err = sliding_windows(
        schema(),
        &[batch(&[])],
        input(),
        Duration::Ticks(-3),
        aggs(),
        OnInvalid::Error,
    )
    .unwrap_err();
    assert!(err.to_string().contains("time_difference"), "{err}");
    // A time whose window end overflows: an error naming the row, before anything changes.
    let mut p = SlidingProcessor::new(spec(10, 0), input(), aggs()).unwrap();
    let err = p
        .process(&batch(&[(1, 5, 1), (1, i64::MAX - 3, 2)]))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidRecord { row: 1, .. }), "{err}");
    assert_eq!(p.counters().records, 0);
    // Under drop it is counted and kept.
    let mut p = processor(10, 0, EmitMode::Final);
    run(&mut p, &[(1, 5, 1), (1, i64::MAX - 3, 2)], 2);
    assert_eq!(p.rejected_count(Reason::TimeOverflow), 1);
    assert_eq!(p.rejected().unwrap().unwrap().num_rows(), 1);
}

#[test]
fn snapshot_mid_stream_then_continue_equals_never_stopping() {
    let recs: Vec<Rec> = (0..300).map(|i| (i % 5, i * 3 + (i % 4), i)).collect();
    let batches: Vec<RecordBatch> = recs.chunks(40).map(batch).collect();
    for emit in [EmitMode::Final, EmitMode::Updates, EmitMode::Changes] {
        let want = run(&mut processor(12, 4, emit), &recs, 40);
        let got = through_a_snapshot(processor(12, 4, emit), &batches, 4, recs[159].1);
        assert_eq!(
            got.iter().flat_map(rows).collect::<Vec<_>>(),
            want,
            "{emit:?}"
        );
    }
    // A session snapshot is not a sliding one.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.snap");
    let mut s = windowstore_core::session::SessionProcessor::new(
        windowstore_core::session::SessionSpec {
            gap: windowstore_core::session::GapSpec::Fixed(Duration::Ticks(5)),
            grace: Duration::Ticks(0),
            retention: None,
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        },
        input(),
        aggs(),
    )
    .unwrap();
    s.process(&batch(&recs[..10])).unwrap();
    s.snapshot(&path).unwrap();
    let err = SlidingProcessor::restore(&path).unwrap_err();
    assert!(err.to_string().contains("not a sliding processor"), "{err}");
}

fn recs_strategy(max_key: i64, max_time: i64) -> impl Strategy<Value = Vec<Rec>> {
    proptest::collection::vec((0..max_key, 0..max_time), 0..50).prop_map(|v| {
        // Values are the arrival index, so a window's values name its record set.
        v.into_iter()
            .enumerate()
            .map(|(i, (k, t))| (k, t, i as i64))
            .collect()
    })
}

proptest! {
    #![proptest_config(crate::common::cases(1000))]

    /// Complete mode equals the brute-force definition (duplicates and D = 0 included); each
    /// distinct record set appears once and no window is empty; the processor fed in time order
    /// equals complete mode, with no skipped update.
    #[test]
    fn windows_match_the_definition(
        recs in recs_strategy(3, 120),
        d in prop_oneof![Just(0i64), 0i64..30],
        chunk in 1usize..20,
    ) {
        let want = model(&recs, d);
        let got = complete(&recs, d);
        prop_assert_eq!(&got, &want);
        let sets: BTreeSet<(i64, Vec<i64>)> = got.iter().map(|w| {
            let mut s = w.7.clone();
            s.sort();
            (w.0, s)
        }).collect();
        prop_assert_eq!(sets.len(), got.len(), "a record set appears twice");
        prop_assert!(got.iter().all(|w| w.4 > 0));
        let mut in_order = recs.clone();
        in_order.sort_by_key(|r| r.1);
        let mut p = processor(d, 0, EmitMode::Final);
        prop_assert_eq!(&sorted(run(&mut p, &in_order, chunk)), &model(&in_order, d));
        prop_assert_eq!(p.counters().kind.late_window_update, 0);
        prop_assert_eq!(p.counters().accepted, recs.len() as u64);
    }

    /// With unbounded grace any arrival order gives the definition's windows, and changelogs
    /// (coalesced or not) replay to them.
    #[test]
    fn any_order_with_unbounded_grace(
        recs in recs_strategy(2, 80),
        d in 0i64..25,
        chunk in 1usize..12,
    ) {
        let want = model(&recs, d);
        let mut p = processor(d, 10_000, EmitMode::Final);
        prop_assert_eq!(&sorted(run(&mut p, &recs, chunk)), &want);
        for emit in [EmitMode::Updates, EmitMode::Changes] {
            let log = run(&mut processor(d, 10_000, emit), &recs, chunk);
            prop_assert_eq!(&replay(&log), &want);
        }
    }

    /// With finite grace and any order: accepted + late = input; nothing emitted twice in final
    /// mode; the changelog replays to the final windows.
    #[test]
    fn nothing_is_lost_with_late_records(
        recs in recs_strategy(2, 200),
        d in 0i64..20,
        grace in 0i64..30,
        chunk in 1usize..10,
    ) {
        let mut p = processor(d, grace, EmitMode::Final);
        let finals = run(&mut p, &recs, chunk);
        let late = p.rejected_count(Reason::Late);
        prop_assert_eq!(p.counters().accepted + late, recs.len() as u64);
        prop_assert_eq!(p.rejected().unwrap().unwrap().num_rows() as u64, late);
        let ids: BTreeSet<(i64, i64)> = finals.iter().map(|w| (w.0, w.1)).collect();
        prop_assert_eq!(ids.len(), finals.len(), "a window emitted twice");
        let accepted: BTreeSet<i64> = finals.iter().flat_map(|w| w.7.iter().copied()).collect();
        prop_assert_eq!(accepted.len() as u64, p.counters().accepted);
        for emit in [EmitMode::Updates, EmitMode::Changes] {
            let log = run(&mut processor(d, grace, emit), &recs, chunk);
            prop_assert_eq!(replay(&log), sorted(finals.clone()));
        }
    }
}
