"""Sliding windows (Kafka's KIP-450) over Arrow data: a streaming processor and a
complete-data function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, overload

import pyarrow as pa

from windowstore import _core
from windowstore._clock import Clock
from windowstore._durations import DurationLike, to_duration
from windowstore._processor import (
    Emit,
    OnInvalid,
    TimeUnit,
    WindowProcessor,
    aggs_arg,
    arrow_data,
    check_aggs,
    clock_args,
    finisher,
    grace_arg,
    keys_arg,
)
from windowstore.agg import Agg

if TYPE_CHECKING:
    from typing_extensions import Required, Unpack

__all__ = ["SlidingWindowProcessor", "sliding_windows"]


class SlidingOptions(TypedDict, total=False):
    """The options of `sliding_windows`, the same for the Spark adapter's."""

    aggs: Sequence[Agg]
    on_invalid: OnInvalid
    time_unit: TimeUnit | None


class _Arguments(SlidingOptions, total=False):
    """The keyword arguments of `sliding_windows` but ``return_rejected``."""

    key: Required[str | Sequence[str]]
    time: Required[str]
    time_difference: Required[DurationLike]


class SlidingWindowProcessor(WindowProcessor):
    """Sliding windows over a stream of Arrow batches, record by record (Kafka's semantics).

    A window spans ``[start, start + time_difference]``, both ends inclusive; there is one
    window per distinct set of records that lie within ``time_difference`` of each other: each
    record at ``t`` has its left window ``[t - D, t]`` and, when it holds a record, its right
    window ``[t + 1, t + 1 + D]``. Windows are updated as records arrive (KIP-450's
    two-new-windows algorithm). A window closes once stream time passes its end plus ``grace``;
    a record whose left window ended before that (``t + D < stream time - grace``), or whose
    every window has closed, is late and goes to `rejected()`, never silently lost. Updates
    of closed windows a record would have joined are counted as ``late_window_update``.

    Args:
        key: Key column name(s): integers, strings, binary, booleans, dates or timestamps.
        time: The time column: a timestamp of any unit, or integer epoch ticks. Required with
            ``clock="event"``; none with ``clock="processing"``.
        time_difference: ``D``, the largest time difference between records of one window
            (``"10s"``, ``timedelta``, or int ticks; 0 allowed). Int ticks only on an integer
            time column (or with ``clock="processing"``: milliseconds), never on a timestamp
            column, where they raise ``InvalidWindowSpec`` at the first `process()`.
        grace: How long after a window's end late records still update it. Required with
            ``clock="event"``; none (or zero) with ``clock="processing"``.
        emit: ``"final"`` (each window once, when it closes), ``"updates"`` (a changelog
            coalesced per batch, with an ``op`` column) or ``"changes"`` (every change).
        aggs: Aggregations from [`windowstore.agg`][].
        on_invalid: ``"drop"`` keeps unusable records (null key or time, time overflow) on the
            rejected output; ``"error"`` raises before the batch changes anything.
        time_unit: The tick of an integer time column (default ``"ms"``).
        clock: ``"event"`` (default): a record's time is its ``time`` column.
            ``"processing"``: a record's time is its arrival, the wall clock's reading when
            `process()` takes it (``now=``, epoch milliseconds, default the system clock), and
            every call (`poll()` too) first advances stream time to that reading, so a window
            closes once the clock passes its end, also without new records. Window bounds are
            arrival times (``timestamp[ms, UTC]``). Records are never late: a clock that steps
            back is held at its latest reading. No ``time`` and no ``grace``.
        idle_timeout: Event time only: once no record has arrived for this much wall-clock
            time (by the ``now=`` of the calls), stream time runs with the wall clock from
            where the last record left it, so `poll()` (or the next `process()`, before its
            records) closes the windows an idle stream leaves open; see
            [`SessionWindowProcessor`][windowstore.SessionWindowProcessor].

    Output columns: the key columns, ``window_start``, ``window_end``, ``window_time`` (the
    largest record time in the window), the aggregates, and ``op`` in changelog modes.

    Examples:
        >>> import pyarrow as pa
        >>> from windowstore import SlidingWindowProcessor, agg
        >>> p = SlidingWindowProcessor(key="k", time="ts", time_difference=10, grace=0,
        ...                            aggs=[agg.count()])
        >>> p.process(pa.table({"k": ["a", "a", "a"], "ts": [0, 5, 30]})).to_pylist()
        [{'k': 'a', 'window_start': -10, 'window_end': 0, 'window_time': 0, 'count': 1}, \
{'k': 'a', 'window_start': -5, 'window_end': 5, 'window_time': 5, 'count': 2}, \
{'k': 'a', 'window_start': 1, 'window_end': 11, 'window_time': 5, 'count': 1}]
    """

    _kind = "sliding-processor/1"
    _window = ("window_start", "window_end")

    def __init__(
        self,
        *,
        key: str | Sequence[str],
        time: str | None = None,
        time_difference: DurationLike,
        grace: DurationLike | None = None,
        emit: Emit = "final",
        aggs: Sequence[Agg] = (),
        on_invalid: OnInvalid = "drop",
        time_unit: TimeUnit | None = None,
        clock: Clock = "event",
        idle_timeout: DurationLike | None = None,
    ) -> None:
        clocked = clock_args(clock, time, idle_timeout)
        aggs = check_aggs(aggs)
        self._inner = _core.Processor.sliding(
            key=keys_arg(key),
            time_unit=time_unit,
            time_difference=to_duration(time_difference, "time_difference"),
            grace=grace_arg(clock, grace),
            emit=emit,
            aggs=aggs_arg(aggs),
            on_invalid=on_invalid,
            **clocked,
        )
        self._finish = finisher(aggs, self._window)


