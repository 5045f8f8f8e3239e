//! The batched path of the session processors (`processor::batched`, issue 13) against its
//! model, the record-by-record path (sliding windows have one path: `sliding::rule`): on
//! random streams with disorder within and beyond the grace, invalid records, fixed and
//! dynamic gaps, every emit mode, order-sensitive aggregates (float sums, bounded `collect`,
//! first/last), random call sizes and snapshots at random points, every call gives the same
//! output, the same rejected rows, the same counters and store metrics, and the same snapshot
//! bytes.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::sync::Arc;

use crate::common::input;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use proptest::prelude::*;
use windowstore_core::agg::{AggSpec, Overflow};
use windowstore_core::emit::EmitMode;
use windowstore_core::processor::{Processor, WindowKind};
use windowstore_core::session::spec::OnInvalid;
use windowstore_core::session::{CappedSessionSpec, GapSpec, SessionProcessor, SessionSpec};
use windowstore_core::time::Duration;

/// A record: key, time (None: null), float value, gap (None: null).
type Rec = (u8, Option<i64>, f64, Option<i64>);

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("t", DataType::Int64, true),
        Field::new("x", DataType::Float64, true),
        Field::new("g", DataType::Int64, true),
        Field::new("s", DataType::Boolean, true),
        Field::new("e", DataType::Boolean, true),
    ]))
}

/// Whether a record starts (`s`) or ends (`e`) a session, for the kinds that read markers: a
/// function of its value, about one record in seven and one in five.
fn marks(r: &Rec) -> (bool, bool) {
    let v = (r.2 * 700.0).round() as i64;
    (v.rem_euclid(7) == 0, v.rem_euclid(5) == 1)
}

fn batch(recs: &[Rec]) -> RecordBatch {
    let k: ArrayRef = Arc::new(
        recs.iter()
            .map(|r| Some(format!("user-{}", r.0)))
            .collect::<StringArray>(),
    );
    let t: ArrayRef = Arc::new(recs.iter().map(|r| r.1).collect::<Int64Array>());
    let x: ArrayRef = Arc::new(recs.iter().map(|r| Some(r.2)).collect::<Float64Array>());
    let g: ArrayRef = Arc::new(recs.iter().map(|r| r.3).collect::<Int64Array>());
    let s: ArrayRef = Arc::new(
        recs.iter()
            .map(|r| Some(marks(r).0))
            .collect::<BooleanArray>(),
    );
    let e: ArrayRef = Arc::new(
        recs.iter()
            .map(|r| Some(marks(r).1))
            .collect::<BooleanArray>(),
    );
    RecordBatch::try_new(schema(), vec![k, t, x, g, s, e]).unwrap()
}

/// The aggregates: all of fixed width (a record folds into a state in place), or with lists.
fn aggs(fixed: bool) -> Vec<AggSpec> {
    let mut aggs = vec![AggSpec::count(), AggSpec::sum("x"), AggSpec::mean("x")];
    if fixed {
        aggs.extend([
            AggSpec::min("x"),
            AggSpec::max("t"),
            AggSpec::first("x"),
            AggSpec::last("t"),
            AggSpec::sum("g"),
        ]);
    } else {
        aggs.extend([
            AggSpec::first("x"),
            AggSpec::last("x"),
            AggSpec::collect("x", Some(3), Overflow::DropOldest),
            AggSpec::collect_all("t", None, Overflow::DropOldest),
        ]);
    }
    aggs
}

fn processor(
    gap: GapSpec,
    grace: i64,
    emit: EmitMode,
    batched: bool,
    fixed: bool,
) -> SessionProcessor {
    let spec = SessionSpec {
        gap,
        grace: Duration::Ticks(grace),
        retention: None,
        emit,
        on_invalid: OnInvalid::Drop,
    };
    let mut p = SessionProcessor::new(spec, input(), aggs(fixed)).unwrap();
    p.set_batched(batched);
    p
}

