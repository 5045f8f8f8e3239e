//! Every function on small hand-made batches, through both paths, for each supported type.
//!
//! Split by topic: `numbers`, `other_types`, `lists_and_paths`.

mod lists_and_paths;
mod numbers;
mod other_types;

use crate::agg::AggSpec;

/// `min` and `max` of each of `columns`, in that order.
fn min_max(columns: &[&str]) -> Vec<AggSpec> {
    columns
        .iter()
        .flat_map(|&c| [AggSpec::min(c), AggSpec::max(c)])
        .collect()
}

/// Windows used by most tests: overlapping, one all-null in the value columns below.
fn windows() -> Vec<Vec<usize>> {
    vec![vec![0, 1, 2], vec![1, 3], vec![2, 3, 4], vec![4]]
}

const TIMES: [i64; 5] = [10, 20, 30, 40, 50];