@overload
def sliding_windows(
    data: Any, *, return_rejected: Literal[False] = ..., **kwargs: Unpack[_Arguments]
) -> pa.Table: ...


@overload
def sliding_windows(
    data: Any, *, return_rejected: Literal[True], **kwargs: Unpack[_Arguments]
) -> tuple[pa.Table, pa.Table]: ...


def sliding_windows(
    data: Any,
    *,
    key: str | Sequence[str],
    time: str,
    time_difference: DurationLike,
    aggs: Sequence[Agg] = (),
    on_invalid: OnInvalid = "error",
    time_unit: TimeUnit | None = None,
    return_rejected: bool = False,
) -> pa.Table | tuple[pa.Table, pa.Table]:
    """Sliding windows of bounded data: Kafka's full window set, in one pass after a sort.

    Gives exactly the windows [`SlidingWindowProcessor`][windowstore.SlidingWindowProcessor]
    gives for the same records in time order (float sums up to rounding), ordered by key
    (first appearance) and start. Each aggregate costs O(records + windows) (two pointers; no
    rescanning), except ``collect``, whose output is as large as the windows. Unusable records
    (null key or time, time overflow) raise ``InvalidRecordError`` by default; with
    ``on_invalid="drop"`` they are left out, and ``return_rejected=True`` returns them too, with
    a ``reason`` column.

    Examples:
        >>> import pyarrow as pa
        >>> from windowstore import agg, sliding_windows
        >>> t = pa.table({"k": ["a", "a", "a"], "ts": [8000, 9200, 12400]})
        >>> w = sliding_windows(t, key="k", time="ts", time_difference="5s", aggs=[agg.count()])
        >>> [(r["window_start"], r["window_end"], r["count"]) for r in w.to_pylist()]
        [(3000, 8000, 1), (4200, 9200, 2), (7400, 12400, 3), (8001, 13001, 2), (9201, 14201, 1)]
    """
    aggs = check_aggs(aggs)
    windows, rejected = _core.sliding_windows(
        arrow_data(data),
        key=keys_arg(key),
        time=time,
        time_unit=time_unit,
        time_difference=to_duration(time_difference, "time_difference"),
        aggs=aggs_arg(aggs),
        on_invalid=on_invalid,
    )
    finish = finisher(aggs, SlidingWindowProcessor._window)
    if finish is not None:
        windows = finish(windows)
    return (windows, rejected) if return_rejected else windows
