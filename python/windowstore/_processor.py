"""What the streaming window processors share: argument checks and the processor methods."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal, TypeVar

import pyarrow as pa

from windowstore import _core
from windowstore._clock import Stamp, wall_ms
from windowstore._durations import DurationLike, ticks_arg, to_duration
from windowstore._query import key_batch, time_ticks
from windowstore._udfs import Finisher, core_aggs
from windowstore.agg import Agg
from windowstore.exceptions import InvalidWindowSpec

__all__ = [
    "Emit",
    "OnInvalid",
    "TimeUnit",
    "WindowProcessor",
    "aggs_arg",
    "arrow_data",
    "check_aggs",
    "clock_args",
    "finisher",
    "grace_arg",
    "keys_arg",
]

Emit = Literal["final", "updates", "changes"]
OnInvalid = Literal["drop", "error"]
TimeUnit = Literal["s", "ms", "us", "ns"]

_P = TypeVar("_P", bound="WindowProcessor")


def keys_arg(key: str | Sequence[str]) -> list[str]:
    """The key column names as a list; refuses anything that is not one or more names."""
    if isinstance(key, str):
        return [key]
    message = f"key must be a column name or a non-empty list of names, not {key!r}"
    if isinstance(key, bytes | bytearray) or not isinstance(key, Iterable):
        raise TypeError(message)
    keys = list(key)
    if not keys or not all(isinstance(k, str) for k in keys):
        raise TypeError(message)
    return keys


def check_aggs(aggs: Sequence[Agg]) -> list[Agg]:
    """The aggregations as a list, refusing anything that is not a ``windowstore.agg``."""
    if isinstance(aggs, Agg | str) or not isinstance(aggs, Iterable):
        raise TypeError(f"aggs must be a list of windowstore.agg aggregations, not {aggs!r}")
    out = list(aggs)
    for a in out:
        if not isinstance(a, Agg):
            raise TypeError(f"aggs must be windowstore.agg aggregations, not {a!r}")
    return out


def aggs_arg(
    aggs: Sequence[Agg],
) -> list[tuple[str, str | None, str | None, int | None, str | None]]:
    """The aggregations in the form the compiled core takes (a udf as its hidden lists)."""
    return core_aggs(check_aggs(aggs))


def finisher(aggs: Sequence[Agg], window: tuple[str, str]) -> Finisher | None:
    """What turns the core's output into the user's, if ``aggs`` has a udf."""
    return Finisher(aggs, window) if Finisher.needed(aggs) else None


class WindowProcessor:
    """The methods every streaming processor has, over its compiled ``_inner`` processor."""

    _kind: ClassVar[str]
    #: The output's window start and end columns.
    _window: ClassVar[tuple[str, str]]
    _inner: _core.Processor
    #: Computes the udfs of the output inside each call's transaction (None: no udf).
    _finish: Finisher | None = None

    def process(self, data: Any, *, now: Stamp | None = None) -> pa.Table:
        """Processes a batch, table or stream (anything with the Arrow PyCapsule interface:
        pyarrow, polars, duckdb), record by record; returns the windows it emits.

        ``now`` is the wall clock's reading (epoch milliseconds or an aware ``datetime``;
        default: the system clock), read only with ``clock="processing"`` (the records'
        arrival time, after stream time first advances to it) or ``idle_timeout`` (if the
        stream was idle, stream time first advances by the idle rule, and the windows that
        closes come first).

        The call is all or nothing: if it raises, the processor (windows, stream time,
        counters, rejected rows, idle clock) is exactly as it was before. Calls from several
        threads serialize on the processor."""
        return self._inner.process(arrow_data(data), now=wall_ms(now), then=self._finish)

    def poll(self, *, now: Stamp | None = None) -> pa.Table:
        """Closes what the wall clock closes without a record, for a caller's periodic timer
        (as the timer of Akka's session-window stage); returns the windows it emits.

        ``now``: the clock's reading (epoch milliseconds or an aware ``datetime``; default: the
        system clock). With ``clock="processing"`` stream time advances to it, closing every
        window whose records arrived long enough before; with ``idle_timeout``, stream time
        advances as the idle rule says once the stream is idle. Otherwise it does nothing. All
        or nothing, as `process()`."""
        out = self._inner.poll(now=wall_ms(now), then=self._finish)
        return pa.table({}) if out is None else out

    def flush(self) -> pa.Table:
        """Ends the input: in ``final`` mode, returns every window not emitted yet."""
        out = self._inner.flush(then=self._finish)
        return pa.table({}) if out is None else out

    def rejected(self) -> pa.Table:
        """Takes the rejected input rows so far, with a ``reason`` column."""
        out = self._inner.rejected()
        return pa.table({}) if out is None else out

    def metrics(self) -> dict[str, int | None]:
        """Counters: records, accepted, rejected by reason, emitted, stream time, store sizes."""
        return self._inner.metrics()

    def snapshot(self, path: str | os.PathLike[str]) -> None:
        """Writes the whole state (windows, stream time, counters) atomically to ``path``."""
        self._inner.snapshot(path)

    @classmethod
    def restore(cls: type[_P], path: str | os.PathLike[str], *, aggs: Sequence[Agg] = ()) -> _P:
        """A processor restored from `snapshot()`; refuses a damaged file whole.

        A snapshot holds no Python function: a processor with user-defined aggregates
        (``agg.udf``) needs the ``aggs`` it was made with again (its calls fail, changing
        nothing, until they match)."""
        self = cls.__new__(cls)
        self._inner = _core.Processor.restore(path, cls._kind)
        self._finish = Finisher(check_aggs(aggs), cls._window)
        return self

    def to_bytes(self) -> bytes:
        """The whole state as bytes: what `snapshot()` writes, for a store of your own."""
        return self._inner.to_bytes()

    @classmethod
    def from_bytes(cls: type[_P], data: bytes, *, aggs: Sequence[Agg] = ()) -> _P:
        """A processor restored from `to_bytes()`; refuses damaged bytes whole. ``aggs``: as
        for `restore()`."""
        self = cls.__new__(cls)
        self._inner = _core.Processor.from_bytes(data, cls._kind)
        self._finish = Finisher(check_aggs(aggs), cls._window)
        return self

    def advance(self, t: int, *, now: Stamp | None = None) -> pa.Table:
        """Advances stream time to ``t`` (ticks of the time column; epoch milliseconds with
        ``clock="processing"``) without a record, as an outside clock such as a watermark
        says; returns the windows that closes (``final``).

        With ``idle_timeout``, an advance that raises stream time counts as a record arriving
        at ``now`` (default: the system clock): the idle period starts again."""
        out = self._inner.advance(ticks_arg(t, "t"), now=wall_ms(now), then=self._finish)
        return pa.table({}) if out is None else out

    def _resume_idle(self, run: str | None) -> None:
        """Keeps the idle clock the restored bytes carried if the same ``run`` wrote them (the
        Spark adapter restores a bucket's processor at every micro-batch of one run of a query;
        a restart is another run, and starts the idle period again as any restore does)."""
        self._inner.resume_idle(run)

    def windows(self, key: Any = None) -> pa.Table:
        """The windows the processor holds and has not closed, with their aggregates so far,
        ordered by key, then start; ``key`` selects one key (a value, or a tuple of values for
        several key columns). Changes nothing.

        The columns are those of ``emit="final"`` (no ``op`` column in the changelog modes;
        every input column plus the session tags with ``output="records"``). A window is open
        while stream time minus ``grace`` has not passed its closing bound (a session's reach,
        a sliding window's end) and the processor has not been flushed: in ``final`` mode,
        these are exactly the windows (or tagged rows) `flush()` would emit now. Before the
        first batch, an empty table without columns.

        Reading one key costs a lookup plus the windows returned; every key, a pass over the
        held windows. Runs under the processor's lock, so it is safe beside `process()` in
        another thread."""
        return self._read(None if key is None else [key], "key")

    def _read(
        self,
        keys: Sequence[Any] | None,
        parameter: str,
        earliest_end: Any = None,
        latest_start: Any = None,
    ) -> pa.Table:
        """The open windows of ``keys`` (None: every key; one key, or the first and last of a
        range) within the time bounds, as the user sees them (udfs computed)."""
        key_schema = self._inner.key_schema()
        out_schema = self._inner.output_schema()
        if key_schema is None or out_schema is None:
            return pa.table({})
        time_type = out_schema.field(self._window[1]).type
        out = self._inner.windows(
            None if keys is None else key_batch(key_schema, keys, parameter),
            time_ticks(earliest_end, time_type, "earliest_end"),
            time_ticks(latest_start, time_type, "latest_start"),
        )
        if out is None:
            return pa.table({})
        return out if self._finish is None else self._finish(out)

    def next_close(self) -> int | None:
        """In ``final`` mode, the earliest stream time at which a held window closes (so
        ``advance(next_close())`` emits it); ``None`` if none is held or in changelog modes."""
        return self._inner.next_close()


def clock_args(clock: str, time: str | None, idle_timeout: DurationLike | None) -> dict[str, Any]:
    """The core's ``time``, ``clock`` and ``idle_timeout`` arguments (the core checks how they
    go together, naming the parameter); refuses an event-time processor without ``time``."""
    if clock == "event" and time is None:
        raise InvalidWindowSpec(
            'invalid time: an event-time processor needs its time column (time="ts"); '
            'clock="processing" uses arrival times instead',
            "time",
        )
    return {
        "time": time,
        "clock": clock,
        "idle_timeout": None if idle_timeout is None else to_duration(idle_timeout, "idle_timeout"),
    }


def grace_arg(clock: str, grace: DurationLike | None) -> tuple[str, int]:
    """The core's ``grace``: required with event time, none (zero) with processing time."""
    if grace is None:
        if clock == "event":
            raise InvalidWindowSpec(
                "invalid grace: an event-time processor needs grace= (how late a record may "
                'arrive, e.g. grace="10s", or 0)',
                "grace",
            )
        grace = 0
    return to_duration(grace, "grace")


def arrow_data(data: Any) -> Any:
    """``data`` if it has the Arrow PyCapsule interface (pyarrow, polars, duckdb, ...); else a
    ``TypeError`` that says what is expected."""
    if not (hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__")):
        raise TypeError(
            "data must be Arrow data (a pyarrow Table or RecordBatch, a polars DataFrame, a "
            "duckdb relation: anything with __arrow_c_stream__ or __arrow_c_array__), not "
            f"{type(data).__name__}; for a dict, pass pyarrow.table(d)"
        )
    return data
