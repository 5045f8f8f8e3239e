//! Conversions of Python arguments into core types: durations, aggregate specs, Arrow input.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyTable;
use windowstore_core::agg::{AggFunc, AggSpec, Overflow};
use windowstore_core::time::Duration;

use crate::errors::{to_py, IntoPyResult};

/// A duration as the Python layer passes it: `("ticks", n)` or `("nanos", n)`.
pub type PyDuration = (String, i128);

/// Converts a [`PyDuration`]; `parameter` names it in errors.
pub fn duration(d: PyDuration, parameter: &'static str) -> PyResult<Duration> {
    match d.0.as_str() {
        "ticks" => i64::try_from(d.1).map(Duration::Ticks).map_err(|_| {
            to_py(windowstore_core::Error::invalid(
                parameter,
                format!("{} ticks overflows 64 bits", d.1),
            ))
        }),
        "nanos" => Ok(Duration::Nanos(d.1)),
        other => Err(PyValueError::new_err(format!(
            "internal: unknown duration kind {other:?} for {parameter}"
        ))),
    }
}

/// An aggregate as the Python layer passes it: `(func, column, alias, max_size, overflow)`.
pub type PyAgg = (
    String,
    Option<String>,
    Option<String>,
    Option<usize>,
    Option<String>,
);

/// Converts [`PyAgg`] tuples into core specs.
pub fn aggs(specs: Vec<PyAgg>) -> PyResult<Vec<AggSpec>> {
    specs
        .into_iter()
        .map(|(func, column, alias, max_size, overflow)| {
            let overflow = Overflow::parse(overflow.as_deref().unwrap_or("drop_oldest")).py()?;
            let func = AggFunc::from_name(&func, max_size, overflow).py()?;
            Ok(AggSpec {
                func,
                column,
                alias,
            })
        })
        .collect()
}

/// Reads every batch of an Arrow input (a batch, a table, any stream) while holding the GIL.
pub fn batches(data: AnyRecordBatch) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let reader = data.into_reader()?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(windowstore_core::Error::arrow("reading the Arrow input"))
        .py()?;
    Ok((schema, batches))
}

/// Batches of one schema as a pyarrow Table.
pub fn table(
    py: Python<'_>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'_, PyAny>> {
    PyTable::try_new(batches, schema)?.into_pyarrow(py)
}

/// One batch as a pyarrow Table.
pub fn batch_table(py: Python<'_>, batch: RecordBatch) -> PyResult<Bound<'_, PyAny>> {
    table(py, batch.schema(), vec![batch])
}
