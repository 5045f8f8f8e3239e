"""windowstore: Kafka-Streams-grade session and sliding windows, with a Rust core.

Importing ``windowstore`` never imports pyspark; the Spark adapters live in ``windowstore.spark``.
"""

from __future__ import annotations

from windowstore._core import SessionStore, __version__
from windowstore.exceptions import (
    InvalidWindowSpec,
    SnapshotError,
    StoreCapacityError,
    WindowStoreError,
)

__all__ = [
    "InvalidWindowSpec",
    "SessionStore",
    "SnapshotError",
    "StoreCapacityError",
    "WindowStoreError",
    "__version__",
]
