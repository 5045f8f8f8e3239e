//! Grouping a batch's valid rows by key, each group in time order: the first step of every
//! complete-data engine.

use std::hash::Hash;

use hashbrown::HashMap;

use super::KeyView;

/// Valid rows grouped by key, each group in (time, row) order (see [`group_by_key_then_time`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Grouped {
    /// The rows.
    pub order: Vec<u32>,
    /// The group boundaries: group `g` is `order[runs[g]..runs[g + 1]]`.
    pub runs: Vec<usize>,
    /// The time of each row of `order`, in that order (so that passes over the groups read
    /// the times in sequence).
    pub times: Vec<i64>,
}

/// Valid rows grouped by key (groups in order of first appearance), each group in (time, row)
/// order, with their times in that order.
pub(crate) fn group_by_key_then_time(keys: &KeyView<'_>, valid: &[bool], times: &[i64]) -> Grouped {
    let n = valid.len();
    let (mut order, runs) = match keys {
        // One word per key: hash integers, not byte strings.
        KeyView::Words(w) => match w.width() {
            1 => group_by_word(n, |row| valid[row].then(|| w.word::<1>(row))),
            2 => group_by_word(n, |row| valid[row].then(|| w.word::<2>(row))),
            4 => group_by_word(n, |row| valid[row].then(|| w.word::<4>(row))),
            _ => group_by_word(n, |row| valid[row].then(|| w.word::<8>(row))),
        },
        _ => group_by_key(n, |row| valid[row].then(|| keys.bytes(row))),
    };
    // One random read per row; the check and any sort then read in sequence.
    let mut sorted: Vec<i64> = order.iter().map(|&r| times[r as usize]).collect();
    for group in runs.windows(2) {
        let (lo, hi) = (group[0], group[1]);
        if sorted[lo..hi].windows(2).any(|w| w[0] > w[1]) {
            let mut pairs: Vec<(i64, u32)> = sorted[lo..hi]
                .iter()
                .copied()
                .zip(order[lo..hi].iter().copied())
                .collect();
            pairs.sort_unstable();
            for (i, (t, r)) in pairs.into_iter().enumerate() {
                sorted[lo + i] = t;
                order[lo + i] = r;
            }
        }
    }
    Grouped {
        order,
        runs,
        times: sorted,
    }
}

/// The indices `0..n` that have a key (`key_of`), grouped by key: groups in order of first
/// appearance, indices in increasing order within a group; returns them and the group
/// boundaries (`runs[g]..runs[g + 1]`). A counting sort: one hash lookup per index.
pub(crate) fn group_by_key<K: Hash + Eq>(
    n: usize,
    key_of: impl Fn(usize) -> Option<K>,
) -> (Vec<u32>, Vec<usize>) {
    let mut ids: HashMap<K, u32> = HashMap::new();
    group_by_id(n, |row, next| {
        // Most rows meet a key already seen: a lookup, and an insert only for a new key.
        key_of(row).map(|key| match ids.get(&key) {
            Some(&id) => id,
            None => {
                ids.insert(key, next);
                next
            }
        })
    })
}

/// [`group_by_key`] for keys that are words: when the words span a range not much larger than
/// the number of indices (user ids, say), a table indexed by the word replaces the hash map.
fn group_by_word(n: usize, word_of: impl Fn(usize) -> Option<u64>) -> (Vec<u32>, Vec<usize>) {
    let (lo, hi) = (0..n)
        .filter_map(&word_of)
        .fold((u64::MAX, 0), |(lo, hi), w| (lo.min(w), hi.max(w)));
    let dense = (n as u64).saturating_mul(4).max(1 << 10);
    if lo > hi || hi - lo >= dense {
        return group_by_key(n, word_of);
    }
    let mut ids = vec![u32::MAX; (hi - lo) as usize + 1];
    group_by_id(n, |row, next| {
        word_of(row).map(|w| {
            let id = &mut ids[(w - lo) as usize];
            if *id == u32::MAX {
                *id = next;
            }
            *id
        })
    })
}

