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
/// A key table with a session under each of `keys`, as the store has it.
fn table(keys: &[&str]) -> KeyTable {
    let mut table = KeyTable::default();
    for key in keys {
        table.acquire(key.as_bytes()).unwrap();
    }
    table
}

/// Rows held with gaps in their numbers (a rejected row, then a compaction) come back
/// from a snapshot with their numbers, times and keys, and the held rows count one
/// reference on each of their keys.
#[test]
fn a_snapshot_keeps_numbers_times_and_keys() {
    let mut store = table(&["a", "b", "x"]);
    let mut held = Held::default();
    let batch = rows(&["a0", "b1", "x2", "a3"]);
    let keys = |i: usize| ["a", "b", "x", "a"][i].as_bytes();
    for (row, seq) in held
        .keep(&batch, 10, &[2], &vec![5, 6, 7, 8].into())
        .unwrap()
    {
        let id = store.get(keys(row)).unwrap();
        held.hold(&mut store, id, [5, 6, 7, 8][row], seq);
    }
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
    let mut restored = table(&["a", "b", "x"]);
    let back = Held::from_batches(rows.clone(), &index, 14, key_of, &mut restored).unwrap();
    assert_eq!(back.to_batches(&schema).unwrap(), (rows, index));
    let a = restored.get(b"a").unwrap();
    assert_eq!(back.index.rows(a), &[(5, 10), (8, 13)]);
    // "a" has its session and the held rows' reference; "x", only its session.
    restored.release(a);
    assert_eq!(restored.get(b"a"), Some(a));
    let x = restored.get(b"x").unwrap();
    restored.release(x);
    assert_eq!(restored.get(b"x"), None);
}

/// A call that holds a row, then takes every row of its key after the store forgot the key
/// (its session expired in the call), rolls back to the key's rows before the call, under the
/// id the key has when interned again, and with the held rows' reference on it.
#[test]
fn a_rollback_interns_an_emptied_key_again() {
    let mut store = table(&["a", "b"]);
    let mut held = Held::default();
    let a = store.get(b"a").unwrap();
    held.hold(&mut store, a, 5, 1);
    held.commit();
    held.begin();
    held.hold(&mut store, a, 6, 2);
    store.release(a);
    held.index.take(&mut store, a, |_| true);
    assert_eq!(store.get(b"a"), None);
    // Free "b" too, so that "a" is interned again under another id than it had.
    let b = store.get(b"b").unwrap();
    store.release(b);
    held.rollback(&mut store).unwrap();
    let again = store.get(b"a").unwrap();
    assert_ne!(again, a);
    assert_eq!(held.index.rows(again), &[(5, 1)]);
    assert!(held.index.rows(a).is_empty());
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
