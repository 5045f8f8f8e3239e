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
    /// A snapshot file could not be written, or was refused on restore.
    #[error("snapshot {path}: {reason}")]
    Snapshot {
        /// The snapshot file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A limit of the store's in-memory layout was reached.
    #[error("store capacity exceeded: {0}")]
    Capacity(String),
}

impl Error {
    /// An [`Error::InvalidWindowSpec`] for `parameter`.
    pub fn invalid(parameter: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidWindowSpec {
            parameter,
            reason: reason.into(),
        }
    }

    /// An [`Error::Snapshot`] for the file at `path`.
    pub fn snapshot(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::Snapshot {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// The result type of windowstore-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;