/// Everything a caller can see of a processor, but the output.
fn observed<K: WindowKind>(p: &mut Processor<K>) -> (Vec<u8>, Vec<(&'static str, u64)>, Vec<u64>) {
    let bytes = p.to_bytes().unwrap();
    let m = p.store_metrics().unwrap();
    let store = vec![
        m.live_sessions,
        m.live_keys,
        m.segments,
        m.value_bytes,
        m.puts,
        m.removes,
        m.expired_puts,
        m.expired_sessions,
    ];
    (bytes, p.counters().pairs(), store)
}

/// Feeds `recs` in calls of the given sizes to a batched processor and to the record-path
/// model, comparing everything after each call; restores both from bytes after call
/// `snapshot_at`. Returns how many calls took the batched path.
fn compare(
    recs: &[Rec],
    sizes: &[usize],
    gap: GapSpec,
    grace: i64,
    (emit, fixed): (EmitMode, bool),
    snapshot_at: usize,
) -> Result<u64, TestCaseError> {
    let make = |batched: bool| processor(gap.clone(), grace, emit, batched, fixed);
    compare_kind(recs, sizes, make, snapshot_at)
}

/// [`compare`] for processors of any kind that `make(batched)` makes.
fn compare_kind<K: WindowKind>(
    recs: &[Rec],
    sizes: &[usize],
    make: impl Fn(bool) -> Processor<K>,
    snapshot_at: usize,
) -> Result<u64, TestCaseError> {
    let mut fast = make(true);
    let mut model = make(false);
    for p in [&mut fast, &mut model] {
        p.process(&batch(&[])).unwrap();
    }
    let (mut at, mut call, mut batched) = (0, 0, 0);
    while at < recs.len() {
        let n = sizes[call % sizes.len()].min(recs.len() - at);
        let b = batch(&recs[at..at + n]);
        at += n;
        call += 1;
        let before = fast.batched_calls();
        let got = fast.process(&b).unwrap();
        batched += fast.batched_calls() - before;
        let want = model.process(&b).unwrap();
        prop_assert_eq!(&got, &want, "output of call {}", call);
        prop_assert_eq!(
            observed(&mut fast),
            observed(&mut model),
            "state after call {}",
            call
        );
        if call % 3 == 0 {
            prop_assert_eq!(fast.rejected().unwrap(), model.rejected().unwrap());
        }
        if call == snapshot_at {
            fast = Processor::from_bytes(&fast.to_bytes().unwrap()).unwrap();
            model = Processor::from_bytes(&model.to_bytes().unwrap()).unwrap();
            model.set_batched(false);
        }
    }
    prop_assert_eq!(fast.flush().unwrap(), model.flush().unwrap());
    prop_assert_eq!(observed(&mut fast), observed(&mut model));
    prop_assert_eq!(fast.rejected().unwrap(), model.rejected().unwrap());
    Ok(batched)
}

/// Records of a few keys (in a quarter of the streams, of many: nearly every record its own
/// key, so that the batched path applies most slices record by record), time mostly
/// advancing, some delayed within `grace`, a few delayed beyond it (late) in half the streams,
/// a few with a null time or an unusable gap.
fn stream(grace: i64) -> impl Strategy<Value = Vec<Rec>> {
    let wide = prop_oneof![3 => Just(false), 1 => Just(true)];
    (any::<bool>(), wide, records(grace)).prop_map(move |(late, wide, mut recs)| {
        for (i, r) in recs.iter_mut().enumerate() {
            if !late {
                r.1 = r.1.map(|t| t.max(r.4 - grace));
            }
            if wide {
                r.0 = r.0.wrapping_add((i as u8).wrapping_mul(37));
            }
        }
        recs.into_iter().map(|r| (r.0, r.1, r.2, r.3)).collect()
    })
}

/// A record and the time it would have had undelayed.
type Delayed = (u8, Option<i64>, f64, Option<i64>, i64);

/// [`stream`]'s records with late ones, each with the time it would have had undelayed.
fn records(grace: i64) -> impl Strategy<Value = Vec<Delayed>> {
    let rec = (
        0u8..6,
        0i64..6,
        prop_oneof![12 => Just(0i64), 4 => 0..=grace, 1 => grace..grace + 60],
        prop_oneof![30 => Just(false), 1 => Just(true)],
        -100i64..100,
        prop_oneof![8 => (1i64..40).prop_map(Some), 1 => Just(None), 1 => Just(Some(-2))],
    );
    proptest::collection::vec(rec, 0..220).prop_map(|raw| {
        let mut now = 1_000i64;
        raw.into_iter()
            .map(|(k, step, delay, null_time, x, g)| {
                now += step;
                let t = (!null_time).then_some(now - delay);
                // Values with many significant bits, so float sums depend on their order.
                (k, t, x as f64 / 7.0 + 0.1, g, now)
            })
            .collect()
    })
}

fn gap_spec(dynamic: bool, gap: i64) -> GapSpec {
    if dynamic {
        GapSpec::Column {
            column: "g".into(),
            max_gap: Duration::Ticks(gap),
        }
    } else {
        GapSpec::Fixed(Duration::Ticks(gap))
    }
}

/// A grace and a [`stream`] of that grace.
fn graced_stream() -> impl Strategy<Value = (i64, Vec<Rec>)> {
    (0i64..30).prop_flat_map(|g| (Just(g), stream(g)))
}

/// The sizes of a stream's calls, taken in turn.
fn call_sizes() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(1usize..90, 1..4)
}

