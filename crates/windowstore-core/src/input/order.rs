//! Grouping a batch's valid rows by key, each group in time order: the first step of every
//! complete-data engine.

use hashbrown::HashMap;

use super::KeyView;

/// Valid rows grouped by key (groups in order of first appearance), each group in (time, row)
/// order; returns the rows and the group boundaries (`runs[g]..runs[g + 1]`).
pub(crate) fn group_by_key_then_time(
    keys: &KeyView<'_>,
    valid: &[bool],
    times: &[i64],
) -> (Vec<u32>, Vec<usize>) {
    let (mut order, runs) = group_by_key(valid.len(), |row| valid[row].then(|| keys.bytes(row)));
    for group in runs.windows(2) {
        let rows = &mut order[group[0]..group[1]];
        if rows
            .windows(2)
            .any(|w| times[w[0] as usize] > times[w[1] as usize])
        {
            rows.sort_unstable_by_key(|&r| (times[r as usize], r));
        }
    }
    (order, runs)
}

/// The indices `0..n` that have a key (`key_of`), grouped by key: groups in order of first
/// appearance, indices in increasing order within a group; returns them and the group
/// boundaries (`runs[g]..runs[g + 1]`). A counting sort: one hash lookup per index.
pub(crate) fn group_by_key<'a>(
    n: usize,
    key_of: impl Fn(usize) -> Option<&'a [u8]>,
) -> (Vec<u32>, Vec<usize>) {
    let mut ids: HashMap<&[u8], u32> = HashMap::new();
    let mut row_id = vec![u32::MAX; n];
    let mut sizes: Vec<usize> = Vec::new();
    for (row, id_of_row) in row_id.iter_mut().enumerate() {
        let Some(key) = key_of(row) else {
            continue;
        };
        let next = ids.len() as u32;
        let id = *ids.entry(key).or_insert(next);
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

    proptest! {
        #[test]
        fn grouping_equals_the_model(
            keys in proptest::collection::vec(
                proptest::option::weighted(
                    0.9,
                    prop_oneof![
                        4 => proptest::collection::vec(0u8..3, 0..4),
                        1 => proptest::collection::vec(0u8..3, 14..18),
                    ],
                ),
                0..60,
            ),
        ) {
            let got = group_by_key(keys.len(), |r| keys[r].as_deref());
            prop_assert_eq!(got, model(&keys));
        }
    }
}
