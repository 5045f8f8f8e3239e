//! Tests of the aggregations, and the helpers they share: batches, the per-record path
//! (encode_row/merge/finish) and the columnar path (aggregate_windows) over the same windows.

mod functions;
mod model;
mod ordering;
mod props;
mod specs;
mod states;
mod timing;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};

use super::{AggSpec, Aggregator};
use crate::Result;

/// The [`AggSpec`]s named, in order: a function, then in parentheses its column (an
/// identifier) and any further arguments, then `=> "name"` for an alias. So
/// `agg_specs!(count sum(x) collect(s, None, Overflow::Fail) => "all")` is
/// `vec![AggSpec::count(), AggSpec::sum("x"),
/// AggSpec::collect("s", None, Overflow::Fail).with_alias("all")]`.
macro_rules! agg_specs {
    ($($func:ident $(($column:ident $(, $arg:expr)*))? $(=> $alias:literal)?)*) => {
        vec![$(
            crate::agg::AggSpec::$func($(stringify!($column) $(, $arg)*)?)$(.with_alias($alias))?
        ),*]
    };
}
pub(super) use agg_specs;

/// `array` as an [`ArrayRef`].
pub(super) fn a<T: Array + 'static>(array: T) -> ArrayRef {
    Arc::new(array)
}

/// A batch of the named columns (all nullable).
pub(super) fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("valid test batch")
}

/// `min`, `max`, `first` and `last` of column `c`: the functions of every orderable type.
pub(super) fn ordered_specs(c: &str) -> [AggSpec; 4] {
    [
        AggSpec::min(c),
        AggSpec::max(c),
        AggSpec::first(c),
        AggSpec::last(c),
    ]
}

/// An aggregator of `specs` over `batch`'s schema.
pub(super) fn aggregator(specs: Vec<AggSpec>, batch: &RecordBatch) -> Aggregator {
    Aggregator::try_new(specs, &batch.schema()).expect("valid test specs")
}

/// The state of one window: records `(row, time, seq)`, encoded and merged left to right.
pub(super) fn fold(
    agg: &Aggregator,
    batch: &RecordBatch,
    records: &[(usize, i64, u64)],
) -> Result<Vec<u8>> {
    let mut state: Option<Vec<u8>> = None;
    for &(row, time, seq) in records {
        let mut one = Vec::new();
        agg.encode_row(batch, row, time, seq, &mut one);
        state = Some(match state {
            None => one,
            Some(acc) => {
                let mut out = Vec::new();
                agg.merge(&acc, &one, &mut out)?;
                out
            }
        });
    }
    Ok(state.expect("a window has at least one record"))
}

/// The per-record path over windows of rows (seq = row index, time = `times[row]`).
pub(super) fn per_record(
    agg: &Aggregator,
    batch: &RecordBatch,
    times: &[i64],
    windows: &[Vec<usize>],
) -> Result<Vec<ArrayRef>> {
    let states = windows
        .iter()
        .map(|rows| {
            let records: Vec<_> = rows.iter().map(|&r| (r, times[r], r as u64)).collect();
            fold(agg, batch, &records)
        })
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&[u8]> = states.iter().map(Vec::as_slice).collect();
    agg.finish(&refs)
}

/// The columnar path over windows of rows; each window is sorted by (time, row) first.
pub(super) fn columnar(
    agg: &Aggregator,
    batch: &RecordBatch,
    times: &[i64],
    windows: &[Vec<usize>],
) -> Result<Vec<ArrayRef>> {
    let mut order = Vec::new();
    let mut offsets = vec![0];
    for rows in windows {
        let mut rows = rows.clone();
        rows.sort_by_key(|&r| (times[r], r));
        order.extend(rows.iter().map(|&r| r as u32));
        offsets.push(order.len());
    }
    agg.aggregate_windows(batch, &order, &offsets)
}

/// Both paths, checked equal; returns the result.
pub(super) fn both(
    agg: &Aggregator,
    batch: &RecordBatch,
    times: &[i64],
    windows: &[Vec<usize>],
) -> Vec<ArrayRef> {
    let s = per_record(agg, batch, times, windows).expect("per-record path");
    let f = columnar(agg, batch, times, windows).expect("columnar path");
    assert_eq!(s.len(), f.len());
    for (i, (a, b)) in s.iter().zip(&f).enumerate() {
        assert_same(a, b, &format!("output {i}: per-record vs columnar"));
    }
    s
}

/// Asserts each `(i, want, what)`: output `i` of `out` is `want` (see [`assert_same`]).
pub(super) fn assert_outputs<const N: usize>(out: &[ArrayRef], want: [(usize, ArrayRef, &str); N]) {
    for (i, want, what) in want {
        assert_same(&out[i], &want, what);
    }
}

/// Asserts two arrays equal (types, nulls and values bit for bit).
pub(super) fn assert_same(got: &ArrayRef, want: &ArrayRef, what: &str) {
    assert_eq!(got.data_type(), want.data_type(), "{what}: types");
    assert_eq!(
        got.to_data(),
        want.to_data(),
        "{what}:\n got {got:?}\nwant {want:?}"
    );
}