fn emit_mode() -> impl Strategy<Value = EmitMode> {
    prop_oneof![
        2 => Just(EmitMode::Final),
        1 => Just(EmitMode::Updates),
        1 => Just(EmitMode::Changes),
    ]
}

proptest! {
    #![proptest_config(crate::common::cases(400))]

    #[test]
    fn the_batched_path_equals_the_record_path(
        (grace, recs) in graced_stream(),
        sizes in call_sizes(),
        dynamic in any::<bool>(),
        gap in 1i64..40,
        emit in emit_mode(),
        fixed in any::<bool>(),
        snapshot_at in 0usize..8,
    ) {
        compare(&recs, &sizes, gap_spec(dynamic, gap), grace, (emit, fixed), snapshot_at)?;
    }
}

/// A processor of sessions that keep their records (with a cap, markers, or both).
fn capped(
    gap: GapSpec,
    grace: i64,
    (emit, fixed): (EmitMode, bool),
    (cap, marked): (Option<i64>, bool),
    batched: bool,
) -> Processor<CappedSessionSpec> {
    let spec = crate::capped::spec(gap, grace, emit, cap, marked);
    let mut p = Processor::new(spec, input(), aggs(fixed)).unwrap();
    p.set_batched(batched);
    p
}

proptest! {
    #![proptest_config(crate::common::cases(300))]

    #[test]
    fn the_batched_path_of_sessions_that_keep_their_records_equals_the_record_path(
        (grace, recs) in graced_stream(),
        sizes in call_sizes(),
        dynamic in any::<bool>(),
        gap in 1i64..40,
        cap in proptest::option::of(1i64..60),
        marked in any::<bool>(),
        fixed in any::<bool>(),
        snapshot_at in 0usize..8,
    ) {
        let (cap, marked) = if cap.is_none() { (cap, true) } else { (cap, marked) };
        let make = |batched| {
            let options = (EmitMode::Final, fixed);
            capped(gap_spec(dynamic, gap), grace, options, (cap, marked), batched)
        };
        compare_kind(&recs, &sizes, make, snapshot_at)?;
    }
}

#[test]
fn sessions_that_keep_their_records_in_time_order_take_the_batched_path() {
    let recs = in_order(2_000, 7);
    let make = |batched| {
        capped(
            fixed_gap(5),
            3,
            (EmitMode::Final, true),
            (None, true),
            batched,
        )
    };
    let batched = compare_kind(&recs, &[300], make, usize::MAX).unwrap();
    assert!(batched >= 6, "{batched} calls took the batched path");
}

fn fixed_gap(gap: i64) -> GapSpec {
    GapSpec::Fixed(Duration::Ticks(gap))
}

/// Records of `keys` keys in time order, every key once per `keys` ticks.
fn in_order(n: i64, keys: u8) -> Vec<Rec> {
    (0..n)
        .map(|i| {
            (
                ((i * 7) % i64::from(keys)) as u8,
                Some(i),
                i as f64 / 3.0,
                Some(5),
            )
        })
        .collect()
}

#[test]
fn records_in_time_order_take_the_batched_path_and_equal_the_record_path() {
    let recs = in_order(3_000, 50);
    for emit in [EmitMode::Final, EmitMode::Updates, EmitMode::Changes] {
        for (dynamic, fixed) in [(false, false), (true, false), (false, true), (true, true)] {
            let mode = (emit, fixed);
            let batched = compare(&recs, &[500], gap_spec(dynamic, 80), 10, mode, 3).unwrap();
            assert_eq!(
                batched, 6,
                "every call of 500 records in time order is batched ({emit:?})"
            );
        }
    }
}

