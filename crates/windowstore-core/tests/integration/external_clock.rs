//! What the Spark streaming adapter relies on: a processor's state as bytes between calls,
//! stream time advanced by an outside clock (Spark's watermark), and the exact stream time at
//! which the next window closes (the timer it registers).
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common::input;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;
use windowstore_core::agg::AggSpec;
use windowstore_core::emit::EmitMode;
use windowstore_core::processor::{Processor, WindowKind};
use windowstore_core::reject::{OnInvalid, Reason};
use windowstore_core::session::{GapSpec, SessionProcessor, SessionSpec};
use windowstore_core::sliding::{SlidingProcessor, SlidingSpec};
use windowstore_core::time::Duration;

fn batch(recs: &[(i64, i64)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("t", DataType::Int64, true),
    ]));
    let col = |f: fn(&(i64, i64)) -> i64| -> ArrayRef {
        Arc::new(recs.iter().map(|r| Some(f(r))).collect::<Int64Array>())
    };
    RecordBatch::try_new(schema, vec![col(|r| r.0), col(|r| r.1)]).unwrap()
}

fn sessions(gap: i64, grace: i64, emit: EmitMode) -> SessionProcessor {
    let spec = SessionSpec {
        gap: GapSpec::Fixed(Duration::Ticks(gap)),
        grace: Duration::Ticks(grace),
        retention: None,
        emit,
        on_invalid: OnInvalid::Drop,
    };
    SessionProcessor::new(spec, input(), vec![AggSpec::count()]).unwrap()
}

fn sliding(d: i64, grace: i64, emit: EmitMode) -> SlidingProcessor {
    let spec = SlidingSpec {
        time_difference: Duration::Ticks(d),
        grace: Duration::Ticks(grace),
        emit,
        on_invalid: OnInvalid::Drop,
    };
    SlidingProcessor::new(spec, input(), vec![AggSpec::count()]).unwrap()
}

/// An output row: key, start, end, count, and the `op` when there is one.
type Row = (i64, i64, i64, i64, String);

/// Output rows as (key, start, end, count) plus the `op` when there is one.
fn rows(b: &RecordBatch) -> Vec<Row> {
    let col = |i: usize| b.column(i).as_primitive::<Int64Type>().clone();
    let (k, s, e) = (col(0), col(1), col(2));
    let n = b
        .column_by_name("count")
        .unwrap()
        .as_primitive::<Int64Type>();
    let op = b.column_by_name("op").map(|c| c.as_string::<i32>().clone());
    (0..b.num_rows())
        .map(|i| {
            let op = op
                .as_ref()
                .map_or(String::new(), |o| o.value(i).to_string());
            (k.value(i), s.value(i), e.value(i), n.value(i), op)
        })
        .collect()
}

/// The output rows of `batches` through `p`, going through bytes before every batch when
/// `via_bytes`.
fn run<K: WindowKind>(
    mut p: Processor<K>,
    batches: &[Vec<(i64, i64)>],
    via_bytes: bool,
) -> Vec<Vec<Row>> {
    let mut out = Vec::new();
    for recs in batches {
        if via_bytes {
            p = Processor::from_bytes(&p.to_bytes().unwrap()).unwrap();
        }
        out.push(rows(&p.process(&batch(recs)).unwrap()));
    }
    out
}

/// After `prefix`, advancing to `next_close() - 1` emits nothing and to `next_close()` emits
/// something; with no next close, no advance emits anything.
fn check_next_close<K: WindowKind>(p: &Processor<K>) {
    let bytes = p.to_bytes().unwrap();
    let emitted = |t: i64| {
        let mut q = Processor::<K>::from_bytes(&bytes).unwrap();
        q.advance(t).unwrap().map_or(0, |b| b.num_rows())
    };
    match p.next_close() {
        Some(t) => {
            assert_eq!(emitted(t - 1), 0, "a window closed before next_close {t}");
            assert!(emitted(t) > 0, "nothing closed at next_close {t}");
        }
        None => assert_eq!(emitted(i64::MAX / 4), 0),
    }
}

fn stream() -> impl Strategy<Value = Vec<Vec<(i64, i64)>>> {
    prop::collection::vec(prop::collection::vec((0i64..4, 0i64..300), 0..12), 1..8)
}

fn emit_mode() -> impl Strategy<Value = EmitMode> {
    prop_oneof![
        Just(EmitMode::Final),
        Just(EmitMode::Updates),
        Just(EmitMode::Changes)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Both kinds of processor, on the same stream: going through bytes before every batch
    /// changes no output.
    #[test]
    fn through_bytes_equals_never_stopping(
        batches in stream(), gap in 1i64..40, d in 0i64..40, grace in 0i64..60, emit in emit_mode()
    ) {
        let session = |via_bytes| run(sessions(gap, grace, emit), &batches, via_bytes);
        prop_assert_eq!(session(false), session(true), "sessions");
        let slide = |via_bytes| run(sliding(d, grace, emit), &batches, via_bytes);
        prop_assert_eq!(slide(false), slide(true), "sliding windows");
    }

    #[test]
    fn next_close_is_exact(batches in stream(), w in 1i64..40, grace in 0i64..60) {
        let mut s = sessions(w, grace, EmitMode::Final);
        let mut l = sliding(w, grace, EmitMode::Final);
        for recs in &batches {
            s.process(&batch(recs)).unwrap();
            l.process(&batch(recs)).unwrap();
            check_next_close(&s);
            check_next_close(&l);
        }
    }
}

#[test]
fn advancing_closes_and_makes_late() {
    let mut p = sessions(10, 5, EmitMode::Final);
    p.process(&batch(&[(1, 0), (1, 8)])).unwrap();
    // Reach 18, grace 5: the session closes once stream time passes 23.
    assert_eq!(p.next_close(), Some(24));
    assert_eq!(p.advance(23).unwrap().unwrap().num_rows(), 0);
    let closed = p.advance(24).unwrap().unwrap();
    assert_eq!(rows(&closed), vec![(1, 0, 8, 2, String::new())]);
    assert_eq!(p.next_close(), None);
    // A record whose session would be closed at once is late; it touches nothing.
    p.process(&batch(&[(2, 8)])).unwrap();
    assert_eq!(p.rejected_count(Reason::Late), 1);
    // Advancing backwards changes nothing.
    assert_eq!(p.advance(0).unwrap().unwrap().num_rows(), 0);
    assert_eq!(p.stream_time(), Some(24));
}

#[test]
fn advancing_before_any_input_keeps_the_time() {
    let mut p = sliding(10, 0, EmitMode::Final);
    assert!(p.advance(100).unwrap().is_none());
    p.process(&batch(&[(1, 50)])).unwrap();
    // 50 + 10 < 100: all of the record's windows had closed.
    assert_eq!(p.rejected_count(Reason::Late), 1);
}

#[test]
fn damaged_bytes_are_refused() {
    let mut p = sessions(10, 0, EmitMode::Final);
    p.process(&batch(&[(1, 0)])).unwrap();
    let mut bytes = p.to_bytes().unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    let err = SessionProcessor::from_bytes(&bytes).unwrap_err();
    assert!(format!("{err}").contains("snapshot"), "{err}");
    // Bytes of one kind do not restore the other.
    let good = p.to_bytes().unwrap();
    assert!(SlidingProcessor::from_bytes(&good).is_err());
}
