//! Helpers shared by the integration tests.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use windowstore_core::input::InputSpec;
use windowstore_core::processor::{Processor, WindowKind};
use windowstore_core::KeyedSession;

/// A session copied out of the store: key, start, end, value.
pub type Row = (Vec<u8>, i64, i64, Vec<u8>);

/// Copies borrowed sessions into owned rows, for comparison after the store changes.
pub fn rows(sessions: &[KeyedSession<'_>]) -> Vec<Row> {
    sessions.iter().map(KeyedSession::to_owned_parts).collect()
}

/// The schema of Int64 columns `k` (key), `t` (time), `v` (value) and `g` (gap), all nullable.
pub fn ktvg_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("t", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
        Field::new("g", DataType::Int64, true),
    ]))
}

/// A batch of [`ktvg_schema`], a row per record: `[k, t, v, g]` (None: null).
pub fn ktvg_batch(rows: impl Iterator<Item = [Option<i64>; 4]>) -> RecordBatch {
    let rows: Vec<[Option<i64>; 4]> = rows.collect();
    let column =
        |i: usize| -> ArrayRef { Arc::new(rows.iter().map(|r| r[i]).collect::<Int64Array>()) };
    RecordBatch::try_new(ktvg_schema(), (0..4).map(column).collect()).expect("valid test batch")
}

/// The proptest configuration of a property: `PROPTEST_CASES` cases if set (the check runs
/// 10,000), else `default`.
pub fn cases(default: u32) -> proptest::prelude::ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    proptest::prelude::ProptestConfig {
        cases,
        ..proptest::prelude::ProptestConfig::default()
    }
}

/// The input of most tests: key column `k`, integer time column `t` in milliseconds.
pub fn input() -> InputSpec {
    InputSpec {
        key: vec!["k".into()],
        time: "t".into(),
        time_unit: None,
        gap: None,
        markers: Default::default(),
    }
}

/// The output of `batches` through `p`, snapshotted to a file after the first `stop` of them and
/// restored from it (asserting the restored stream time is `time_at_stop`), then an empty batch
/// and the rest, then a flush.
pub fn through_a_snapshot<K: WindowKind>(
    mut p: Processor<K>,
    batches: &[RecordBatch],
    stop: usize,
    time_at_stop: i64,
) -> Vec<RecordBatch> {
    let (before, after) = batches.split_at(stop);
    let process = |p: &mut Processor<K>, b: &RecordBatch| p.process(b).expect("process");
    let mut out: Vec<RecordBatch> = before.iter().map(|b| process(&mut p, b)).collect();
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("p.snap");
    p.snapshot(&path).expect("snapshot");
    drop(p);
    let mut p = Processor::<K>::restore(&path).expect("restore");
    assert_eq!(p.stream_time(), Some(time_at_stop));
    out.push(process(&mut p, &batches[0].slice(0, 0)));
    out.extend(after.iter().map(|b| process(&mut p, b)));
    out.extend(p.flush().expect("flush"));
    out
}
