//! Every function on small hand-made batches, through both paths, for each supported type.
//!
//! Split by topic: `numbers`, `other_types`, `lists_and_paths`.

mod lists_and_paths;
mod numbers;
mod other_types;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef};

fn a<T: Array + 'static>(array: T) -> ArrayRef {
    Arc::new(array)
}

/// Windows used by most tests: overlapping, one all-null in the value columns below.
fn windows() -> Vec<Vec<usize>> {
    vec![vec![0, 1, 2], vec![1, 3], vec![2, 3, 4], vec![4]]
}

const TIMES: [i64; 5] = [10, 20, 30, 40, 50];
