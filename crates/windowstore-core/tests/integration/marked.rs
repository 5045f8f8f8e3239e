//! Sessions that a record starts or ends (docs/semantics.md section 2): complete mode and the
//! streaming processor against a brute-force model of the definition, in any arrival order
//! within the grace, with snapshots at random points; late records beyond the grace; the
//! contract's facts.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;
use windowstore_core::emit::EmitMode;
use windowstore_core::input::{InputSpec, Markers};
use windowstore_core::processor::Processor;
use windowstore_core::reject::Reason;
use windowstore_core::session::spec::OnInvalid;
use windowstore_core::session::{session_windows, CappedSessionSpec, GapSpec};
use windowstore_core::time::Duration;

use crate::capped::{arrival, emitted, recs_strategy, run_restoring};
use crate::session::{aggs, column, fixed, rows, sorted, Rec, Win};

const STARTS: u8 = 1;
const ENDS: u8 = 2;

type Marked = Processor<CappedSessionSpec>;

fn markers() -> Markers {
    Markers {
        starts: Some("s".into()),
        ends: Some("e".into()),
    }
}

fn input() -> InputSpec {
    InputSpec {
        markers: markers(),
        ..crate::common::input()
    }
}

/// Records with their marker columns: record `r` carries `flags[r.2]` (its value is its index).
fn batch(recs: &[Rec], flags: &[u8]) -> RecordBatch {
    let plain = crate::session::batch(recs);
    let marked = |f: u8| -> Arc<BooleanArray> {
        Arc::new(
            recs.iter()
                .map(|r| Some(flags[r.2 as usize] & f != 0))
                .collect(),
        )
    };
    let mut fields: Vec<Field> = plain
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("s", DataType::Boolean, true));
    fields.push(Field::new("e", DataType::Boolean, true));
    let mut columns = plain.columns().to_vec();
    columns.push(marked(STARTS));
    columns.push(marked(ENDS));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn processor(gap: GapSpec, grace: i64, cap: Option<i64>, emit: EmitMode) -> Marked {
    processor_of(gap, grace, cap, emit, true)
}

/// [`processor`], reading the marker columns only if `marked` (else a capped processor).
fn processor_of(
    gap: GapSpec,
    grace: i64,
    cap: Option<i64>,
    emit: EmitMode,
    marked: bool,
) -> Marked {
    let spec = crate::capped::spec(gap, grace, emit, cap, marked);
    Marked::new(spec, crate::common::input(), aggs()).unwrap()
}

/// Complete mode's windows and its count of sessions the cap ended.
fn complete(recs: &[Rec], flags: &[u8], gap: GapSpec, cap: Option<i64>) -> (Vec<Win>, u64) {
    let b = batch(recs, flags);
    let r = session_windows(
        b.schema(),
        &[b],
        input(),
        gap,
        cap.map(Duration::Ticks),
        aggs(),
        OnInvalid::Drop,
    )
    .unwrap();
    let windows = sorted(rows(&r.windows).into_iter().map(|(w, _)| w).collect());
    (windows, r.max_duration_cuts)
}

/// The definition, by brute force: per key, the distinct times in order; the records at a time
/// begin a new session if there is none, or a record at the session's last time ends it, or a
/// record at this time starts one, or the time is past the session's reach, or more than the
/// cap after its start (only this last one counts as a cut).
fn model(
    recs: &[Rec],
    flags: &[u8],
    gap: Option<i64>,
    max_gap: i64,
    cap: Option<i64>,
) -> (Vec<Win>, u64) {
    let cap = cap.unwrap_or(i64::MAX);
    let mut by_key: BTreeMap<i64, BTreeMap<i64, Vec<(i64, i64)>>> = BTreeMap::new();
    for &(k, t, v, g) in recs {
        let g = match (gap, g) {
            (Some(g), _) => g,
            (None, Some(g)) if g > 0 => g.min(max_gap),
            _ => continue,
        };
        by_key
            .entry(k)
            .or_default()
            .entry(t)
            .or_default()
            .push((v, g));
    }
    let (mut out, mut cuts) = (Vec::new(), 0);
    for (k, times) in by_key {
        // start, end, reach, ended, values
        let mut sessions: Vec<(i64, i64, i64, bool, Vec<i64>)> = Vec::new();
        for (t, records) in times {
            let group = records.iter().fold(0, |a, (v, _)| a | flags[*v as usize]);
            let reach = records.iter().map(|(_, g)| t + g).max().unwrap();
            let values = records.iter().map(|(v, _)| *v);
            let by_gap =
                |s: &(i64, i64, i64, bool, Vec<i64>)| t <= s.2 && !s.3 && group & STARTS == 0;
            match sessions.last_mut() {
                Some(s) if by_gap(s) && t - s.0 <= cap => {
                    s.1 = t;
                    s.2 = s.2.max(reach);
                    s.3 = group & ENDS != 0;
                    s.4.extend(values);
                }
                last => {
                    cuts += u64::from(last.is_some_and(|s| by_gap(s)));
                    sessions.push((t, t, reach, group & ENDS != 0, values.collect()));
                }
            }
        }
        for (s, e, _, _, vs) in sessions {
            out.push((k, s, e, vs.len() as i64, vs.iter().sum(), vs));
        }
    }
    (sorted(out), cuts)
}

