//! One long session grown record by record costs linear work (issue 12, defect 4): a `collect`
//! list of `n` records was rebuilt, put and journaled whole for every record, `O(n^2)` bytes.
//! Work is the store's deterministic byte counters (value bytes written and moved, bytes the
//! undo journal recorded), not wall time: doubling the records must not much more than double
//! it, and the lists must be exact.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common::input;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use windowstore_core::agg::{AggSpec, Overflow};
use windowstore_core::emit::EmitMode;
use windowstore_core::reject::OnInvalid;
use windowstore_core::session::{GapSpec, SessionProcessor, SessionSpec};
use windowstore_core::time::Duration;

/// Records `(k = "a", t, v = t)` for `times`.
fn batch(times: &[i64]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("t", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let k: ArrayRef = Arc::new(times.iter().map(|_| Some("a")).collect::<StringArray>());
    let t: ArrayRef = Arc::new(Int64Array::from(times.to_vec()));
    let v: ArrayRef = Arc::new(Int64Array::from(times.to_vec()));
    RecordBatch::try_new(schema, vec![k, t, v]).unwrap()
}

/// Feeds times `0..n` (every tenth pair swapped if `shuffle`) in calls of `per_call` records to
/// one session; returns the work and the final row's first list.
fn grow(
    n: i64,
    per_call: usize,
    shuffle: bool,
    aggs: Vec<AggSpec>,
    emit: EmitMode,
) -> (u64, Vec<i64>) {
    let spec = SessionSpec {
        gap: GapSpec::Fixed(Duration::Ticks(1_000_000_000)),
        grace: Duration::Ticks(5),
        retention: None,
        emit,
        on_invalid: OnInvalid::Error,
    };
    let mut p = SessionProcessor::new(spec, input(), aggs).unwrap();
    let mut times: Vec<i64> = (0..n).collect();
    if shuffle {
        for i in (0..times.len() - 1).step_by(10) {
            times.swap(i, i + 1);
        }
    }
    let mut last = None;
    for chunk in times.chunks(per_call) {
        let out = p.process(&batch(chunk)).unwrap();
        if out.num_rows() > 0 {
            last = Some(out);
        }
    }
    let m = p.store_metrics().unwrap();
    let work = m.bytes_written + m.bytes_journaled;
    if emit == EmitMode::Final {
        last = p.flush().unwrap();
    }
    let out = last.unwrap();
    let name = out
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .find(|n| n.starts_with("collect"))
        .unwrap();
    let lists = out.column_by_name(&name).unwrap().as_list::<i32>();
    let list = lists.value(lists.len() - 1);
    (work, list.as_primitive::<Int64Type>().values().to_vec())
}

fn assert_linear(
    name: &str,
    per_call: usize,
    shuffle: bool,
    aggs: impl Fn() -> Vec<AggSpec>,
    emit: EmitMode,
) {
    let n = 4_000;
    let (w1, l1) = grow(n, per_call, shuffle, aggs(), emit);
    let (w2, l2) = grow(2 * n, per_call, shuffle, aggs(), emit);
    assert_eq!(l1, (0..n).collect::<Vec<_>>(), "{name}");
    assert_eq!(l2, (0..2 * n).collect::<Vec<_>>(), "{name}");
    // Linear work: about twice as much for twice the records, and a few dozen bytes each.
    assert!(
        w2 * 2 < w1 * 5,
        "{name}: {w1} bytes for {n} records, {w2} for {}",
        2 * n
    );
    assert!(
        w2 < 200 * 2 * n as u64,
        "{name}: {w2} bytes for {} records",
        2 * n
    );
}

fn collect() -> Vec<AggSpec> {
    vec![AggSpec::collect("v", None, Overflow::DropOldest)]
}

#[test]
fn one_collect_grows_linearly_one_record_per_call_and_in_batches() {
    assert_linear("per record", 1, false, collect, EmitMode::Final);
    assert_linear("batches of 100", 100, false, collect, EmitMode::Final);
    assert_linear("batches of 1000", 1000, false, collect, EmitMode::Final);
    assert_linear("changelog", 100, false, collect, EmitMode::Updates);
}

#[test]
fn slightly_out_of_order_records_grow_linearly() {
    assert_linear("per record", 1, true, collect, EmitMode::Final);
    assert_linear("batches of 100", 100, true, collect, EmitMode::Final);
}

#[test]
fn collect_all_and_lists_beside_other_aggregates_grow_linearly() {
    assert_linear(
        "collect_all last",
        10,
        false,
        || {
            vec![
                AggSpec::count(),
                AggSpec::collect_all("v", None, Overflow::DropOldest),
            ]
        },
        EmitMode::Final,
    );
    assert_linear(
        "collect first",
        10,
        true,
        || {
            vec![
                AggSpec::collect("v", None, Overflow::DropOldest),
                AggSpec::count(),
                AggSpec::sum("v"),
            ]
        },
        EmitMode::Final,
    );
}
