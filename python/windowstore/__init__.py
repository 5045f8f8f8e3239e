"""windowstore: Kafka-Streams-grade session and sliding windows, with a Rust core.

Importing ``windowstore`` never imports pyspark; the Spark adapters live in ``windowstore.spark``.
"""

from __future__ import annotations

from windowstore import agg, exceptions
from windowstore._core import SessionStore, __version__

# The whole exception tree, as exceptions.__all__ lists it.
from windowstore.exceptions import *  # noqa: F403
from windowstore.sessions import SessionWindowProcessor, session_windows
from windowstore.sliding import SlidingWindowProcessor, sliding_windows

__all__ = [
    "SessionStore",
    "SessionWindowProcessor",
    "SlidingWindowProcessor",
    "__version__",
    "agg",
    "session_windows",
    "sliding_windows",
]
__all__ += exceptions.__all__
