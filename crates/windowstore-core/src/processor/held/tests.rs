//! Tests of the held rows' snapshot batches: the round trip and the refusals.

use super::*;
use arrow_array::StringArray;

fn rows(values: &[&str]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Utf8, false)]));
    RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(values.to_vec()))]).unwrap()
}

fn index(seqs: Vec<i64>, times: Vec<i64>) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(seqs)),
        Arc::new(Int64Array::from(times)),
    ];
    RecordBatch::try_new(Held::index_schema(), columns).unwrap()
}

/// Rows held with gaps in their numbers (a rejected row, then a compaction) come back
/// from a snapshot with their numbers, times and keys.
#[test]
fn a_snapshot_keeps_numbers_times_and_keys() {
    let mut held = Held::default();
    let batch = rows(&["a0", "b1", "x2", "a3"]);
    let keys = |i: usize| ["a", "b", "x", "a"][i].as_bytes();
    held.hold(&batch, 10, &[2], keys, &vec![5, 6, 7, 8].into())
        .unwrap();
    held.commit();
    let schema = batch.schema();
    let (rows, index) = held.to_batches(&schema).unwrap();
    let seqs = index
        .column(0)
        .as_primitive::<Int64Type>()
        .values()
        .to_vec();
    let times = index
        .column(1)
        .as_primitive::<Int64Type>()
        .values()
        .to_vec();
    assert_eq!(
        (seqs.as_slice(), times.as_slice()),
        (&[10, 11, 13][..], &[5, 6, 8][..])
    );
    let key_of = |i: usize| ["a", "b", "a"][i].as_bytes();
    let back = Held::from_batches(rows.clone(), &index, 14, key_of).unwrap();
    assert_eq!(back.to_batches(&schema).unwrap(), (rows, index));
    let a = back.index.find(b"a").unwrap();
    assert_eq!(
        back.index.slots[a as usize].rows.as_slice(),
        &[(5, 10), (8, 13)]
    );
}

#[test]
fn a_damaged_snapshot_is_refused() {
    let key = |_: usize| b"a".as_slice();
    let refusal = |seqs, times, next| {
        Held::from_batches(rows(&["r", "s"]), &index(seqs, times), next, key).unwrap_err()
    };
    assert_eq!(
        refusal(vec![3, 2], vec![0, 0], 9),
        "held rows out of sequence"
    );
    assert_eq!(
        refusal(vec![1, 9], vec![0, 0], 9),
        "held rows numbered beyond the rows seen"
    );
    let short = Held::from_batches(rows(&["r"]), &index(vec![1, 2], vec![0, 0]), 9, key);
    assert_eq!(
        short.unwrap_err(),
        "held rows and their index differ in length"
    );
}
