"""Session and sliding windows of Spark DataFrames, computed by windowstore's Rust engine.

Importing [`windowstore`][] never imports pyspark; this subpackage does. Executors need
windowstore installed (or shipped in a venv-pack archive through ``spark.archives``).

Examples:
    >>> from windowstore import agg
    >>> from windowstore.spark import session_windows
    >>> sessions = session_windows(clicks, key="user_id", time="ts", gap="30m",
    ...                            aggs=[agg.count(), agg.sum("amount")])
"""

from __future__ import annotations

from windowstore._causes import root_cause
from windowstore.exceptions import WorkerPythonError
from windowstore.spark._metrics import metrics
from windowstore.spark._read_state import read_state
from windowstore.spark._spark_session import spark_session
from windowstore.spark.sessions import session_windows
from windowstore.spark.sliding import sliding_windows

__all__ = [
    "WorkerPythonError",
    "metrics",
    "read_state",
    "root_cause",
    "session_windows",
    "sliding_windows",
    "spark_session",
]
