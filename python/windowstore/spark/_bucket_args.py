"""What a worker of a streaming query is given for a bucket (:class:`BucketArgs`: the engine's
parameters and the schemas around it), and the Spark configurations of a bucket's state.

The driver makes it (:mod:`._stream`, :mod:`._read_state`); the workers (:mod:`._bucket`,
:mod:`._bucket_log`) and the replay of a bucket's log (:mod:`._state`) take it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from windowstore._processor import WindowProcessor
from windowstore.exceptions import InvalidWindowSpec
from windowstore.sessions import SessionWindowProcessor
from windowstore.sliding import SlidingWindowProcessor

__all__ = [
    "CACHE_CONF",
    "COMPACT_CONF",
    "DEFAULT_CACHE_ENTRIES",
    "DEFAULT_COMPACT_RATIO",
    "DEFAULT_MAX_ENTRY",
    "LAYOUT_CONF",
    "MAX_ENTRY_CONF",
    "BucketArgs",
]

#: The Spark configuration of the largest state row or entry (bytes), and its default.
MAX_ENTRY_CONF = "spark.windowstore.state.maxEntryBytes"
DEFAULT_MAX_ENTRY = 64 << 20
#: The Spark configuration of the log's compaction threshold (a share of the base snapshot).
COMPACT_CONF = "spark.windowstore.state.compactRatio"
DEFAULT_COMPACT_RATIO = 1.0
#: The Spark configuration of the worker-side cache (processors per Python worker; 0: none).
CACHE_CONF = "spark.windowstore.state.cacheEntries"
DEFAULT_CACHE_ENTRIES = 4096
#: The Spark configuration of the layout with the RocksDB provider: ``log`` or ``whole``.
LAYOUT_CONF = "spark.windowstore.state.layout"

#: The window bound columns of either kind, which hold arrival times on a processing-time clock.
_WINDOW_BOUNDS = ("session_start", "session_end", "window_start", "window_end", "window_time")

_PROCESSORS: dict[str, type[WindowProcessor]] = {
    "sessions": SessionWindowProcessor,
    "sliding": SlidingWindowProcessor,
}


@dataclass(frozen=True)
class BucketArgs:
    """Everything a worker needs: the engine's parameters and the schemas around it."""

    #: ``"sessions"`` or ``"sliding"``.
    kind: str
    #: Keyword arguments of the processor class (time in microseconds: ``time_unit="us"``;
    #: in records mode, a timestamp column: no ``time_unit``).
    params: dict[str, Any]
    #: The time column (epoch microseconds in the engine's input); none in processing time.
    time: str | None
    #: The engine's input, as the driver checked it (pandas loses integer types to NaN).
    input_schema: pa.Schema
    #: The output of one call: the engine's windows, then REJECTED and the counts.
    output_schema: pa.Schema
    #: Spark's watermark delay: stream time is the watermark plus this.
    delay_ms: int
    #: The parameters as text, kept in every state row: a restart with other parameters would
    #: otherwise silently continue old windows under new rules.
    fingerprint: str
    #: Whether the API fires a timer at a watermark equal to it (transformWithState) or only
    #: above it (applyInPandasWithState).
    timer_inclusive: bool
    #: Records output only: the input columns that hold Spark timestamps as epoch microseconds.
    #: The engine gets them as Arrow timestamps (so a session id is the same as in every other
    #: engine) and gives them back, with the session bounds, as microseconds.
    timestamps: tuple[str, ...] = ()
    #: What reads the wall clock (Spark's processing time): ``"processing"`` (windows whose
    #: records' time is their arrival), ``"idle"`` (event time with ``idle_timeout``) or None.
    wall: str | None = None
    #: The largest state row or entry (bytes): see :data:`MAX_ENTRY_CONF`.
    max_entry_bytes: int = DEFAULT_MAX_ENTRY
    #: The log layout compacts a bucket when its log outgrows this share of its base snapshot.
    compact_ratio: float = DEFAULT_COMPACT_RATIO
    #: How many processors a Python worker keeps between calls (0: none).
    cache_entries: int = DEFAULT_CACHE_ENTRIES

    def new_processor(self) -> WindowProcessor:
        return _PROCESSORS[self.kind](**self.params)

    def restore(self, params: str, engine: bytes) -> WindowProcessor:
        """The processor of a state row's ``engine`` bytes (the core refuses, naming it, a row
        written in an older layout)."""
        self.check(params)
        return self.from_snapshot(engine)

    def from_snapshot(self, snapshot: bytes) -> WindowProcessor:
        return _PROCESSORS[self.kind].from_bytes(snapshot, aggs=self.params.get("aggs", ()))

    def check(self, params: str) -> None:
        """Refuses state made with other parameters than this query's."""
        if params != self.fingerprint:
            raise InvalidWindowSpec(
                "the checkpoint's window state was made with other parameters "
                f"({params}) than this query's ({self.fingerprint}); restart with the same "
                "parameters (buckets= defaults to spark.sql.shuffle.partitions) or a new "
                "checkpoint location",
                "checkpoint",
            )

    def to_engine(self, table: pa.Table) -> pa.Table:
        """The engine's input: the ``timestamps`` columns as UTC timestamps."""
        return _cast(table, self.timestamps, pa.timestamp("us", "UTC"))

    def from_engine(self, table: pa.Table) -> pa.Table:
        """The engine's output in the call's output types: timestamps as microseconds."""
        if self.wall == "processing":
            # Arrival times come as millisecond timestamps.
            bounds = _WINDOW_BOUNDS
            table = _cast(_cast(table, bounds, pa.timestamp("us", "UTC")), bounds, pa.int64())
        if not self.timestamps:
            return table
        return _cast(table, (*self.timestamps, "session_start", "session_end"), pa.int64())


def _cast(table: pa.Table, names: Iterable[str], to: pa.DataType) -> pa.Table:
    """``table`` with its columns ``names`` (those it has) cast to ``to``."""
    for name in names:
        i = table.schema.get_field_index(name)
        if i >= 0:
            f = table.schema.field(i)
            table = table.set_column(i, f.with_type(to), table.column(i).cast(to))
    return table
