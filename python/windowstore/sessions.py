"""Session windows over Arrow data: a streaming processor and a complete-data function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, overload

import pyarrow as pa

from windowstore import _core
from windowstore._durations import DurationLike, to_duration
from windowstore._processor import (
    Emit,
    OnInvalid,
    TimeUnit,
    WindowProcessor,
    aggs_arg,
    check_aggs,
    finisher,
    keys_arg,
)
from windowstore.agg import Agg

__all__ = ["SessionWindowProcessor", "session_windows"]


def _gaps(
    gap: DurationLike | None, gap_column: str | None, max_gap: DurationLike | None
) -> tuple[tuple[str, int] | None, str | None, tuple[str, int] | None]:
    return (
        None if gap is None else to_duration(gap, "gap"),
        gap_column,
        None if max_gap is None else to_duration(max_gap, "max_gap"),
    )


class SessionWindowProcessor(WindowProcessor):
    """Session windows over a stream of Arrow batches, record by record (Kafka's semantics).

    Each record at time ``t`` with gap ``g`` covers ``[t, t + g]``; records whose intervals chain
    share a session, reported as ``[first time, last time]``. A session closes once stream time
    passes its reach (``max(t + g)``) plus ``grace``; a record that would change a closed session
    is late and goes to `rejected()`, never silently lost.

    Args:
        key: Key column name(s): integers, strings, binary, booleans, dates or timestamps.
        time: The time column: a timestamp of any unit, or integer epoch ticks.
        gap: A fixed inactivity gap (``"30m"``, ``timedelta``, or int ticks).
        gap_column: A column of per-record gaps (integer ticks or durations), with ``max_gap``.
        max_gap: The cap on dynamic gaps; larger ones are clamped and counted.
        grace: How long after a session's reach late records are still accepted.
        retention: How long closed sessions are kept to recognise late records (default and
            minimum: max gap + grace).
        emit: ``"final"`` (each session once, when it closes), ``"updates"`` (a changelog
            coalesced per batch, with an ``op`` column) or ``"changes"`` (every change).
        aggs: Aggregations from [`windowstore.agg`][].
        on_invalid: ``"drop"`` keeps unusable records (null key or time, invalid gap, overflow)
            on the rejected output; ``"error"`` raises before the batch changes anything.
        time_unit: The tick of an integer time column (default ``"ms"``).

    Examples:
        >>> import pyarrow as pa
        >>> from windowstore import SessionWindowProcessor, agg
        >>> p = SessionWindowProcessor(key="user", time="ts", gap=10, grace=0, aggs=[agg.count()])
        >>> p.process(pa.table({"user": ["a", "a", "a"], "ts": [0, 5, 30]})).to_pylist()
        [{'user': 'a', 'session_start': 0, 'session_end': 5, 'count': 2}]
        >>> p.flush().to_pylist()
        [{'user': 'a', 'session_start': 30, 'session_end': 30, 'count': 1}]
    """

    def __init__(
        self,
        *,
        key: str | Sequence[str],
        time: str,
        gap: DurationLike | None = None,
        gap_column: str | None = None,
        max_gap: DurationLike | None = None,
        grace: DurationLike,
        retention: DurationLike | None = None,
        emit: Emit = "final",
        aggs: Sequence[Agg] = (),
        on_invalid: OnInvalid = "drop",
        time_unit: TimeUnit | None = None,
    ) -> None:
        g, column, m = _gaps(gap, gap_column, max_gap)
        aggs = check_aggs(aggs)
        self._inner = _core.Processor.sessions(
            key=keys_arg(key),
            time=time,
            time_unit=time_unit,
            gap=g,
            gap_column=column,
            max_gap=m,
            grace=to_duration(grace, "grace"),
            retention=None if retention is None else to_duration(retention, "retention"),
            emit=emit,
            aggs=aggs_arg(aggs),
            on_invalid=on_invalid,
        )
        self._finish = finisher(aggs, self._window)

    _kind = "session-processor/2"
    _window = ("session_start", "session_end")


@overload
def session_windows(
    data: Any,
    *,
    key: str | Sequence[str],
    time: str,
    gap: DurationLike | None = ...,
    gap_column: str | None = ...,
    max_gap: DurationLike | None = ...,
    aggs: Sequence[Agg] = ...,
    on_invalid: OnInvalid = ...,
    time_unit: TimeUnit | None = ...,
    return_rejected: Literal[False] = ...,
) -> pa.Table: ...


@overload
def session_windows(
    data: Any,
    *,
    key: str | Sequence[str],
    time: str,
    gap: DurationLike | None = ...,
    gap_column: str | None = ...,
    max_gap: DurationLike | None = ...,
    aggs: Sequence[Agg] = ...,
    on_invalid: OnInvalid = ...,
    time_unit: TimeUnit | None = ...,
    return_rejected: Literal[True],
) -> tuple[pa.Table, pa.Table]: ...


def session_windows(
    data: Any,
    *,
    key: str | Sequence[str],
    time: str,
    gap: DurationLike | None = None,
    gap_column: str | None = None,
    max_gap: DurationLike | None = None,
    aggs: Sequence[Agg] = (),
    on_invalid: OnInvalid = "error",
    time_unit: TimeUnit | None = None,
    return_rejected: bool = False,
) -> pa.Table | tuple[pa.Table, pa.Table]:
    """Session windows of bounded data in one pass (sort by key and time, no lateness).

    Gives exactly the sessions [`SessionWindowProcessor`][windowstore.SessionWindowProcessor]
    gives for the same records in time order. Unusable records (null key or time, invalid gap,
    overflow) raise ``InvalidRecordError`` by default; with ``on_invalid="drop"`` they are left
    out, and ``return_rejected=True`` returns them too, with a ``reason`` column.

    Examples:
        >>> import pyarrow as pa
        >>> from windowstore import agg, session_windows
        >>> t = pa.table({"user": ["a", "a", "b"], "ts": [0, 5, 1], "x": [1, 2, 3]})
        >>> session_windows(t, key="user", time="ts", gap=10, aggs=[agg.sum("x")]).to_pylist()
        [{'user': 'a', 'session_start': 0, 'session_end': 5, 'sum_x': 3}, \
{'user': 'b', 'session_start': 1, 'session_end': 1, 'sum_x': 3}]
    """
    g, column, m = _gaps(gap, gap_column, max_gap)
    aggs = check_aggs(aggs)
    windows, rejected, _clamped = _core.session_windows(
        data,
        key=keys_arg(key),
        time=time,
        time_unit=time_unit,
        gap=g,
        gap_column=column,
        max_gap=m,
        aggs=aggs_arg(aggs),
        on_invalid=on_invalid,
    )
    finish = finisher(aggs, SessionWindowProcessor._window)
    if finish is not None:
        windows = finish(windows)
    return (windows, rejected) if return_rejected else windows
