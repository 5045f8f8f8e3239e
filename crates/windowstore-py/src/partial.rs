//! `windowstore._core.session_partials` and `merge_session_partials`: map-side partial sessions
//! and their merge, for engines that split the input across workers (Spark).

use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use windowstore_core::session::partial;

use crate::convert::{batch_table, batches, PyAgg, PyDuration};
use crate::errors::IntoPyResult;
use crate::guard::guard;
use crate::sessions::{complete_args, complete_result, gap_spec, CompleteResult};

/// Partial sessions of one part of the input: returns (partials, rejected, gap_clamped).
#[pyfunction]
#[pyo3(signature = (data, *, key, time, time_unit, gap, gap_column, max_gap, aggs, on_invalid))]
#[allow(clippy::too_many_arguments)]
pub fn session_partials<'py>(
    py: Python<'py>,
    data: AnyRecordBatch,
    key: Vec<String>,
    time: String,
    time_unit: Option<String>,
    gap: Option<PyDuration>,
    gap_column: Option<String>,
    max_gap: Option<PyDuration>,
    aggs: Vec<PyAgg>,
    on_invalid: String,
) -> PyResult<CompleteResult<'py>> {
    guard(|| {
        let gap = gap_spec(gap, gap_column, max_gap)?;
        let args = complete_args(data, key, time, time_unit, aggs, on_invalid)?;
        let result = py
            .detach(|| {
                partial::session_partials(
                    args.schema,
                    &args.batches,
                    args.input,
                    gap,
                    args.aggs,
                    args.on_invalid,
                )
            })
            .py()?;
        complete_result(py, result.partials, result.rejected, result.gap_clamped)
    })
}

/// Session windows from the partial sessions in `data` (all partials of each key); `input` is
/// any Arrow data of the schema the partials were made from.
#[pyfunction]
#[pyo3(signature = (data, *, input, key, aggs))]
pub fn merge_session_partials<'py>(
    py: Python<'py>,
    data: AnyRecordBatch,
    input: AnyRecordBatch,
    key: Vec<String>,
    aggs: Vec<PyAgg>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let aggs = crate::convert::aggs(aggs)?;
        let (input_schema, _) = batches(input)?;
        let (schema, partials) = batches(data)?;
        let windows = py
            .detach(|| partial::merge_session_partials(&input_schema, schema, &partials, key, aggs))
            .py()?;
        batch_table(py, windows)
    })
}
