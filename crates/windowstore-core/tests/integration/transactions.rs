//! A processor call is all or nothing: every error path leaves the processor's bytes exactly as
//! they were (issue 12). Also the regressions of the processor layer: rejected rows travel in
//! snapshots, edited snapshots are refused, sliding windows stay exact after records whose
//! windows had closed.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common::input;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;
use windowstore_core::agg::{AggSpec, Overflow};
use windowstore_core::any_processor::{restore_any, AnyProcessor};
use windowstore_core::emit::EmitMode;
use windowstore_core::processor::{Processor, WindowKind};
use windowstore_core::reject::{OnInvalid, Reason};
use windowstore_core::session::{CappedSessionSpec, GapSpec, SessionProcessor, SessionSpec};
use windowstore_core::sliding::{SlidingProcessor, SlidingSpec};
use windowstore_core::store::snapshot_format;
use windowstore_core::time::Duration;
use windowstore_core::{Error, SessionStore};

/// A batch of (key, time, value) records; `None` values are nulls.
fn batch(recs: &[(Option<&str>, i64, i64)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("t", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let k: ArrayRef = Arc::new(recs.iter().map(|r| r.0).collect::<StringArray>());
    let t: ArrayRef = Arc::new(recs.iter().map(|r| Some(r.1)).collect::<Int64Array>());
    let v: ArrayRef = Arc::new(recs.iter().map(|r| Some(r.2)).collect::<Int64Array>());
    RecordBatch::try_new(schema, vec![k, t, v]).unwrap()
}

fn sessions(emit: EmitMode, on_invalid: OnInvalid, aggs: Vec<AggSpec>) -> SessionProcessor {
    let spec = SessionSpec {
        gap: GapSpec::Fixed(Duration::Ticks(10)),
        grace: Duration::Ticks(5),
        retention: None,
        emit,
        on_invalid,
    };
    SessionProcessor::new(spec, input(), aggs).unwrap()
}

fn sliding(d: i64, grace: i64, emit: EmitMode, aggs: Vec<AggSpec>) -> SlidingProcessor {
    let spec = SlidingSpec {
        time_difference: Duration::Ticks(d),
        grace: Duration::Ticks(grace),
        emit,
        on_invalid: OnInvalid::Drop,
    };
    SlidingProcessor::new(spec, input(), aggs).unwrap()
}

fn capped(emit: EmitMode, aggs: Vec<AggSpec>) -> Processor<CappedSessionSpec> {
    let spec = CappedSessionSpec {
        session: SessionSpec {
            gap: GapSpec::Fixed(Duration::Ticks(10)),
            grace: Duration::Ticks(5),
            retention: None,
            emit,
            on_invalid: OnInvalid::Drop,
        },
        max_duration: Some(Duration::Ticks(6)),
        markers: Default::default(),
    };
    Processor::new(spec, input(), aggs).unwrap()
}

fn collect_fail(max: usize) -> AggSpec {
    AggSpec::collect("v", Some(max), Overflow::Fail)
}

#[test]
fn a_collect_overflow_changes_nothing() {
    for emit in [EmitMode::Final, EmitMode::Updates, EmitMode::Changes] {
        let mut p = sessions(
            emit,
            OnInvalid::Drop,
            vec![AggSpec::count(), collect_fail(2)],
        );
        p.process(&batch(&[(Some("a"), 0, 1), (Some("b"), 3, 1)]))
            .unwrap();
        let before = p.to_bytes().unwrap();
        let counters = p.counters();
        // The third record of `a` overflows after the store, stream time and a rejection
        // (the null key) changed.
        let bad = batch(&[
            (None, 1, 0),
            (Some("a"), 2, 2),
            (Some("c"), 8, 1),
            (Some("a"), 3, 3),
        ]);
        let err = p.process(&bad).unwrap_err();
        assert!(matches!(err, Error::CollectOverflow { .. }), "{err}");
        assert_eq!(p.to_bytes().unwrap(), before, "{emit:?}");
        assert_eq!(p.counters(), counters);
        assert_eq!(p.rejected_count(Reason::NullKey), 0);
        assert_eq!(p.stream_time(), Some(3));
        // The processor stays usable: the same records without the overflow go through.
        p.process(&batch(&[(Some("a"), 2, 2)])).unwrap();
        assert_eq!(p.counters().accepted, counters.accepted + 1);
    }
}

#[test]
fn an_invalid_record_fails_before_anything_changes_and_names_its_row_in_the_whole_input() {
    let mut p = sessions(EmitMode::Final, OnInvalid::Error, vec![AggSpec::count()]);
    p.process(&batch(&[(Some("a"), 0, 1)])).unwrap();
    let before = p.to_bytes().unwrap();
    let chunks = [
        batch(&[(Some("a"), 1, 1), (Some("b"), 2, 1)]),
        batch(&[(Some("a"), 3, 1), (None, 4, 1)]),
    ];
    match p.process_all(&chunks).unwrap_err() {
        Error::InvalidRecord { row, reason } => assert_eq!((row, reason.as_str()), (3, "null_key")),
        other => panic!("{other}"),
    }
    assert_eq!(p.to_bytes().unwrap(), before);
}

#[test]
fn an_output_error_after_the_store_changed_rolls_everything_back() {
    // An Int64 sum that overflows fails when the output is built, after every record of the
    // call went into the store (and, here, after segments expired and windows closed).
    for emit in [EmitMode::Final, EmitMode::Updates] {
        let mut p = sessions(emit, OnInvalid::Drop, vec![AggSpec::sum("v")]);
        let mut recs: Vec<(Option<&str>, i64, i64)> =
            (0..50).map(|i| (Some("k"), i * 20, 1)).collect();
        p.process(&batch(&recs)).unwrap();
        let before = p.to_bytes().unwrap();
        let metrics = p.store_metrics();
        recs = (50..200).map(|i| (Some("k"), i * 20, 1)).collect();
        recs.push((Some("x"), 4_000, i64::MAX));
        recs.push((Some("x"), 4_001, i64::MAX));
        recs.push((Some("k"), 10_000, 1));
        let err = p.process(&batch(&recs)).unwrap_err();
        assert!(matches!(err, Error::Schema { .. }), "{err}");
        assert_eq!(p.to_bytes().unwrap(), before, "{emit:?}");
        assert_eq!(
            p.store_metrics().map(|m| m.live_sessions),
            metrics.map(|m| m.live_sessions)
        );
    }
}

#[test]
fn a_failed_first_call_leaves_the_processor_unbound() {
    let mut p = sessions(EmitMode::Final, OnInvalid::Error, vec![AggSpec::count()]);
    let before = p.to_bytes().unwrap();
    assert!(p.process(&batch(&[(None, 0, 0)])).is_err());
    assert_eq!(p.to_bytes().unwrap(), before);
    assert!(p.output_schema().is_none());
}

proptest! {
    #![proptest_config(crate::common::cases(200))]

    /// Any call that fails, at any point of any stream, leaves the bytes as they were; the
    /// stream then goes on as if the call had never been made.
    #[test]
    fn failed_calls_change_nothing(
        calls in prop::collection::vec(
            (prop::collection::vec((0u8..4, 0i64..400), 1..12), any::<bool>()),
            1..12,
        ),
        sliding_kind in any::<bool>(),
        emit in prop::sample::select(vec![EmitMode::Final, EmitMode::Updates, EmitMode::Changes]),
    ) {
        let keys = ["a", "b", "c", "d"];
        let aggs = vec![AggSpec::count(), AggSpec::sum("v")];
        let mut s = sessions(emit, OnInvalid::Drop, aggs.clone());
        let mut w = sliding(15, 10, emit, aggs);
        let mut s_clean = sessions(emit, OnInvalid::Drop, vec![AggSpec::count(), AggSpec::sum("v")]);
        let mut w_clean = sliding(15, 10, emit, vec![AggSpec::count(), AggSpec::sum("v")]);
        let mut t0 = 0;
        for (recs, poison) in calls {
            let recs: Vec<(Option<&str>, i64, i64)> =
                recs.iter().map(|&(k, t)| (Some(keys[k as usize]), t0 + t, 1)).collect();
            t0 += 100;
            let good = batch(&recs);
            if poison {
                // Two maximal values of one fresh key: the sum overflows when the output is
                // built (final mode builds it only when that window closes: advance then).
                let mut bad = recs.clone();
                // Later than anything so far, so that it is never late.
                let at = 1_000_000 + t0;
                bad.push((Some("poison"), at, i64::MAX));
                bad.push((Some("poison"), at, i64::MAX));
                bad.push((Some("a"), at + 1_000, 1));
                let bad = batch(&bad);
                if sliding_kind {
                    let before = w.to_bytes().unwrap();
                    prop_assert!(w.process(&bad).is_err());
                    prop_assert_eq!(w.to_bytes().unwrap(), before);
                } else {
                    let before = s.to_bytes().unwrap();
                    prop_assert!(s.process(&bad).is_err());
                    prop_assert_eq!(s.to_bytes().unwrap(), before);
                }
            }
            if sliding_kind {
                let a = w.process(&good).unwrap();
                let b = w_clean.process(&good).unwrap();
                prop_assert_eq!(a, b);
            } else {
                let a = s.process(&good).unwrap();
                let b = s_clean.process(&good).unwrap();
                prop_assert_eq!(a, b);
            }
        }
        if sliding_kind {
            prop_assert_eq!(w.to_bytes().unwrap(), w_clean.to_bytes().unwrap());
        } else {
            prop_assert_eq!(s.to_bytes().unwrap(), s_clean.to_bytes().unwrap());
        }
    }
}

/// (start, end, collected times) of a sliding output.
fn collected(b: &RecordBatch) -> Vec<(String, i64, i64, Vec<i64>)> {
    let k = b.column(0).as_string::<i32>();
    let s = b.column(1).as_primitive::<Int64Type>();
    let e = b.column(2).as_primitive::<Int64Type>();
    let c = b.column(4).as_list::<i32>();
    (0..b.num_rows())
        .map(|i| {
            let list = c.value(i);
            let list = list.as_primitive::<Int64Type>();
            (
                k.value(i).to_string(),
                s.value(i),
                e.value(i),
                (0..list.len()).map(|j| list.value(j)).collect(),
            )
        })
        .collect()
}

#[test]
fn sliding_windows_stay_exact_after_a_record_whose_left_window_had_closed() {
    // D 10, grace 0, one record per call: (b,13) (a,17) (b,15) (b,21) (b,28). The record at 15
    // arrives with its left window [5, 15] closed; it is accepted into [14, 24].
    let mut p = sliding(
        10,
        0,
        EmitMode::Final,
        vec![AggSpec::collect("t", None, Overflow::DropOldest)],
    );
    let mut out = Vec::new();
    for (k, t) in [("b", 13), ("a", 17), ("b", 15), ("b", 21), ("b", 28)] {
        out.extend(collected(&p.process(&batch(&[(Some(k), t, t)])).unwrap()));
    }
    out.extend(collected(&p.flush().unwrap().unwrap()));
    out.sort();
    let b: Vec<_> = out
        .iter()
        .filter(|w| w.0 == "b")
        .map(|w| (w.1, w.2, w.3.clone()))
        .collect();
    assert_eq!(
        b,
        vec![
            (3, 13, vec![13]),
            (11, 21, vec![13, 15, 21]),
            (14, 24, vec![15, 21]),
            (16, 26, vec![21]),
            (18, 28, vec![21, 28]),
            (22, 32, vec![28]),
        ]
    );
    // Of the windows holding a record, only the left window of 15, [5, 15], was closed on
    // arrival: one skipped update, and no record late.
    assert_eq!(p.counters().kind.late_window_update, 1);
    assert_eq!(p.rejected_count(Reason::Late), 0);
}

#[test]
fn rejected_rows_travel_in_snapshots() {
    let mut p = sessions(EmitMode::Final, OnInvalid::Drop, vec![AggSpec::count()]);
    p.process(&batch(&[
        (Some("a"), 100, 1),
        (None, 5, 1),
        (Some("a"), 0, 1),
    ]))
    .unwrap();
    let mut q = SessionProcessor::from_bytes(&p.to_bytes().unwrap()).unwrap();
    let rejected = q.rejected().unwrap().unwrap();
    let reasons = rejected.column(3).as_string::<i32>();
    let got: Vec<&str> = (0..reasons.len()).map(|i| reasons.value(i)).collect();
    assert_eq!(got, vec!["null_key", "late"]);
    assert_eq!(
        rejected
            .column(1)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec(),
        vec![5, 0]
    );
    // Taken once: the next snapshot has none.
    assert_eq!(
        SessionProcessor::from_bytes(&q.to_bytes().unwrap())
            .unwrap()
            .rejected()
            .unwrap()
            .unwrap()
            .num_rows(),
        0
    );
}

/// A processor's bytes with every stored window rewritten by `edit` (key, start, end, value),
/// re-encoded with a valid checksum, as an attacker or a bug in another writer would.
fn edited(bytes: &[u8], edit: impl Fn(&mut Vec<u8>, &mut i64, &mut i64, &mut Vec<u8>)) -> Vec<u8> {
    let path = std::path::Path::new("<test>");
    let (store, meta, tables) = snapshot_format::decode_tables(path, bytes).unwrap();
    let mut out = SessionStore::new(store.retention(), Some(store.segment_interval())).unwrap();
    for w in store.entries() {
        let (mut key, mut start, mut end, mut value) = w.to_owned_parts();
        edit(&mut key, &mut start, &mut end, &mut value);
        if start <= end {
            out.put(&key, start, end, &value).unwrap();
        }
    }
    snapshot_format::encode_tables(&out, &meta, &tables).unwrap()
}

/// The bytes of `p` after a call with `recs`.
fn bytes_after<K: WindowKind>(mut p: Processor<K>, recs: &[(Option<&str>, i64, i64)]) -> Vec<u8> {
    p.process(&batch(recs)).unwrap();
    p.to_bytes().unwrap()
}

fn refused(bytes: &[u8]) -> bool {
    matches!(
        SessionProcessor::from_bytes(bytes),
        Err(Error::Snapshot { .. })
    )
}

#[test]
fn edited_snapshots_are_refused_on_restore() {
    let p = sessions(
        EmitMode::Final,
        OnInvalid::Drop,
        vec![AggSpec::count(), AggSpec::sum("v")],
    );
    let good = bytes_after(
        p,
        &[(Some("a"), 0, 1), (Some("b"), 3, 1), (Some("b"), 7, 1)],
    );
    assert!(SessionProcessor::from_bytes(&good).is_ok());
    assert!(refused(
        &edited(&good, |k, _, _, _| *k = vec![0xff, 0x00, 0x13])
    ));
    assert!(refused(&edited(&good, |_, _, _, v| v.truncate(5))));
    assert!(refused(&edited(&good, |_, _, _, v| v.truncate(9))));
    assert!(refused(&edited(&good, |_, _, _, v| {
        let last = v.len() - 1;
        v[last] ^= 0x5a;
        v.push(1);
    })));
    // A window end (the value's first 8 bytes) beyond the session's reach.
    assert!(refused(&edited(&good, |_, _, _, v| v[..8]
        .copy_from_slice(&1_000i64.to_le_bytes()))));
}

#[test]
fn edited_capped_snapshots_are_refused_on_restore() {
    let p = capped(EmitMode::Final, vec![AggSpec::count(), AggSpec::sum("v")]);
    let good = bytes_after(
        p,
        &[(Some("a"), 0, 1), (Some("a"), 4, 1), (Some("a"), 9, 1)],
    );
    let restore = |b: &[u8]| Processor::<CappedSessionSpec>::from_bytes(b);
    assert!(restore(&good).is_ok());
    let refused = |b: &[u8]| matches!(restore(b), Err(Error::Snapshot { .. }));
    // A record cut in half, a cut flag that is neither 0 nor 1, a first record that is not at
    // the session's start, and a session longer than max_duration (6).
    assert!(refused(&edited(&good, |_, _, _, v| v.truncate(v.len() - 3))));
    assert!(refused(&edited(&good, |_, _, _, v| v[8] = 2)));
    assert!(refused(&edited(&good, |_, s, _, _| *s -= 1)));
    assert!(refused(&edited(&good, |_, _, _, v| v[..8]
        .copy_from_slice(&20i64.to_le_bytes()))));
}

proptest! {
    #![proptest_config(crate::common::cases(300))]

    /// Random edits of a snapshot's windows (key bytes, bounds, value bytes), re-checksummed,
    /// for each processor kind: a restore either refuses them or gives a processor that works;
    /// never a panic.
    #[test]
    fn restoring_edited_snapshots_never_panics(
        flips in prop::collection::vec((0usize..64, any::<u8>()), 1..4),
        target in 0u8..3,
        shift in -20i64..20,
        kind in 0u8..3,
    ) {
        let recs = [(Some("a"), 0, 1), (Some("b"), 3, 2), (Some("b"), 7, 3), (Some("c"), 30, 4)];
        let aggs = vec![AggSpec::count(), AggSpec::max("v")];
        let mut p: Box<dyn AnyProcessor> = match kind {
            0 => Box::new(sliding(10, 5, EmitMode::Updates, aggs)),
            1 => Box::new(sessions(EmitMode::Updates, OnInvalid::Drop, aggs)),
            _ => Box::new(capped(EmitMode::Updates, aggs)),
        };
        let first = batch(&recs);
        p.process_table(first.schema(), &[first], None, &mut |_| Ok(())).unwrap();
        let good = p.to_bytes().unwrap();
        let bytes = edited(&good, |k, s, e, v| {
            let buf = match target { 0 => k, 1 => v, _ => { *s += shift; *e += shift; return; } };
            for &(at, x) in &flips {
                if !buf.is_empty() {
                    let i = at % buf.len();
                    buf[i] ^= x;
                }
            }
        });
        let more = batch(&[(Some("a"), 5, 1), (Some("b"), 8, 1), (Some("d"), 40, 1)]);
        if let Ok(mut q) = restore_any(&bytes, None, None) {
            let _ = q.process_table(more.schema(), &[more], None, &mut |_| Ok(()));
            let _ = q.flush(&mut |_| Ok(()));
        }
    }
}