#[test]
fn records_of_sparse_keys_take_the_batched_path_and_equal_the_record_path() {
    // 250 keys, each once in 250 ticks, gap 20: every slice (a retention of stream time) holds
    // each of its keys once, and is applied with the record path's step.
    let recs = in_order(3_000, 250);
    for emit in [EmitMode::Final, EmitMode::Updates, EmitMode::Changes] {
        for fixed in [false, true] {
            let batched = compare(&recs, &[500], gap_spec(false, 20), 0, (emit, fixed), 3).unwrap();
            assert_eq!(
                batched, 6,
                "every call of sparse keys is batched ({emit:?})"
            );
        }
    }
}

#[test]
fn a_call_with_a_record_beyond_the_grace_goes_record_by_record() {
    let mut recs = in_order(400, 10);
    recs[300].1 = Some(100); // stream time is about 300: late
    let mode = (EmitMode::Final, true);
    let batched = compare(&recs, &[200], gap_spec(false, 20), 5, mode, 99).unwrap();
    assert_eq!(
        batched, 1,
        "the first call is batched, the one with the late record is not"
    );
}

/// Feeds the batched processor `make(true)` and the record path's `make(false)` 40 records in
/// time order, then a third record of each key within reach of its first two: a window of
/// three, beyond a `collect` bounded at 2 that fails. Both calls fail alike, and the batched
/// one (tried batched first) changes nothing. Returns both processors.
fn overflow_fails_alike<K: WindowKind>(
    make: impl Fn(bool) -> Processor<K>,
) -> (Processor<K>, Processor<K>) {
    let (mut fast, mut model) = (make(true), make(false));
    let ok = batch(&in_order(40, 20));
    assert_eq!(fast.process(&ok).unwrap(), model.process(&ok).unwrap());
    let before = fast.to_bytes().unwrap();
    let third: Vec<Rec> = (0..40)
        .map(|i| ((i % 20) as u8, Some(40 + i / 20), 1.0, None))
        .collect();
    let (a, b) = (fast.process(&batch(&third)), model.process(&batch(&third)));
    assert_eq!(a.unwrap_err().to_string(), b.unwrap_err().to_string());
    assert_eq!(
        fast.to_bytes().unwrap(),
        before,
        "the failed call changed nothing"
    );
    assert_eq!(fast.batched_calls(), 1);
    (fast, model)
}

#[test]
fn an_overflow_in_the_batched_path_fails_the_call_as_the_record_path_does() {
    let aggs = vec![AggSpec::collect("x", Some(2), Overflow::Fail)];
    let make = |batched: bool| {
        let mut p = SessionProcessor::new(
            SessionSpec {
                gap: GapSpec::Fixed(Duration::Ticks(10)),
                grace: Duration::Ticks(0),
                retention: None,
                emit: EmitMode::Final,
                on_invalid: OnInvalid::Drop,
            },
            input(),
            aggs.clone(),
        )
        .unwrap();
        p.set_batched(batched);
        p
    };
    overflow_fails_alike(make);
}

/// How many of ten calls of 5,000 records (200 keys, a key's records 200 ticks apart) take the
/// batched path, for sessions with `gap`, each call's outcome compared with the record path's.
fn batched_of_ten_calls(gap: i64) -> u64 {
    let recs = in_order(50_000, 200);
    compare(
        &recs,
        &[5_000],
        GapSpec::Fixed(Duration::Ticks(gap)),
        20,
        (EmitMode::Final, true),
        usize::MAX,
    )
    .unwrap()
}

#[test]
fn sparse_keys_send_the_next_calls_down_the_record_path_then_the_batched_path_is_tried_again() {
    // Each record a session of its own (gap 10, a key's records 200 apart): the first call is
    // batched and finds that out, the next seven go record by record, the ninth is batched
    // again, the tenth record by record.
    assert_eq!(batched_of_ten_calls(10), 2);
    // Records that share sessions (gap 1,000): every call is batched.
    assert_eq!(batched_of_ten_calls(1_000), 10);
}
