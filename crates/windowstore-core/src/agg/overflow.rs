//! Filling in the window of an aggregate's overflow error, which only the caller knows.

use crate::Error;

/// Returns `err` with `key`, `start` and `end` filled in if it is an [`Error::CollectOverflow`]
/// (a `collect` beyond its bound) or an [`Error::AggregateOverflow`] (a decimal sum beyond its
/// precision), as returned, with an empty key and a `[0, 0]` window, by
/// [`super::Aggregator::merge`] and [`super::Aggregator::aggregate_windows`]; any other error is
/// returned unchanged.
pub fn fill_overflow(err: Error, key: impl Into<String>, start: i64, end: i64) -> Error {
    match err {
        Error::CollectOverflow {
            column, max_size, ..
        } => Error::CollectOverflow {
            key: key.into(),
            start,
            end,
            column,
            max_size,
        },
        Error::AggregateOverflow {
            aggregate,
            column,
            reason,
            ..
        } => Error::AggregateOverflow {
            aggregate,
            column,
            key: key.into(),
            start,
            end,
            reason,
        },
        other => other,
    }
}
