"""The functions Spark runs in its Python workers, over Arrow batches (no pandas).

They are pickled by reference, so every executor imports ``windowstore`` (install the wheel
there, or ship it in a venv-pack archive: see the README). Each takes its parameters first
(bound with :func:`functools.partial` on the driver) and the partition's batches last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from windowstore import _core, _records
from windowstore._durations import DurationLike
from windowstore._processor import OnInvalid, TimeUnit
from windowstore._udfs import Finisher
from windowstore.agg import Agg
from windowstore.exceptions import InvalidRecordError
from windowstore.sliding import sliding_windows

if TYPE_CHECKING:
    from windowstore._core import _SessionSpec

__all__ = [
    "CHUNK_ROWS",
    "SessionArgs",
    "SlidingArgs",
    "invalid_row",
    "merge_partials",
    "rejected_sessions",
    "rejected_sliding",
    "session_partials",
    "session_records",
    "sliding",
    "sliding_call",
]

#: Rows per call of the partial-session engine on the map side: bounds a worker's memory on
#: huge partitions (partials of one key from several chunks merge after the shuffle anyway).
CHUNK_ROWS = 1 << 22

_Agg = tuple[str, str | None, str | None, int | None, str | None]
_Duration = tuple[str, int]


@dataclass(frozen=True)
class SessionArgs:
    """The parameters of the session engine, as the compiled core takes them."""

    #: What both of the core's session calls take (``session_partials``, ``session_windows``).
    spec: _SessionSpec
    #: Computes the user-defined aggregates of the merged sessions (None: none).
    finish: Finisher | None = None
    #: The cap on a session's span (None: none); not mergeable, so no partial sessions.
    max_duration: _Duration | None = None
    #: The boolean columns of session start and end markers (None: none); not mergeable
    #: either (a marker moves the cuts of a key's later records), so no partial sessions.
    starts_session: str | None = None
    ends_session: str | None = None

    @property
    def key(self) -> list[str]:
        """The key columns."""
        return self.spec["key"]

    @property
    def whole_rows(self) -> bool:
        """Whether the sessions need every row of a key at once (a cap or markers): the rows,
        not partial sessions, are shuffled by key."""
        return (self.max_duration, self.starts_session, self.ends_session) != (None,) * 3

    def core(self, aggs: list[_Agg] | None = None) -> dict[str, Any]:
        """Keyword arguments of ``_core.session_partials`` / ``_core.session_windows`` (with
        ``max_duration`` and the markers, of the latter only), with ``aggs`` if given."""
        cut = {
            name: value
            for name, value in (
                ("max_duration", self.max_duration),
                ("starts_session", self.starts_session),
                ("ends_session", self.ends_session),
            )
            if value is not None
        }
        return cut | {**self.spec, "aggs": self.spec["aggs"] if aggs is None else aggs}

    def records_core(self) -> dict[str, Any]:
        """Keyword arguments of the complete-data engine's records output (no ``aggs``)."""
        kwargs = self.core()
        del kwargs["aggs"]
        return kwargs


@dataclass(frozen=True)
class SlidingArgs:
    """The parameters of the sliding engine (``windowstore.sliding_windows``)."""

    key: list[str]
    time: str
    time_unit: TimeUnit | None
    time_difference: DurationLike
    aggs: tuple[Agg, ...]
    on_invalid: OnInvalid


def chunks(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """The non-empty batches of ``batches`` gathered into tables of about ``rows`` rows."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.Table.from_batches(pending)
            pending, count = [], 0
    if pending:
        yield pa.Table.from_batches(pending)


def whole(batches: Iterable[pa.RecordBatch]) -> pa.Table | None:
    """Every non-empty batch of the partition as one table, or None for an empty partition."""
    parts = [b for b in batches if b.num_rows]
    return pa.Table.from_batches(parts) if parts else None


def _whole(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.Table]:
    """The partition as one table (``whole``), or nothing for an empty partition."""
    table = whole(batches)
    if table is not None:
        yield table


def _each(
    tables: Iterable[pa.Table], call: Callable[[pa.Table], pa.Table]
) -> Iterator[pa.RecordBatch]:
    """The batches of ``call`` on each of ``tables``, an engine's call: a row it refuses fails
    the task, with the row's values (``invalid_row``)."""
    for table in tables:
        try:
            out = call(table)
        except InvalidRecordError as e:
            raise invalid_row(e, table) from None
        yield from out.to_batches()


def invalid_row(e: InvalidRecordError, table: pa.Table) -> InvalidRecordError:
    """``e`` with the offending row's values, so that the failed job says which row it was."""
    row = e.row if e.row is not None and 0 <= e.row < table.num_rows else None
    values = "" if row is None else f" {table.slice(row, 1).to_pylist()[0]}"
    return InvalidRecordError(
        f"windowstore: unusable row ({e.reason}){values}; on_invalid='drop' with "
        f"return_rejected=True keeps such rows aside with their reason",
        e.row,
        e.reason,
    )


def session_partials(
    args: SessionArgs, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Map side: the partial sessions of the partition, chunk by chunk."""
    return _each(chunks(batches, CHUNK_ROWS), lambda t: _core.session_partials(t, **args.core())[0])


def merge_partials(
    args: SessionArgs, input_schema: pa.Schema, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Reduce side: all partial sessions of the partition's keys merged into sessions."""
    table = whole(batches)
    if table is None:
        return
    windows = _core.merge_session_partials(
        table, input=input_schema.empty_table(), key=args.key, aggs=args.spec["aggs"]
    )
    if args.finish is not None:
        windows = args.finish(windows)
    yield from windows.to_batches()


def session_records(
    args: SessionArgs, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Every accepted row of the partition's keys (all rows of a key are here), tagged with its
    session: the input's columns, ``session_start``, ``session_end`` and ``session_id``."""
    return _each(_whole(batches), lambda t: _records.complete_records(t, args.records_core())[0])


def capped_sessions(
    args: SessionArgs, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The sessions of the partition's keys (all rows of a key are here) with a maximum
    duration or markers, finished."""

    def capped(table: pa.Table) -> pa.Table:
        windows, _rejected, _clamped = _core.session_windows(table, **args.core())
        return windows if args.finish is None else args.finish(windows)

    return _each(_whole(batches), capped)


def rejected_sessions(
    args: SessionArgs, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The rows the session engine rejects, with their reason (the engine's own rules)."""
    for batch in batches:
        if batch.num_rows:
            _windows, rejected, _clamped = _core.session_windows(batch, **args.core(aggs=[]))
            yield from rejected.to_batches()


def sliding_call(
    args: SlidingArgs, table: pa.Table, aggs: tuple[Agg, ...]
) -> tuple[pa.Table, pa.Table]:
    """The engine's windows and rejected rows of ``table`` with ``args`` but ``aggs``."""
    return sliding_windows(
        table,
        key=args.key,
        time=args.time,
        time_difference=args.time_difference,
        aggs=aggs,
        on_invalid=args.on_invalid,
        time_unit=args.time_unit,
        return_rejected=True,
    )


def sliding(args: SlidingArgs, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Every sliding window of the partition's keys (all records of a key are here)."""
    return _each(_whole(batches), lambda t: sliding_call(args, t, args.aggs)[0])


def rejected_sliding(
    args: SlidingArgs, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The rows the sliding engine rejects, with their reason."""
    for batch in batches:
        if batch.num_rows:
            _windows, rejected = sliding_call(args, pa.Table.from_batches([batch]), ())
            yield from rejected.to_batches()