/// Feeds `recs` in chunks, restoring the processor from its bytes before chunk `restore_at`.
fn run(
    p: Marked,
    recs: &[Rec],
    flags: &[u8],
    chunk: usize,
    restore_at: usize,
) -> (Vec<(Win, bool)>, Marked) {
    run_restoring(p, recs, |c| batch(c, flags), chunk, restore_at)
}

/// Marker flags by record index: mostly none, some starts, some ends, a few both.
fn flags_strategy() -> impl Strategy<Value = Vec<u8>> {
    let flag =
        prop_oneof![6 => Just(0u8), 2 => Just(STARTS), 2 => Just(ENDS), 1 => Just(STARTS | ENDS)];
    proptest::collection::vec(flag, 70)
}

proptest! {
    #![proptest_config(crate::common::cases(1000))]

    /// Within the grace, whatever the order: complete mode and every emit mode of the
    /// processor equal the definition, also through a snapshot, and count the same cuts; with
    /// markers or without (then capped: the kind of `max_duration` alone).
    #[test]
    fn within_the_grace_streaming_equals_the_definition(
        recs in recs_strategy(false),
        dynamic in recs_strategy(true),
        flags in flags_strategy(),
        marked in any::<bool>(),
        use_dynamic in any::<bool>(),
        gap in 1i64..25,
        cap in proptest::option::of(1i64..60),
        grace in 0i64..80,
        chunk in 1usize..12,
        restore_at in 0usize..8,
    ) {
        let (recs, g, spec_gap) = if use_dynamic {
            (dynamic, None, column(gap))
        } else {
            (recs, Some(gap), fixed(gap))
        };
        let (cap, flags) = if marked { (cap, flags) } else { (cap.or(Some(gap)), vec![0; 70]) };
        let fed = arrival(&recs, grace);
        let (want, cuts) = model(&fed, &flags, g, gap, cap);
        prop_assert_eq!(complete(&fed, &flags, spec_gap.clone(), cap), (want.clone(), cuts));
        for emit in [EmitMode::Final, EmitMode::Updates, EmitMode::Changes] {
            let p = processor_of(spec_gap.clone(), grace, cap, emit, marked);
            let (out, p) = run(p, &fed, &flags, chunk, restore_at);
            prop_assert_eq!(p.rejected_count(Reason::Late), 0);
            prop_assert_eq!(p.counters().kind.max_duration_cuts, cuts);
            prop_assert_eq!(&emitted(emit, out), &want, "{:?}", emit);
        }
    }

    /// With disorder beyond the grace: every record is accepted or rejected as late, never
    /// lost; each window is emitted once; the windows are the definition's over the accepted
    /// records.
    #[test]
    fn late_records_are_rejected_and_the_rest_are_exact(
        recs in recs_strategy(false),
        flags in flags_strategy(),
        gap in 1i64..25,
        cap in proptest::option::of(1i64..60),
        grace in 0i64..20,
        chunk in 1usize..12,
    ) {
        let fed = arrival(&recs, 150);
        let (out, mut p) = run(processor(fixed(gap), grace, cap, EmitMode::Final), &fed, &flags, chunk, usize::MAX);
        let got = sorted(out.into_iter().map(|(w, _)| w).collect());
        let late = p.rejected_count(Reason::Late);
        prop_assert_eq!(p.counters().accepted + late, fed.len() as u64);
        let gone = p.rejected().unwrap().map(|r| crate::capped::rows_values(&r)).unwrap_or_default();
        let accepted: Vec<Rec> = fed.iter().copied().filter(|r| !gone.contains(&r.2)).collect();
        prop_assert_eq!(&got, &model(&accepted, &flags, Some(gap), gap, cap).0);
    }
}

