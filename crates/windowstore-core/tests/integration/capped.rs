//! Sessions with a maximum duration (docs/semantics.md section 2): complete mode and the
//! streaming processor against a brute-force model of the definition, in any arrival order
//! within the grace, with snapshots at random points; late records beyond the grace.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::collections::BTreeMap;

use proptest::prelude::*;
use windowstore_core::emit::EmitMode;
use windowstore_core::input::Markers;
use windowstore_core::processor::Processor;
use windowstore_core::reject::Reason;
use windowstore_core::session::spec::OnInvalid;
use windowstore_core::session::{session_windows, CappedSessionSpec, GapSpec, SessionSpec};
use windowstore_core::time::Duration;

use crate::common::input;
use crate::session::{aggs, batch, finals, fixed, replay, rows, schema, sorted, Rec, Win};

type Capped = Processor<CappedSessionSpec>;

/// Sessions that keep their records: capped at `cap`, and with `marked`, started and ended by
/// the boolean columns `s` and `e`.
pub(crate) fn spec(
    gap: GapSpec,
    grace: i64,
    emit: EmitMode,
    cap: Option<i64>,
    marked: bool,
) -> CappedSessionSpec {
    CappedSessionSpec {
        session: SessionSpec {
            gap,
            grace: Duration::Ticks(grace),
            retention: None,
            emit,
            on_invalid: OnInvalid::Drop,
        },
        max_duration: cap.map(Duration::Ticks),
        markers: Markers {
            starts: marked.then(|| "s".to_string()),
            ends: marked.then(|| "e".to_string()),
        },
    }
}

fn processor(gap: GapSpec, grace: i64, max_duration: i64, emit: EmitMode) -> Capped {
    let spec = spec(gap, grace, emit, Some(max_duration), false);
    Capped::new(spec, input(), aggs()).unwrap()
}

/// Complete mode's windows and its count of sessions the cap ended.
fn complete(recs: &[Rec], gap: GapSpec, max_duration: i64) -> (Vec<Win>, u64) {
    let r = session_windows(
        schema(),
        &[batch(recs)],
        input(),
        gap,
        Some(Duration::Ticks(max_duration)),
        aggs(),
        OnInvalid::Drop,
    )
    .unwrap();
    let windows = sorted(rows(&r.windows).into_iter().map(|(w, _)| w).collect());
    (windows, r.max_duration_cuts)
}

/// The definition: per key in (time, arrival) order, a record joins the current session if
/// `t <= reach` and `t - start <= max_duration`, and starts a new one otherwise. Returns the
/// windows and how many sessions the cap ended.
fn model(recs: &[Rec], gap: Option<i64>, max_gap: i64, max_duration: i64) -> (Vec<Win>, u64) {
    let mut by_key: BTreeMap<i64, Vec<(i64, usize, i64, i64)>> = BTreeMap::new();
    for (arrival, &(k, t, v, g)) in recs.iter().enumerate() {
        let g = match (gap, g) {
            (Some(g), _) => g,
            (None, Some(g)) if g > 0 => g.min(max_gap),
            _ => continue,
        };
        by_key.entry(k).or_default().push((t, arrival, g, v));
    }
    let (mut out, mut cuts) = (Vec::new(), 0);
    for (k, mut rs) in by_key {
        rs.sort();
        let mut sessions: Vec<(i64, i64, i64, Vec<i64>)> = Vec::new(); // start, end, reach, values
        for (t, _, g, v) in rs {
            match sessions.last_mut() {
                Some((start, end, reach, values)) if t <= *reach && t - *start <= max_duration => {
                    *end = t;
                    *reach = (*reach).max(t + g);
                    values.push(v);
                }
                last => {
                    cuts += u64::from(last.is_some_and(|s| t <= s.2));
                    sessions.push((t, t, t + g, vec![v]));
                }
            }
        }
        for (s, e, _, vs) in sessions {
            out.push((k, s, e, vs.len() as i64, vs.iter().sum(), vs));
        }
    }
    (sorted(out), cuts)
}

#[test]
fn the_cap_cuts_a_long_session_in_time_order() {
    // gap 10, max_duration 20: records every 5 ticks from 0 to 50.
    let recs: Vec<Rec> = (0..=10).map(|i| (1, i * 5, i, None)).collect();
    let want = vec![
        (1, 0, 20, 5, 10, vec![0, 1, 2, 3, 4]),
        (1, 25, 45, 5, 35, vec![5, 6, 7, 8, 9]),
        (1, 50, 50, 1, 10, vec![10]),
    ];
    assert_eq!(complete(&recs, fixed(10), 20), (want.clone(), 2));
    let mut p = processor(fixed(10), 0, 20, EmitMode::Final);
    assert_eq!(finals(&mut p, &recs, 1), want);
    assert_eq!(p.counters().kind.max_duration_cuts, 2);
}

#[test]
fn an_earlier_record_moves_every_later_cut() {
    // gap 10, max_duration 20, grace 100: 10, 20, 30 make [10, 30]; then 5 arrives and the
    // cap now cuts before 30: [5, 20] and [30, 30].
    let mut p = processor(fixed(10), 100, 20, EmitMode::Updates);
    let first = rows(
        &p.process(&batch(&[
            (1, 10, 1, None),
            (1, 20, 2, None),
            (1, 30, 3, None),
        ]))
        .unwrap(),
    );
    assert_eq!(first, vec![((1, 10, 30, 3, 6, vec![1, 2, 3]), false)]);
    assert_eq!(p.counters().kind.max_duration_cuts, 0);
    let second = rows(&p.process(&batch(&[(1, 5, 4, None)])).unwrap());
    assert_eq!(
        second,
        vec![
            ((1, 10, 30, 3, 6, vec![1, 2, 3]), true),
            ((1, 5, 20, 3, 7, vec![4, 1, 2]), false),
            ((1, 30, 30, 1, 3, vec![3]), false),
        ]
    );
    assert_eq!(p.counters().kind.max_duration_cuts, 1);
}

