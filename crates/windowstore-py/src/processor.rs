//! What both streaming processor classes have: one macro writes their `#[pymethods]` block,
//! around each class's own constructor and counters.

/// The `#[pymethods]` of processor class `$class` (wrapping core processor `$core` in
/// `self.inner`): `$ctor` is the class's `#[new]` constructor, `$counters` names its counters
/// for `metrics()` from `$c`, the core processor's `counters()`.
macro_rules! processor_methods {
    (
        $class:ident, $core:ty,
        counters: |$c:ident| [$(($name:literal, $value:expr)),* $(,)?],
        $($ctor:tt)*
    ) => {
        #[pymethods]
        impl $class {
            $($ctor)*

            /// Processes every batch of `data` in order; returns the output as a pyarrow Table.
            fn process<'py>(
                &mut self,
                py: Python<'py>,
                data: AnyRecordBatch,
            ) -> PyResult<Bound<'py, PyAny>> {
                let (schema, input) = batches(data)?;
                let inner = &mut self.inner;
                let out = py
                    .detach(|| -> windowstore_core::Result<_> {
                        inner.bind(schema)?;
                        input
                            .iter()
                            .map(|b| inner.process(b))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .py()?;
                let schema = self.inner.output_schema().expect("bound above");
                table(py, schema, out)
            }

            /// End of input; returns the remaining output, or None before any input.
            fn flush<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
                let inner = &mut self.inner;
                crate::processor::maybe_table(py, py.detach(|| inner.flush()).py()?)
            }

            /// Takes the rejected rows so far, or None before any input.
            fn rejected<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
                crate::processor::maybe_table(py, self.inner.rejected().py()?)
            }

            fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                let d = PyDict::new(py);
                let $c = self.inner.counters();
                $(d.set_item($name, $value)?;)*
                let mut rejected = 0;
                for reason in Reason::ALL {
                    let n = self.inner.rejected_count(reason);
                    rejected += n;
                    d.set_item(format!("rejected_{}", reason.as_str()), n)?;
                }
                d.set_item("rejected", rejected)?;
                d.set_item("stream_time", self.inner.stream_time())?;
                if let Some(m) = self.inner.store_metrics() {
                    for (name, value) in m.pairs() {
                        d.set_item(format!("store_{name}"), value)?;
                    }
                }
                Ok(d)
            }

            fn snapshot(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
                let inner = &self.inner;
                py.detach(|| inner.snapshot(&path)).py()
            }

            #[staticmethod]
            fn restore(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
                let inner = py.detach(|| <$core>::restore(&path)).py()?;
                Ok(Self { inner })
            }

            /// The whole state as bytes (what `snapshot` writes to a file).
            fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
                let inner = &self.inner;
                let bytes = py.detach(|| inner.to_bytes()).py()?;
                Ok(PyBytes::new(py, &bytes))
            }

            #[staticmethod]
            fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
                let inner = py.detach(|| <$core>::from_bytes(data)).py()?;
                Ok(Self { inner })
            }

            /// Advances stream time to `t` (ticks of the time column); returns what that emits.
            fn advance<'py>(
                &mut self,
                py: Python<'py>,
                t: i64,
            ) -> PyResult<Option<Bound<'py, PyAny>>> {
                let inner = &mut self.inner;
                crate::processor::maybe_table(py, py.detach(|| inner.advance(t)).py()?)
            }

            /// The earliest stream time at which a window not emitted yet closes (`final`).
            fn next_close(&self) -> Option<i64> {
                self.inner.next_close()
            }
        }
    };
}

pub(crate) use processor_methods;

use arrow_array::RecordBatch;
use pyo3::prelude::*;

/// `batch` as a pyarrow Table, or None.
pub(crate) fn maybe_table(
    py: Python<'_>,
    batch: Option<RecordBatch>,
) -> PyResult<Option<Bound<'_, PyAny>>> {
    batch
        .map(|b| crate::convert::table(py, b.schema(), vec![b]))
        .transpose()
}
