//! The error type of windowstore-core: one enum, one variant per kind of failure a caller can act on.

use std::path::PathBuf;

/// Everything that can go wrong in windowstore-core.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A window or store parameter is out of its domain (`gap <= 0`, `retention <= 0`, ...).
    #[error("invalid {parameter}: {reason}")]
    InvalidWindowSpec {
        /// The parameter at fault, by its public name.
        parameter: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An input column is missing or of a type the operation cannot use.
    #[error("column {column:?}: {reason}")]
    Schema {
        /// The column at fault, by its name in the input.
        column: String,
        /// What is wrong with it (the type found and the types accepted).
        reason: String,
    },
    /// A bounded `collect` overflowed under `overflow="fail"`, in a window of any kind (Python's
    /// `SessionOverflowError`).
    #[error("collect({column}) overflowed max_size {max_size} in the window [{start}, {end}] of key {key}")]
    CollectOverflow {
        /// The key, rendered for people.
        key: String,
        /// The window start.
        start: i64,
        /// The window end.
        end: i64,
        /// The collected column.
        column: String,
        /// The bound that was exceeded.
        max_size: usize,
    },
    /// An aggregate's exact value does not fit its output type: a decimal `sum` or `mean`
    /// beyond the output's precision (never wrapped or truncated).
    #[error("{aggregate} overflows{}: {reason}", window_text(.key, *.start, *.end))]
    AggregateOverflow {
        /// The aggregate, as `sum(column)`.
        aggregate: String,
        /// The aggregated column.
        column: String,
        /// The key, rendered for people; empty where the layer that failed does not know it.
        key: String,
        /// The window start (with `key`).
        start: i64,
        /// The window end (with `key`).
        end: i64,
        /// The exact value and the output type it does not fit.
        reason: String,
    },
    /// A record could not be processed under `on_invalid="error"`.
    #[error("invalid record {row} of the input: {reason}")]
    InvalidRecord {
        /// The row number in the whole input of the call (all its chunks).
        row: usize,
        /// Why (the rejection reason: null_key, null_time, invalid_gap, time_overflow, late).
        reason: String,
    },
    /// A call on a processor that takes no more calls: it was flushed (end of input).
    #[error(
        "{method}() after flush(): the processor was flushed (end of input) and takes no more \
         calls; create a new processor for more input, or restore a snapshot taken before the \
         flush"
    )]
    ProcessorClosed {
        /// The method that was called, by its public name (`process`, `flush`, `poll`, ...).
        method: &'static str,
    },
    /// A snapshot file could not be written, or was refused on restore.
    #[error("snapshot {path}: {reason}")]
    Snapshot {
        /// The snapshot file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A limit of the store's in-memory layout was reached (distinct live keys, bytes per
    /// segment or per value). Nothing else: limits of one call are [`Error::BatchTooLarge`].
    #[error("store capacity exceeded: {0}")]
    Capacity(String),
    /// One call's input or output exceeds a limit of the engine's per-call layout (row indexes
    /// of 32 bits, list offsets of 31 bits); the remedy is to split the input by key.
    #[error("too large for one call: {0}")]
    BatchTooLarge(String),
    /// An Arrow kernel failed while building, gathering or concatenating arrays.
    #[error("{context}: {source}")]
    Arrow {
        /// What was being done, e.g. "building output".
        context: &'static str,
        /// The Arrow error itself.
        #[source]
        source: arrow_schema::ArrowError,
    },
    /// The caller's own code, run on a call's output before the call commits (see
    /// [`crate::processor::Then`]), failed: the call was rolled back. The error is the
    /// caller's, passed through untouched.
    #[error("{0}")]
    Callback(Box<dyn std::error::Error + Send + Sync>),
    /// An invariant of windowstore does not hold: a bug, never the caller's fault.
    #[error("internal error (a bug in windowstore, please report it): {0}")]
    Internal(String),
}

impl Error {
    /// An [`Error::InvalidWindowSpec`] for `parameter`.
    pub fn invalid(parameter: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidWindowSpec {
            parameter,
            reason: reason.into(),
        }
    }

    /// An [`Error::Schema`] for `column`.
    pub fn schema(column: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Schema {
            column: column.into(),
            reason: reason.into(),
        }
    }

    /// A mapper of an Arrow error into [`Error::Arrow`] with `context`, for `map_err`:
    /// `concat_batches(..).map_err(Error::arrow("concatenating the input"))`.
    pub fn arrow(context: &'static str) -> impl FnOnce(arrow_schema::ArrowError) -> Self {
        move |source| Self::Arrow { context, source }
    }

    /// An [`Error::Snapshot`] for the file at `path`.
    pub fn snapshot(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::Snapshot {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
impl Error {
    /// The parameter an [`Error::InvalidWindowSpec`] names; `None` for any other error.
    pub(crate) fn invalid_parameter(&self) -> Option<&'static str> {
        match self {
            Self::InvalidWindowSpec { parameter, .. } => Some(parameter),
            _ => None,
        }
    }
}

/// `" in the window [start, end] of key key"`, or nothing without a key.
fn window_text(key: &str, start: i64, end: i64) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!(" in the window [{start}, {end}] of key {key}")
    }
}

/// The result type of windowstore-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::Error;
    use arrow_schema::ArrowError;

    #[test]
    fn an_arrow_error_keeps_its_cause_and_context() {
        let err =
            Error::arrow("building output")(ArrowError::ComputeError("offset overflow".into()));
        assert_eq!(
            err.to_string(),
            "building output: Compute error: offset overflow"
        );
        let source = std::error::Error::source(&err).expect("the Arrow error is the source");
        assert!(source.is::<ArrowError>());
    }
}