#[test]
fn a_record_that_would_change_a_closed_session_is_late() {
    // gap 10, grace 0, max_duration 100: [0, 5] closes once stream time passes 15.
    let mut p = processor(fixed(10), 0, 100, EmitMode::Final);
    let out = finals(
        &mut p,
        &[
            (1, 0, 1, None),
            (1, 5, 2, None),
            (2, 40, 3, None),
            (1, 9, 4, None),
        ],
        1,
    );
    assert_eq!(
        out,
        vec![(1, 0, 5, 2, 3, vec![1, 2]), (2, 40, 40, 1, 3, vec![3])]
    );
    assert_eq!(p.rejected_count(Reason::Late), 1);
}

#[test]
fn a_snapshot_holds_the_records_and_restores_them() {
    let recs: Vec<Rec> = (0..60).map(|i| (i % 3, (i * 7) % 50, i, None)).collect();
    let (want, cuts) = model(&recs, Some(6), 6, 15);
    let mut p = processor(fixed(6), 100, 15, EmitMode::Final);
    for c in recs[..30].chunks(4) {
        assert!(rows(&p.process(&batch(c)).unwrap()).is_empty());
    }
    let mut q = Capped::from_bytes(&p.to_bytes().unwrap()).unwrap();
    assert_eq!(q.to_bytes().unwrap(), p.to_bytes().unwrap());
    assert_eq!(finals(&mut q, &recs[30..], 7), want);
    assert_eq!(q.counters().kind.max_duration_cuts, cuts);
}

/// Keys, times and values (the value is the arrival number, so records can be told apart), a
/// gap column value, and a delay within which each record may arrive late.
pub(crate) fn recs_strategy(dynamic: bool) -> impl Strategy<Value = Vec<(Rec, i64)>> {
    let gap = if dynamic {
        prop_oneof![5 => (1i64..30).prop_map(Some), 1 => Just(None)].boxed()
    } else {
        Just(None).boxed()
    };
    proptest::collection::vec(((0i64..3, 0i64..200, gap), 0i64..1_000), 0..70).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, ((k, t, g), delay))| ((k, t, i as i64, g), delay))
            .collect()
    })
}

/// The records in arrival order when each is delayed by `delay % (bound + 1)` past its time:
/// every record then arrives within `bound` of stream time.
pub(crate) fn arrival(recs: &[(Rec, i64)], bound: i64) -> Vec<Rec> {
    let mut order: Vec<(i64, usize)> = recs
        .iter()
        .enumerate()
        .map(|(i, (r, d))| (r.1 + d % (bound + 1), i))
        .collect();
    order.sort();
    order.into_iter().map(|(_, i)| recs[i].0).collect()
}

/// Feeds `recs` in chunks made into batches by `batch`, restoring the processor from its bytes
/// before chunk `restore_at`.
pub(crate) fn run_restoring(
    mut p: Capped,
    recs: &[Rec],
    batch: impl Fn(&[Rec]) -> arrow_array::RecordBatch,
    chunk: usize,
    restore_at: usize,
) -> (Vec<(Win, bool)>, Capped) {
    let mut out = Vec::new();
    for (i, c) in recs.chunks(chunk).enumerate() {
        if i == restore_at {
            p = Capped::from_bytes(&p.to_bytes().unwrap()).unwrap();
        }
        out.extend(rows(&p.process(&batch(c)).unwrap()));
    }
    if let Some(b) = p.flush().unwrap() {
        out.extend(rows(&b));
    }
    (out, p)
}

/// The windows an output of `emit` mode stands for: the rows of `final`, the changelog replayed.
pub(crate) fn emitted(emit: EmitMode, out: Vec<(Win, bool)>) -> Vec<Win> {
    if emit == EmitMode::Final {
        sorted(out.into_iter().map(|(w, _)| w).collect())
    } else {
        replay(&out)
    }
}

proptest! {
    #![proptest_config(crate::common::cases(1000))]

    /// With disorder beyond the grace: every record is accepted or rejected as late, never
    /// lost; each window is emitted once; the windows are the definition's over the accepted
    /// records.
    #[test]
    fn late_records_are_rejected_and_the_rest_are_exact(
        recs in recs_strategy(false),
        gap in 1i64..25,
        max_duration in 1i64..60,
        grace in 0i64..20,
        chunk in 1usize..12,
    ) {
        let fed = arrival(&recs, 150);
        let mut p = processor(fixed(gap), grace, max_duration, EmitMode::Final);
        let got = finals(&mut p, &fed, chunk);
        let late = p.rejected_count(Reason::Late);
        prop_assert_eq!(p.counters().accepted + late, fed.len() as u64);
        let rejected = p.rejected().unwrap().unwrap();
        let gone: Vec<i64> = rows_values(&rejected);
        let accepted: Vec<Rec> = fed.iter().copied().filter(|r| !gone.contains(&r.2)).collect();
        prop_assert_eq!(&got, &model(&accepted, Some(gap), gap, max_duration).0);
    }
}

pub(crate) fn rows_values(b: &arrow_array::RecordBatch) -> Vec<i64> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    b.column_by_name("v")
        .unwrap()
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}
