"""windowstore: Kafka-Streams-grade session and sliding windows, with a Rust core.

Importing ``windowstore`` never imports pyspark; the Spark adapters live in ``windowstore.spark``.
"""

from __future__ import annotations

from windowstore import agg
from windowstore._core import SessionStore, __version__
from windowstore.exceptions import (
    AggregateFunctionError,
    ArrowError,
    BatchTooLargeError,
    InternalError,
    InvalidRecordError,
    InvalidWindowSpec,
    SchemaError,
    SessionOverflowError,
    SnapshotError,
    StoreCapacityError,
    WindowStoreError,
)
from windowstore.sessions import SessionWindowProcessor, session_windows
from windowstore.sliding import SlidingWindowProcessor, sliding_windows

__all__ = [
    "AggregateFunctionError",
    "ArrowError",
    "BatchTooLargeError",
    "InternalError",
    "InvalidRecordError",
    "InvalidWindowSpec",
    "SchemaError",
    "SessionOverflowError",
    "SessionStore",
    "SessionWindowProcessor",
    "SlidingWindowProcessor",
    "SnapshotError",
    "StoreCapacityError",
    "WindowStoreError",
    "__version__",
    "agg",
    "session_windows",
    "sliding_windows",
]