/// The counting sort of [`group_by_key`], given `id_of(index, next)`: the group of an index
/// (`None` for none), where `next` is the id a key seen for the first time must get.
fn group_by_id(
    n: usize,
    mut id_of: impl FnMut(usize, u32) -> Option<u32>,
) -> (Vec<u32>, Vec<usize>) {
    let mut row_id = vec![u32::MAX; n];
    let mut sizes: Vec<usize> = Vec::new();
    for (row, id_of_row) in row_id.iter_mut().enumerate() {
        let next = sizes.len() as u32;
        let Some(id) = id_of(row, next) else {
            continue;
        };
        if id == next {
            sizes.push(0);
        }
        sizes[id as usize] += 1;
        *id_of_row = id;
    }
    let mut runs = Vec::with_capacity(sizes.len() + 1);
    let mut at = 0usize;
    runs.push(0);
    let mut next_slot: Vec<usize> = sizes
        .iter()
        .map(|&s| {
            let start = at;
            at += s;
            runs.push(at);
            start
        })
        .collect();
    let mut order = vec![0u32; at];
    for (row, &id) in row_id.iter().enumerate() {
        if id != u32::MAX {
            let slot = &mut next_slot[id as usize];
            order[*slot] = row as u32;
            *slot += 1;
        }
    }
    (order, runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The model: groups in order of first appearance, indices in order, by a linear search.
    fn model(keys: &[Option<Vec<u8>>]) -> (Vec<u32>, Vec<usize>) {
        let mut groups: Vec<(&[u8], Vec<u32>)> = Vec::new();
        for (row, key) in keys.iter().enumerate() {
            let Some(key) = key else { continue };
            match groups.iter_mut().find(|(k, _)| *k == key.as_slice()) {
                Some((_, rows)) => rows.push(row as u32),
                None => groups.push((key, vec![row as u32])),
            }
        }
        let mut runs = vec![0];
        let mut order = Vec::new();
        for (_, rows) in groups {
            order.extend(rows);
            runs.push(order.len());
        }
        (order, runs)
    }

    #[test]
    fn keys_that_differ_by_length_or_trailing_zeros_are_apart() {
        let keys: Vec<Option<Vec<u8>>> = [&b""[..], b"\0", b"a", b"a\0", b"a", b"\0", b""]
            .iter()
            .map(|k| Some(k.to_vec()))
            .collect();
        let got = group_by_key(keys.len(), |r| keys[r].as_deref());
        assert_eq!(got, (vec![0, 6, 1, 5, 2, 4, 3], vec![0, 2, 4, 6, 7]));
    }

    /// Byte-string keys (a tenth null): short ones that collide often, and a few around 16 bytes.
    fn byte_keys() -> impl Strategy<Value = Vec<Option<Vec<u8>>>> {
        proptest::collection::vec(
            proptest::option::weighted(
                0.9,
                prop_oneof![
                    4 => proptest::collection::vec(0u8..3, 0..4),
                    1 => proptest::collection::vec(0u8..3, 13..18),
                ],
            ),
            0..60,
        )
    }

    proptest! {
        #[test]
        fn grouping_equals_the_model(
            keys in byte_keys(),
        ) {
            let got = group_by_key(keys.len(), |r| keys[r].as_deref());
            prop_assert_eq!(got, model(&keys));
        }

        /// A binary key column (its own bytes) groups as its arrow-row encoding does, trailing
        /// zeros and lengths around 16 bytes included.
        #[test]
        fn byte_string_keys_group_as_encoded_keys(
            keys in byte_keys(),
            times in proptest::collection::vec(-2i64..2, 60),
        ) {
            use std::sync::Arc;
            use arrow_array::{BinaryArray, RecordBatch};
            use arrow_schema::{DataType, Field, Schema};
            use super::super::KeyCodec;

            let n = keys.len();
            let column = BinaryArray::from_iter(keys.iter().map(|k| k.as_deref()));
            let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Binary, true)]));
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).unwrap();
            let codec = KeyCodec::try_new(&["k".to_string()], &schema).unwrap();
            let bytes = codec.view(&batch).unwrap();
            prop_assert!(matches!(bytes, KeyView::Binary(_)));
            let rows = KeyView::Rows(codec.encode(&batch).unwrap());
            let valid: Vec<bool> = (0..n).map(|r| !rows.is_null(r)).collect();
            prop_assert_eq!(
                group_by_key_then_time(&bytes, &valid, &times[..n]),
                group_by_key_then_time(&rows, &valid, &times[..n])
            );
            let (order, runs) = group_by_key(n, |r| keys[r].as_deref());
            let grouped = group_by_key_then_time(&bytes, &valid, &vec![0; n]);
            prop_assert_eq!((grouped.order, grouped.runs), (order, runs));
        }

        /// A fixed-width key column (any width, nulls, a slice that starts inside its buffer)
        /// groups as its arrow-row encoding does: words are a shortcut, not another grouping.
        #[test]
        fn word_keys_group_as_encoded_keys(
            values in proptest::collection::vec(proptest::option::weighted(0.9, -3i64..3), 0..60),
            // Words spanning a small range (a table) or a large one (a hash map).
            shift in prop_oneof![Just(0i64), Just(1_000), Just(1 << 40), Just(-(1 << 40))],
            times in proptest::collection::vec(-2i64..2, 60),
            skip in 0usize..3,
            width in 0usize..4,
        ) {
            use std::sync::Arc;
            use arrow_array::{ArrayRef, Int16Array, Int32Array, Int64Array, Int8Array, RecordBatch};
            use arrow_array::Array;
            use arrow_schema::{Field, Schema};
            use super::super::KeyCodec;

            let values: Vec<Option<i64>> = values.iter().map(|v| v.map(|v| v + shift)).collect();
            let column: ArrayRef = match width {
                0 => Arc::new(Int8Array::from_iter(values.iter().map(|v| v.map(|v| v as i8)))),
                1 => Arc::new(Int16Array::from_iter(values.iter().map(|v| v.map(|v| v as i16)))),
                2 => Arc::new(Int32Array::from_iter(values.iter().map(|v| v.map(|v| v as i32)))),
                _ => Arc::new(Int64Array::from(values.clone())),
            };
            let skip = skip.min(column.len());
            let column = column.slice(skip, column.len() - skip);
            let n = column.len();
            let schema = Arc::new(Schema::new(vec![Field::new("k", column.data_type().clone(), true)]));
            let batch = RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
            let codec = KeyCodec::try_new(&["k".to_string()], &schema).unwrap();
            let words = codec.view(&batch).unwrap();
            prop_assert!(matches!(words, KeyView::Words(_)));
            let rows = KeyView::Rows(codec.encode(&batch).unwrap());
            let valid: Vec<bool> = (0..n).map(|r| !rows.is_null(r)).collect();
            prop_assert_eq!((0..n).map(|r| words.is_null(r)).collect::<Vec<_>>(),
                            (0..n).map(|r| rows.is_null(r)).collect::<Vec<_>>());
            let grouped = group_by_key_then_time(&words, &valid, &times[..n]);
            prop_assert_eq!(&grouped, &group_by_key_then_time(&rows, &valid, &times[..n]));
            // Each group in (time, row) order, with its times beside it.
            for g in grouped.runs.windows(2) {
                let rows = &grouped.order[g[0]..g[1]];
                prop_assert!(rows.windows(2).all(|w| (times[w[0] as usize], w[0]) < (times[w[1] as usize], w[1])));
            }
            let expected: Vec<i64> = grouped.order.iter().map(|&r| times[r as usize]).collect();
            prop_assert_eq!(grouped.times, expected);
        }
    }
}
