//! Tests of the held rows' snapshot batches: the round trip and the refusals.

use super::*;
use arrow_array::StringArray;
use arrow_buffer::ScalarBuffer;

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

/// A key table with a session under each of `keys`, as the store has it.
fn table(keys: &[&str]) -> KeyTable {
    let mut table = KeyTable::default();
    for key in keys {
        table.acquire(key.as_bytes()).unwrap();
    }
    table
}

/// Rows held with gaps in their numbers (a rejected row, then a compaction) come back
/// from a snapshot with their numbers, times and keys, and each held row counts one
/// reference on its key.
#[test]
fn a_snapshot_keeps_numbers_times_and_keys() {
    let mut store = table(&["a", "b", "x"]);
    let mut held = Held::default();
    let batch = rows(&["a0", "b1", "x2", "a3"]);
    let keys = |i: usize| ["a", "b", "x", "a"][i].as_bytes();
    held.open(10);
    for row in [0, 1, 3] {
        let id = store.get(keys(row)).unwrap();
        held.hold(&mut store, id, 10 + row as u64);
    }
    let ticks: ScalarBuffer<i64> = vec![5, 6, 7, 8].into();
    held.close([(&batch, &ticks)].into_iter()).unwrap();
    held.commit();
    assert_eq!(held.rows(), 3);
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
    let mut restored = table(&["a", "b", "x"]);
    let back = Held::from_batches(rows.clone(), &index, 14, key_of, &mut restored).unwrap();
    assert_eq!(back.to_batches(&schema).unwrap(), (rows, index));
    let a = restored.get(b"a").unwrap();
    assert_eq!(restored.references(a), 3, "its session and two held rows");
    let x = restored.get(b"x").unwrap();
    assert_eq!(restored.references(x), 1, "its session only");
}

/// A call that holds a row, then takes every row of its key after the store forgot the key
/// (its session expired in the call), rolls back to the key's rows before the call, under the
/// id the key has when interned again, with their references.
#[test]
fn a_rollback_interns_an_emptied_key_again() {
    let mut store = table(&["a", "b"]);
    let a = store.get(b"a").unwrap();
    let batch = rows(&["a0", "a1"]);
    let ticks: ScalarBuffer<i64> = vec![5, 6].into();
    let mut held = Held::default();
    held.open(0);
    held.hold(&mut store, a, 0);
    held.close([(&batch.slice(0, 1), &ticks.slice(0, 1))].into_iter())
        .unwrap();
    held.commit();
    held.begin();
    held.open(1);
    held.hold(&mut store, a, 1);
    held.close([(&batch.slice(1, 1), &ticks.slice(1, 1))].into_iter())
        .unwrap();
    store.release(a);
    let found = [(0, 5, 0, 0, 0), (0, 6, 1, 1, 0)];
    held.release(&mut store, &found).unwrap();
    assert_eq!((held.rows(), store.get(b"a")), (0, None));
    // Free "b" too, so that "a" is interned again under another id than it had.
    let b = store.get(b"b").unwrap();
    store.release(b);
    held.rollback(&mut store).unwrap();
    let again = store.get(b"a").unwrap();
    assert_ne!(again, a);
    assert_eq!(held.rows(), 1);
    assert_eq!(held.segments[0].ids.as_ref(), &[again]);
    assert_eq!(store.references(again), 1, "the held row's reference");
}

#[test]
fn a_damaged_snapshot_is_refused() {
    let key = |_: usize| b"a".as_slice();
    let refusal = |seqs, times, next| {
        let rows = rows(&["r", "s"]);
        Held::from_batches(rows, &index(seqs, times), next, key, &mut table(&["a"])).unwrap_err()
    };
    assert_eq!(
        refusal(vec![3, 2], vec![0, 0], 9),
        "held rows out of sequence"
    );
    assert_eq!(
        refusal(vec![1, 9], vec![0, 0], 9),
        "held rows numbered beyond the rows seen"
    );
    let short = |t: &mut KeyTable| {
        Held::from_batches(rows(&["r"]), &index(vec![1, 2], vec![0, 0]), 9, key, t).unwrap_err()
    };
    assert_eq!(
        short(&mut table(&["a"])),
        "held rows and their index differ in length"
    );
    let unstored = Held::from_batches(
        rows(&["r"]),
        &index(vec![1], vec![0]),
        9,
        key,
        &mut table(&[]),
    );
    assert_eq!(unstored.unwrap_err(), "a held row whose key has no session");
}
