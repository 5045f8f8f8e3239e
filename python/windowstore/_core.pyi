"""Type stubs of the compiled module ``windowstore._core`` (checked with mypy.stubtest)."""

from os import PathLike
from typing import Any, Literal, final

import pyarrow as pa

__all__ = [
    "Processor",
    "SessionStore",
    "__version__",
    "_panic",
    "merge_session_partials",
    "session_partials",
    "session_windows",
    "sliding_windows",
]

__version__: str

def _panic(message: str) -> None:
    """Panics in Rust under the bindings' guard (tests only): raises ``InternalError``."""

_Key = bytes | str
_Session = tuple[int, int, bytes]
_KeyedSession = tuple[bytes, int, int, bytes]

@final
class SessionStore:
    """A segmented store of session aggregates keyed by (key, end, start), as in Kafka's KIP-94.

    Sessions live in segments indexed by their end time (``floor(end / segment_interval)``).
    Store time is the largest end ever put; a session with ``end < store_time - retention + 1``
    is expired: invisible to reads, refused (and counted) on put, and dropped with its segment.

    One store may be used from several threads: calls are serialized by a read-write lock
    (reads proceed together, a ``put`` or ``remove`` runs alone), and every call sees the store
    between two writes. A call waits for the lock with the GIL released; scans, ``to_arrow``
    and ``snapshot`` release it while they work. Integers beyond 64 bits raise
    ``InvalidWindowSpec`` naming the parameter (lookup bounds are clamped instead).

    Example:
        >>> store = SessionStore(retention=1000)
        >>> store.put("user-1", 0, 99, b"agg")
        'inserted'
        >>> store.find_sessions("user-1", 50, 200)
        [(0, 99, b'agg')]
    """

    def __new__(cls, retention: int, segment_interval: int | None = None) -> SessionStore: ...
    @property
    def retention(self) -> int: ...
    @property
    def segment_interval(self) -> int: ...
    @property
    def store_time(self) -> int | None: ...
    def put(
        self, key: _Key, start: int, end: int, value: bytes
    ) -> Literal["inserted", "updated", "expired"]: ...
    def remove(self, key: _Key, start: int, end: int) -> bool: ...
    def fetch_session(self, key: _Key, start: int, end: int) -> bytes | None: ...
    def find_sessions(self, key: _Key, earliest_end: int, latest_start: int) -> list[_Session]: ...
    def backward_find_sessions(
        self, key: _Key, earliest_end: int, latest_start: int
    ) -> list[_Session]: ...
    def fetch(self, key: _Key) -> list[_Session]: ...
    def fetch_range(self, key_from: _Key, key_to: _Key) -> list[_KeyedSession]: ...
    def find_sessions_by_end(self, earliest_end: int, latest_end: int) -> list[_KeyedSession]: ...
    def metrics(self) -> dict[str, int | None]: ...
    def to_arrow(self) -> pa.Table: ...
    def snapshot(self, path: str | PathLike[str]) -> None: ...
    @staticmethod
    def restore(path: str | PathLike[str]) -> SessionStore: ...

_Duration = tuple[str, int]
_Agg = tuple[str, str | None, str | None, int | None, str | None]

@final
class Processor:
    """A streaming window processor of either kind (wrapped by windowstore.SessionWindowProcessor
    and windowstore.SlidingWindowProcessor)."""

    @staticmethod
    def sessions(
        *,
        key: list[str],
        time: str,
        time_unit: str | None,
        gap: _Duration | None,
        gap_column: str | None,
        max_gap: _Duration | None,
        grace: _Duration,
        retention: _Duration | None,
        emit: str,
        aggs: list[_Agg],
        on_invalid: str,
    ) -> Processor: ...
    @staticmethod
    def sliding(
        *,
        key: list[str],
        time: str,
        time_unit: str | None,
        time_difference: _Duration,
        grace: _Duration,
        emit: str,
        aggs: list[_Agg],
        on_invalid: str,
    ) -> Processor: ...
    @property
    def kind(self) -> str: ...
    def process(self, data: Any) -> pa.Table: ...
    def flush(self) -> pa.Table | None: ...
    def rejected(self) -> pa.Table | None: ...
    def metrics(self) -> dict[str, int | None]: ...
    def snapshot(self, path: str | PathLike[str]) -> None: ...
    @staticmethod
    def restore(path: str | PathLike[str], kind: str | None = None) -> Processor: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes, kind: str | None = None) -> Processor: ...
    def advance(self, t: int) -> pa.Table | None: ...
    def next_close(self) -> int | None: ...

def session_windows(
    data: Any,
    *,
    key: list[str],
    time: str,
    time_unit: str | None,
    gap: _Duration | None,
    gap_column: str | None,
    max_gap: _Duration | None,
    aggs: list[_Agg],
    on_invalid: str,
) -> tuple[pa.Table, pa.Table, int]:
    """Complete-data session windows: (windows, rejected rows, gaps clamped)."""

def sliding_windows(
    data: Any,
    *,
    key: list[str],
    time: str,
    time_unit: str | None,
    time_difference: _Duration,
    aggs: list[_Agg],
    on_invalid: str,
) -> tuple[pa.Table, pa.Table]: ...
def session_partials(
    data: Any,
    *,
    key: list[str],
    time: str,
    time_unit: str | None,
    gap: _Duration | None,
    gap_column: str | None,
    max_gap: _Duration | None,
    aggs: list[_Agg],
    on_invalid: str,
) -> tuple[pa.Table, pa.Table, int]:
    """Map-side partial sessions of one part: (partials, rejected rows, gaps clamped)."""

def merge_session_partials(data: Any, *, input: Any, key: list[str], aggs: list[_Agg]) -> pa.Table:
    """Session windows from partial sessions (every partial of a key in ``data``)."""