/// The final windows of `recs` fed in one call each, as `(start, end)` per call.
fn calls(p: &mut Marked, calls: &[(&[Rec], &[u8])]) -> Vec<Vec<(i64, i64)>> {
    calls
        .iter()
        .map(|(recs, flags)| {
            rows(&p.process(&batch(recs, flags)).unwrap())
                .into_iter()
                .map(|(w, _)| (w.1, w.2))
                .collect()
        })
        .collect()
}

#[test]
fn a_session_an_end_marker_ends_closes_at_its_end_plus_grace() {
    // gap 10, grace 2: u's [0, 3] ends at 3 and is emitted once stream time passes 5, not 15.
    let mut p = processor(fixed(10), 2, None, EmitMode::Final);
    let flags = [0, ENDS, 0];
    let out = calls(
        &mut p,
        &[
            (&[(1, 0, 0, None), (1, 3, 1, None)], &flags),
            (&[(2, 6, 2, None)], &flags),
        ],
    );
    assert_eq!(out, vec![vec![], vec![(0, 3)]]);
}

#[test]
fn the_session_before_a_start_marker_closes_just_before_it() {
    // gap 10, grace 2: a login at 6 starts [6, 6]; [0, 0] closes once stream time passes 5 + 2.
    let mut p = processor(fixed(10), 2, None, EmitMode::Final);
    let flags = [0, STARTS, 0];
    let out = calls(
        &mut p,
        &[
            (&[(1, 0, 0, None), (1, 6, 1, None)], &flags),
            (&[(2, 8, 2, None)], &flags),
        ],
    );
    assert_eq!(out, vec![vec![], vec![(0, 0)]]);
}

#[test]
fn a_start_marker_at_the_edge_of_the_grace_emits_the_session_it_closes() {
    // gap 10, grace 2: stream time 8; a login at 6 (= 8 - 2) is on time and closes [0, 0]
    // (its closing falls to 5, below 8 - 2): emitted by the same call.
    let mut p = processor(fixed(10), 2, None, EmitMode::Final);
    let flags = [0, 0, STARTS];
    let out = calls(
        &mut p,
        &[
            (&[(1, 0, 0, None), (2, 8, 1, None)], &flags),
            (&[(1, 6, 2, None)], &flags),
        ],
    );
    assert_eq!(out, vec![vec![], vec![(0, 0)]]);
    assert_eq!(p.rejected_count(Reason::Late), 0);
    let rest: Vec<(i64, i64)> = rows(&p.flush().unwrap().unwrap())
        .into_iter()
        .map(|(w, _)| (w.1, w.2))
        .collect();
    assert_eq!(sorted_pairs(rest), vec![(6, 6), (8, 8)]);
}

fn sorted_pairs(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.sort_unstable();
    v
}

#[test]
fn a_late_end_marker_within_the_grace_splits_the_open_session() {
    // gap 10, grace 5, changes: [0, 8], then an end marker at 3: delete [0, 8], upsert [0, 3]
    // and [8, 8].
    let mut p = processor(fixed(10), 5, None, EmitMode::Changes);
    let flags = [0, 0, ENDS];
    p.process(&batch(&[(1, 0, 0, None), (1, 8, 1, None)], &flags))
        .unwrap();
    let out = rows(&p.process(&batch(&[(1, 3, 2, None)], &flags)).unwrap());
    let ops: Vec<(i64, i64, bool)> = out.iter().map(|(w, delete)| (w.1, w.2, *delete)).collect();
    assert_eq!(ops, vec![(0, 8, true), (0, 3, false), (8, 8, false)]);
}
