"""Type stubs of the compiled module ``windowstore._core`` (checked with mypy.stubtest)."""

from collections.abc import Callable
from os import PathLike
from typing import Any, Literal, TypedDict, final

import pyarrow as pa
from typing_extensions import Unpack

__all__ = [
    "RECORDS_LAST",
    "RECORDS_ROW",
    "SESSION_COLUMNS",
    "Processor",
    "SessionStore",
    "__version__",
    "_panic",
    "check_output",
    "check_session_durations",
    "check_sliding_durations",
    "merge_session_partials",
    "session_partials",
    "session_windows",
    "sliding_windows",
]

__version__: str
#: Records mode's hidden input column of row numbers and its aggregate, and the columns it adds.
RECORDS_ROW: str
RECORDS_LAST: str
SESSION_COLUMNS: tuple[str, str, str]

def check_output(output: str, aggs: int, emit: str) -> bool:
    """Whether ``output`` asks for records, refusing what records mode cannot do."""

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

    ``SessionStore(retention, segment_interval=None)``: ``retention`` is how long (ticks of
    session end) a session stays visible behind store time; ``segment_interval`` is the span
    of session ends one segment holds (default ``max(retention // 2, 1)``).

    Examples:
        >>> store = SessionStore(retention=1000)
        >>> store.put("user-1", 0, 99, b"agg")
        'inserted'
        >>> store.find_sessions("user-1", 50, 200)
        [(0, 99, b'agg')]
    """

    def __new__(cls, retention: int, segment_interval: int | None = None) -> SessionStore: ...
    @property
    def retention(self) -> int:
        """How long (ticks) a session stays visible behind store time."""
    @property
    def segment_interval(self) -> int:
        """The span of session ends (ticks) one segment holds."""
    @property
    def store_time(self) -> int | None:
        """The largest session end ever put; ``None`` before the first put."""
    def put(
        self, key: _Key, start: int, end: int, value: bytes
    ) -> Literal["inserted", "updated", "expired"]:
        """Stores ``value`` for the session ``[start, end]`` of ``key``.

        Returns ``"inserted"`` for a new session, ``"updated"`` when it replaced the value of
        the same session, ``"expired"`` when the session is already beyond retention (nothing
        is stored; counted as ``expired_puts``)."""
    def remove(self, key: _Key, start: int, end: int) -> bool:
        """Removes the session ``[start, end]`` of ``key``; ``False`` if there was none."""
    def fetch_session(self, key: _Key, start: int, end: int) -> bytes | None:
        """The value of exactly the session ``[start, end]`` of ``key`` (key bytes compared
        exactly), or ``None``."""
    def find_sessions(self, key: _Key, earliest_end: int, latest_start: int) -> list[_Session]:
        """Every live session of ``key`` with ``end >= earliest_end`` and
        ``start <= latest_start``, as ``(start, end, value)``, by end then start ascending."""
    def backward_find_sessions(
        self, key: _Key, earliest_end: int, latest_start: int
    ) -> list[_Session]:
        """[`find_sessions`][windowstore.SessionStore.find_sessions] in reverse order."""
    def fetch(self, key: _Key) -> list[_Session]:
        """Every live session of ``key``, as ``(start, end, value)``, by end then start."""
    def fetch_range(self, key_from: _Key, key_to: _Key) -> list[_KeyedSession]:
        """Every live session of the keys from ``key_from`` to ``key_to`` (byte order, both
        inclusive), as ``(key, start, end, value)``, by key, end, start. An inverted range is
        empty."""
    def find_sessions_by_end(self, earliest_end: int, latest_end: int) -> list[_KeyedSession]:
        """Every live session of every key with ``earliest_end <= end <= latest_end``, as
        ``(key, start, end, value)``, by end, start, key; reads only the segments concerned."""
    def metrics(self) -> dict[str, int | None]:
        """Counters and sizes: live sessions and keys, segments, key, value and total bytes,
        puts, removes, expired puts, expired sessions, and ``store_time``.

        ``live_sessions`` still counts expired sessions whose segment has not been dropped
        yet; a snapshot leaves them out and counts them in ``expired_sessions``."""
    def to_arrow(self) -> pa.Table:
        """Every live session as a table ``key, start, end, value``, by key, end, start."""
    def snapshot(self, path: str | PathLike[str]) -> None:
        """Writes the store atomically to ``path`` (Arrow IPC behind a checksummed header): a
        crash mid-write leaves the previous file readable."""
    @staticmethod
    def restore(path: str | PathLike[str]) -> SessionStore:
        """The store a [`snapshot`][windowstore.SessionStore.snapshot] wrote; a damaged file is
        refused whole with ``SnapshotError``."""

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
        time: str | None,
        time_unit: str | None,
        gap: _Duration | None,
        gap_column: str | None,
        max_gap: _Duration | None,
        grace: _Duration,
        retention: _Duration | None,
        emit: str,
        aggs: list[_Agg],
        on_invalid: str,
        max_duration: _Duration | None = None,
        clock: str = "event",
        idle_timeout: _Duration | None = None,
        output: str = "windows",
        starts_session: str | None = None,
        ends_session: str | None = None,
    ) -> Processor: ...
    @staticmethod
    def sliding(
        *,
        key: list[str],
        time: str | None,
        time_unit: str | None,
        time_difference: _Duration,
        grace: _Duration,
        emit: str,
        aggs: list[_Agg],
        on_invalid: str,
        clock: str = "event",
        idle_timeout: _Duration | None = None,
    ) -> Processor: ...
    @property
    def kind(self) -> str: ...
    @property
    def clock(self) -> str: ...
    def process(
        self,
        data: Any,
        now: int | None = None,
        then: Callable[[pa.Table], pa.Table] | None = None,
    ) -> pa.Table:
        """Processes ``data`` as one transaction at the wall clock's reading ``now`` (epoch ms;
        None: the system clock); ``then`` (if given) runs on the output before the call
        commits and its result is returned: if it raises, the call changes nothing."""
    def flush(self, then: Callable[[pa.Table], pa.Table] | None = None) -> pa.Table | None: ...
    def rejected(self) -> pa.Table | None: ...
    def metrics(self) -> dict[str, int | None]: ...
    def snapshot(self, path: str | PathLike[str]) -> None: ...
    @staticmethod
    def restore(path: str | PathLike[str], kind: str | None = None) -> Processor: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes, kind: str | None = None) -> Processor: ...
    def advance(
        self,
        t: int,
        now: int | None = None,
        then: Callable[[pa.Table], pa.Table] | None = None,
    ) -> pa.Table | None: ...
    def poll(
        self, now: int | None = None, then: Callable[[pa.Table], pa.Table] | None = None
    ) -> pa.Table | None: ...
    def resume_idle(self, run: str | None) -> None: ...
    def windows(
        self,
        keys: pa.RecordBatch | None = None,
        earliest_end: int | None = None,
        latest_start: int | None = None,
    ) -> pa.Table | None:
        """The open windows of the keys in ``keys`` (one row: one key; first and last row: a
        range; None: every key) within the time bounds (ticks); None before the first batch."""
    def key_schema(self) -> pa.Schema | None: ...
    def output_schema(self) -> pa.Schema | None: ...
    def next_close(self) -> int | None: ...
    def _set_batched(self, on: bool) -> None: ...
    def _batched_calls(self) -> int: ...

class _SessionSpec(TypedDict):
    """The parameters of both calls of the session engine, ``session_windows`` and
    ``session_partials``."""

    key: list[str]
    time: str
    time_unit: str | None
    gap: _Duration | None
    gap_column: str | None
    max_gap: _Duration | None
    aggs: list[_Agg]
    on_invalid: str

def session_windows(
    data: Any,
    *,
    max_duration: _Duration | None = None,
    output: str = "windows",
    starts_session: str | None = None,
    ends_session: str | None = None,
    **spec: Unpack[_SessionSpec],
) -> tuple[pa.Table, pa.Table, int]:
    """Complete-data session windows: (windows, or with output="records" every usable row
    tagged with its session, rejected rows, gaps clamped)."""

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
def check_session_durations(
    time_type: pa.DataType | None,
    *,
    time: str | None,
    time_unit: str | None,
    gap: _Duration | None,
    gap_column: str | None,
    max_gap: _Duration | None,
    grace: _Duration,
    retention: _Duration | None,
    max_duration: _Duration | None,
    clock: str,
    idle_timeout: _Duration | None,
) -> None:
    """Checks session durations against a time column of Arrow type ``time_type``."""

def check_sliding_durations(
    time_type: pa.DataType | None,
    *,
    time: str | None,
    time_unit: str | None,
    time_difference: _Duration,
    grace: _Duration,
    clock: str,
    idle_timeout: _Duration | None,
) -> None:
    """Checks sliding-window durations against a time column of Arrow type ``time_type``."""

def session_partials(data: Any, **spec: Unpack[_SessionSpec]) -> tuple[pa.Table, pa.Table, int]:
    """Map-side partial sessions of one part: (partials, rejected rows, gaps clamped)."""

def merge_session_partials(data: Any, *, input: Any, key: list[str], aggs: list[_Agg]) -> pa.Table:
    """Session windows from partial sessions (every partial of a key in ``data``)."""
