"""Session windows over Arrow data: a streaming processor and a complete-data function."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

import pyarrow as pa

from windowstore import _core, _records
from windowstore._clock import Clock, Stamp, wall_ms
from windowstore._durations import DurationLike, ticks_arg, to_duration
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
from windowstore.exceptions import SnapshotError

__all__ = ["Clock", "Output", "SessionWindowProcessor", "Stamp", "session_windows"]

#: What session windows output: one row per session, or every input row tagged with its session.
Output = _records.Output

_S = TypeVar("_S", bound="SessionWindowProcessor")


def _gaps(
    gap: DurationLike | None, gap_column: str | None, max_gap: DurationLike | None
) -> tuple[tuple[str, int] | None, str | None, tuple[str, int] | None]:
    return (
        None if gap is None else to_duration(gap, "gap"),
        gap_column,
        None if max_gap is None else to_duration(max_gap, "max_gap"),
    )


def _max_duration(max_duration: DurationLike | None) -> tuple[str, int] | None:
    return None if max_duration is None else to_duration(max_duration, "max_duration")


class SessionWindowProcessor(WindowProcessor):
    """Session windows over a stream of Arrow batches, record by record (Kafka's semantics).

    Each record at time ``t`` with gap ``g`` covers ``[t, t + g]``; records whose intervals chain
    share a session, reported as ``[first time, last time]``. A session closes once stream time
    passes its reach (``max(t + g)``) plus ``grace``; a record that would change a closed session
    is late and goes to `rejected()`, never silently lost.

    Args:
        key: Key column name(s): integers, strings, binary, booleans, dates or timestamps.
        time: The time column: a timestamp of any unit, or integer epoch ticks. Required with
            ``clock="event"``; none with ``clock="processing"``.
        gap: A fixed inactivity gap (``"30m"``, ``timedelta``, or int ticks).
        gap_column: A column of per-record gaps (integer ticks or durations), with ``max_gap``.
        max_gap: The cap on dynamic gaps; larger ones are clamped and counted.
        max_duration: The longest a session may span from its first to its last record: per
            key in event-time order, a record joins its session by the gap rule only if it is
            at most ``max_duration`` after the session's start, and starts a new session
            otherwise (``max_duration_cuts`` in `metrics()` counts the sessions it ended). The
            result equals [`session_windows`][windowstore.session_windows] with the same
            ``max_duration`` whatever the arrival order within the grace: a record before a
            session's start can move every later cut, so the processor keeps the records of
            open sessions (time, gap and their aggregate inputs: about 30 bytes plus the
            aggregated values per record) to cut them again. Beyond the grace, a record that
            would change a closed session is late.
        grace: How long after a session's reach late records are still accepted. Required with
            ``clock="event"``; none (or zero) with ``clock="processing"``.
        retention: How long closed sessions are kept to recognise late records (default and
            minimum: max gap + grace).
        emit: ``"final"`` (each session once, when it closes), ``"updates"`` (a changelog
            coalesced per batch, with an ``op`` column) or ``"changes"`` (every change).
        aggs: Aggregations from [`windowstore.agg`][].
        on_invalid: ``"drop"`` keeps unusable records (null key or time, invalid gap, overflow)
            on the rejected output; ``"error"`` raises before the batch changes anything.
        time_unit: The tick of an integer time column (default ``"ms"``).
        output: ``"windows"`` (one row per session, with its aggregates) or ``"records"``:
            every accepted input row, all its columns, plus its session's ``session_start``,
            ``session_end`` and ``session_id`` (as
            [`session_windows`][windowstore.session_windows] defines them), output when the
            session closes. Records need ``emit="final"`` and no ``aggs``.
            The processor holds the accepted rows of open sessions, as Arrow tables, until
            their session closes (``held_rows`` and ``held_bytes`` in `metrics()`): about the
            Arrow size of the rows of the open sessions; they are part of its state, in
            `to_bytes()` and `snapshot()`. Rejected rows are not held: they go to `rejected()`.
        clock: ``"event"`` (default): a record's time is its ``time`` column. ``"processing"``:
            a record's time is its arrival, the wall clock's reading when `process()` takes it
            (``now=``, epoch milliseconds, default the system clock); a key's session closes
            once ``gap`` of wall-clock time has passed since its last record, at the first
            `process()` or `poll()` whose clock reads more than ``last arrival + gap``, as
            Akka's session-window stage does. ``session_start`` and ``session_end`` are
            arrival times (``timestamp[ms, UTC]``). Records are never late: a clock that steps
            back is held at its latest reading. Takes a fixed ``gap`` only.
        idle_timeout: Event time only: once no record has arrived for this much wall-clock
            time (by the ``now=`` of the calls), stream time runs with the wall clock from
            where the last record left it: at a reading ``now``, it is ``T + (now - w)`` where
            ``w`` is when the last record arrived and ``T`` the stream time just after it. So
            `poll()` (or the next `process()`, before its records) closes and, with
            ``emit="final"``, emits the windows an idle stream leaves open; records arriving
            after the idle period are judged late or not by the advanced stream time. An
            ``advance(t)`` that raises stream time counts as a record. Needs event times on
            the wall clock's epoch (a duration, or int ticks of the time column).

    Examples:
        >>> import pyarrow as pa
        >>> from windowstore import SessionWindowProcessor, agg
        >>> p = SessionWindowProcessor(key="user", time="ts", gap=10, grace=0, aggs=[agg.count()])
        >>> p.process(pa.table({"user": ["a", "a", "a"], "ts": [0, 5, 30]})).to_pylist()
        [{'user': 'a', 'session_start': 0, 'session_end': 5, 'count': 2}]
        >>> p.flush().to_pylist()
        [{'user': 'a', 'session_start': 30, 'session_end': 30, 'count': 1}]
        >>> r = SessionWindowProcessor(key="user", time="ts", gap=10, grace=0, output="records")
        >>> r.process(pa.table({"user": ["a", "a", "a"], "ts": [0, 5, 30], "x": [1, 2, 3]})
        ...          ).drop_columns("session_id").to_pylist()
        [{'user': 'a', 'ts': 0, 'x': 1, 'session_start': 0, 'session_end': 5}, \
{'user': 'a', 'ts': 5, 'x': 2, 'session_start': 0, 'session_end': 5}]

        Processing time, on a clock given by ``now=`` (epoch milliseconds):

        >>> q = SessionWindowProcessor(key="user", gap="1s", clock="processing",
        ...                            aggs=[agg.count()])
        >>> q.process(pa.table({"user": ["a", "a"]}), now=1_000).num_rows
        0
        >>> q.poll(now=2_000).num_rows  # not more than 1 s since the last record
        0
        >>> q.poll(now=2_001).column("count").to_pylist()
        [2]
    """

    _records: _records.HeldRecords | None = None

    def __init__(
        self,
        *,
        key: str | Sequence[str],
        time: str | None = None,
        gap: DurationLike | None = None,
        gap_column: str | None = None,
        max_gap: DurationLike | None = None,
        grace: DurationLike | None = None,
        retention: DurationLike | None = None,
        emit: Emit = "final",
        aggs: Sequence[Agg] = (),
        on_invalid: OnInvalid = "drop",
        time_unit: TimeUnit | None = None,
        output: Output = "windows",
        clock: Clock = "event",
        idle_timeout: DurationLike | None = None,
        max_duration: DurationLike | None = None,
    ) -> None:
        clocked = clock_args(clock, time, idle_timeout)
        g, column, m = _gaps(gap, gap_column, max_gap)
        aggs = check_aggs(aggs)
        records = _records.check_output(output, aggs, emit)
        keys = keys_arg(key)
        self._inner = _core.Processor.sessions(
            key=keys,
            time_unit=time_unit,
            gap=g,
            gap_column=column,
            max_gap=m,
            grace=grace_arg(clock, grace),
            retention=None if retention is None else to_duration(retention, "retention"),
            emit=emit,
            aggs=[_records.rows_agg()] if records else aggs_arg(aggs),
            on_invalid=on_invalid,
            max_duration=_max_duration(max_duration),
            **clocked,
        )
        self._finish = finisher(aggs, self._window)
        if records:
            self._records = _records.HeldRecords(key=keys)

    _kind = "session-processor/2"
    _window = ("session_start", "session_end")

    # Records mode: the core sees each call's rows with a hidden sequence number and collects
    # those numbers per session; the held rows are taken back when a session closes. The core's
    # calls are all or nothing, and the held rows change only after the core's call succeeded.

    def process(self, data: Any, *, now: Stamp | None = None) -> pa.Table:
        """Processes a batch, table or stream (anything with the Arrow PyCapsule interface:
        pyarrow, polars, duckdb), record by record; returns the windows it emits, or with
        ``output="records"`` the rows of the sessions it closes.

        ``now`` is the wall clock's reading (epoch milliseconds or an aware ``datetime``;
        default: the system clock), read only with ``clock="processing"`` (the records'
        arrival time) or ``idle_timeout`` (when they arrive; if the stream was idle, stream
        time first advances to the reading and the windows that closes come first).

        The call is all or nothing: if it raises, the processor (windows, stream time,
        counters, rejected rows, held rows, idle clock) is exactly as it was before. Calls
        from several threads serialize on the processor."""
        if self._records is None:
            return super().process(data, now=now)
        table = self._records.number(data)
        windows = self._inner.process(table, now=wall_ms(now))
        return self._records.processed(table, windows, self._inner.rejected())

    def poll(self, *, now: Stamp | None = None) -> pa.Table:
        """Closes what the wall clock closes without a record, for a caller's periodic timer
        (as the timer of Akka's session-window stage); returns the windows it emits (with
        ``output="records"``, their rows).

        ``now``: the clock's reading (epoch milliseconds or an aware ``datetime``; default: the
        system clock). With ``clock="processing"`` stream time advances to it, closing every
        session whose last record arrived more than ``gap`` before; with ``idle_timeout``,
        stream time advances as the idle rule says once the stream is idle. Otherwise it does
        nothing. All or nothing, as `process()`."""
        if self._records is None:
            return super().poll(now=now)
        return self._records.emitted(self._inner.poll(now=wall_ms(now)))

    def flush(self) -> pa.Table:
        """Ends the input: in ``final`` mode, returns every window not emitted yet (with
        ``output="records"``, the rows of every session still open)."""
        if self._records is None:
            return super().flush()
        return self._records.emitted(self._inner.flush())

    def advance(self, t: int, *, now: Stamp | None = None) -> pa.Table:
        """Advances stream time to ``t`` (ticks of the time column; epoch milliseconds with
        ``clock="processing"``) without a record, as an outside clock such as a watermark says;
        returns the windows that closes (``final``), or with ``output="records"`` their rows.

        With ``idle_timeout``, an advance that raises stream time counts as a record arriving
        at ``now`` (default: the system clock): the idle period starts again."""
        if self._records is None:
            return super().advance(t, now=now)
        out = self._inner.advance(ticks_arg(t, "t"), now=wall_ms(now))
        return self._records.emitted(out)

    def rejected(self) -> pa.Table:
        """Takes the rejected input rows so far (the input's columns), with a ``reason``
        column."""
        if self._records is None:
            return super().rejected()
        return self._records.take_rejected()

    def metrics(self) -> dict[str, int | None]:
        """Counters: records, accepted, rejected by reason, emitted, stream time, store sizes;
        with ``output="records"`` also ``held_rows`` and ``held_bytes``, the rows it holds."""
        out = self._inner.metrics()
        if self._records is not None:
            out["held_rows"] = self._records.held_rows
            out["held_bytes"] = self._records.held_bytes
        return out

    # --- bytes ---------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The whole state as bytes: what `snapshot()` writes, for a store of your own (with
        ``output="records"``, the held rows too; the clock and its idle mark always)."""
        if self._records is None:
            return super().to_bytes()
        return self._records.to_bytes(self._inner.to_bytes())

    def snapshot(self, path: str | os.PathLike[str]) -> None:
        """Writes the whole state (windows, stream time, counters, the clock; held rows with
        ``output="records"``) atomically to ``path``."""
        if self._records is None:
            return super().snapshot(path)
        _write_atomically(Path(path), self.to_bytes())
        return None

    @classmethod
    def from_bytes(cls: type[_S], data: bytes, *, aggs: Sequence[Agg] = ()) -> _S:
        """A processor restored from `to_bytes()`; refuses damaged bytes whole. A processor
        with user-defined aggregates (``agg.udf``) needs the ``aggs`` it was made with.

        ``clock`` and ``idle_timeout`` come back with the state, but not the idle clock: the
        idle period starts again at the first call after the restore (time a processor spends
        down is not counted as idle, since records may be waiting for it upstream)."""
        return cls._from(bytes(data), aggs, None)

    @classmethod
    def restore(cls: type[_S], path: str | os.PathLike[str], *, aggs: Sequence[Agg] = ()) -> _S:
        """A processor restored from `snapshot()`; refuses a damaged file whole. A processor
        with user-defined aggregates (``agg.udf``) needs the ``aggs`` it was made with.
        ``clock`` and ``idle_timeout`` come back as with `from_bytes()`."""
        try:
            with open(path, "rb") as f:
                head = f.read(len(_records.MAGIC))
                data = head + f.read() if head == _records.MAGIC else None
        except OSError as e:
            raise SnapshotError(f"cannot read snapshot {os.fspath(path)!r}: {e}", str(path)) from e
        if data is None:
            return super().restore(path, aggs=aggs)
        return cls._from(data, aggs, os.fspath(path))

    @classmethod
    def _from(cls: type[_S], data: bytes, aggs: Sequence[Agg], path: str | None) -> _S:
        """A processor from bytes of either layout: the core's, or records mode's."""
        if data[: len(_records.MAGIC)] == _records.MAGIC:
            self = cls.__new__(cls)
            self._inner, self._records = _records.HeldRecords.from_bytes(data, cls._kind, path)
            return self
        try:
            return super().from_bytes(data, aggs=aggs)
        except SnapshotError as e:
            if path is None:
                raise
            raise SnapshotError(str(e), path) from None


def _write_atomically(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` so that a crash leaves the old file or the new one whole:
    a temporary file beside it, synced, renamed over it, and the directory synced."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise SnapshotError(f"cannot write snapshot {str(path)!r}: {e}", str(path)) from e


@overload
def session_windows(
    data: Any,
    *,
    key: str | Sequence[str],
    time: str,
    gap: DurationLike | None = ...,
    gap_column: str | None = ...,
    max_gap: DurationLike | None = ...,
    max_duration: DurationLike | None = ...,
    aggs: Sequence[Agg] = ...,
    on_invalid: OnInvalid = ...,
    time_unit: TimeUnit | None = ...,
    return_rejected: Literal[False] = ...,
    output: Output = ...,
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
    max_duration: DurationLike | None = ...,
    aggs: Sequence[Agg] = ...,
    on_invalid: OnInvalid = ...,
    time_unit: TimeUnit | None = ...,
    return_rejected: Literal[True],
    output: Output = ...,
) -> tuple[pa.Table, pa.Table]: ...


def session_windows(
    data: Any,
    *,
    key: str | Sequence[str],
    time: str,
    gap: DurationLike | None = None,
    gap_column: str | None = None,
    max_gap: DurationLike | None = None,
    max_duration: DurationLike | None = None,
    aggs: Sequence[Agg] = (),
    on_invalid: OnInvalid = "error",
    time_unit: TimeUnit | None = None,
    return_rejected: bool = False,
    output: Output = "windows",
) -> pa.Table | tuple[pa.Table, pa.Table]:
    """Session windows of bounded data in one pass (sort by key and time, no lateness).

    Gives exactly the sessions [`SessionWindowProcessor`][windowstore.SessionWindowProcessor]
    gives for the same records in time order. Unusable records (null key or time, invalid gap,
    overflow) raise ``InvalidRecordError`` by default; with ``on_invalid="drop"`` they are left
    out, and ``return_rejected=True`` returns them too, with a ``reason`` column.

    ``max_duration`` caps a session's span: per key in event-time order, a record joins its
    session by the gap rule only if it is at most ``max_duration`` after the session's start,
    and starts a new session otherwise.

    With ``output="records"`` (no ``aggs``) the result is not one row per session but every
    input row that is not rejected, all its columns unchanged, plus ``session_start`` and
    ``session_end`` of its session and ``session_id``: so any Polars, DuckDB or Spark
    aggregation grouped by ``session_id`` (or by key and ``session_start``) applies to sessions.
    Tagged rows plus rejected rows are exactly the input rows. The rows of a session are
    contiguous and in event-time order (ties in input order); sessions come by key, then start.

    ``session_id`` is the same for the same key and session in every engine (complete mode,
    the processors, Spark batch and streaming) and every run: a signed 64-bit BLAKE2b hash
    (8-byte digest, big-endian) of the key values in key order, then ``session_start``, each
    written as a type letter and its value (integers in decimal as ``i<n>``, booleans ``b0`` or
    ``b1``, strings ``s<UTF-8>``, binary ``y<bytes>``, dates ``d<days since 1970>``, timestamps
    ``t<nanoseconds since 1970, UTC>`` whatever their unit) behind its length in 4 big-endian
    bytes; dictionary keys count by their values. Different sessions can share an id only by a
    hash collision (about one in 2**64 per pair).

    Examples:
        >>> import pyarrow as pa
        >>> from windowstore import agg, session_windows
        >>> t = pa.table({"user": ["a", "a", "b"], "ts": [0, 5, 1], "x": [1, 2, 3]})
        >>> session_windows(t, key="user", time="ts", gap=10, aggs=[agg.sum("x")]).to_pylist()
        [{'user': 'a', 'session_start': 0, 'session_end': 5, 'sum_x': 3}, \
{'user': 'b', 'session_start': 1, 'session_end': 1, 'sum_x': 3}]
        >>> tagged = session_windows(t, key="user", time="ts", gap=10, output="records")
        >>> tagged.drop_columns("session_id").to_pylist()
        [{'user': 'a', 'ts': 0, 'x': 1, 'session_start': 0, 'session_end': 5}, \
{'user': 'a', 'ts': 5, 'x': 2, 'session_start': 0, 'session_end': 5}, \
{'user': 'b', 'ts': 1, 'x': 3, 'session_start': 1, 'session_end': 1}]
    """
    g, column, m = _gaps(gap, gap_column, max_gap)
    aggs = check_aggs(aggs)
    kwargs: dict[str, Any] = dict(
        key=keys_arg(key),
        time=time,
        time_unit=time_unit,
        gap=g,
        gap_column=column,
        max_gap=m,
        on_invalid=on_invalid,
        max_duration=_max_duration(max_duration),
    )
    if _records.check_output(output, aggs):
        out, rejected = _records.complete_records(data, kwargs)
    else:
        out, rejected, _clamped = _core.session_windows(
            arrow_data(data), **kwargs, aggs=aggs_arg(aggs)
        )
        finish = finisher(aggs, SessionWindowProcessor._window)
        if finish is not None:
            out = finish(out)
    return (out, rejected) if return_rejected else out
