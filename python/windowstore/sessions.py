"""Session windows over Arrow data: a streaming processor and a complete-data function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, overload

import pyarrow as pa

from windowstore import _core, _records
from windowstore._clock import Clock, Stamp
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

__all__ = ["Clock", "Output", "SessionWindowProcessor", "Stamp", "session_windows"]

#: What session windows output: one row per session, or every input row tagged with its session.
Output = _records.Output

_S = TypeVar("_S", bound="SessionWindowProcessor")


class SessionOptions(TypedDict, total=False):
    """The options of `session_windows`, the same for the Spark adapter's."""

    gap: DurationLike | None
    gap_column: str | None
    max_gap: DurationLike | None
    max_duration: DurationLike | None
    starts_session: str | None
    ends_session: str | None
    aggs: Sequence[Agg]
    on_invalid: OnInvalid
    time_unit: TimeUnit | None
    output: Output


class _Arguments(SessionOptions, total=False):
    """The keyword arguments of `session_windows` but ``return_rejected``."""

    key: Required[str | Sequence[str]]
    time: Required[str]


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
        gap: A fixed inactivity gap (``"30m"``, ``timedelta``, or int ticks). Every duration
            is a length; int ticks only on an integer time column (or with
            ``clock="processing"``: milliseconds), never on a timestamp column, where they
            raise ``InvalidWindowSpec`` at the first `process()` (``0`` is allowed anywhere).
        gap_column: A column of per-record gaps, with ``max_gap``: Arrow durations, or integer
            ticks with an integer time column (refused next to a timestamp column).
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
        starts_session: A boolean column (null is false) whose true records start a session:
            a marked record at ``t`` puts a boundary just before ``t``, so no record earlier
            than ``t`` shares a session with the records at ``t`` and later (a login).
            Records at equal times are never separated. Within the boundaries the gap rule
            and ``max_duration`` apply as without markers, and the sessions are those of
            [`session_windows`][windowstore.session_windows] with the same markers whatever
            the arrival order within the grace: as with ``max_duration``, the processor keeps
            the records of open sessions to cut them again, and a marker arriving late within
            the grace splits the session it falls in. The session before a start marker at
            ``t`` closes once stream time passes ``t - 1 + grace`` (not a gap later). A
            boundary is not a cut: ``max_duration_cuts`` counts only the sessions the cap
            ended.
        ends_session: A boolean column (null is false) whose true records end their session:
            a marked record at ``t`` puts a boundary just after ``t``, so no record later than
            ``t`` shares a session with the records at ``t`` and earlier (a logout). The
            session closes once stream time passes ``t + grace``, not its reach. Both markers
            at one time make the records at that time a session of their own.
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
            the wall clock's epoch (a duration, as ``gap``).

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
        starts_session: str | None = None,
        ends_session: str | None = None,
    ) -> None:
        clocked = clock_args(clock, time, idle_timeout)
        g, column, m = _gaps(gap, gap_column, max_gap)
        aggs = check_aggs(aggs)
        self._inner = _core.Processor.sessions(
            key=keys_arg(key),
            time_unit=time_unit,
            gap=g,
            gap_column=column,
            max_gap=m,
            grace=grace_arg(clock, grace),
            retention=None if retention is None else to_duration(retention, "retention"),
            emit=emit,
            aggs=aggs_arg(aggs),
            on_invalid=on_invalid,
            max_duration=_max_duration(max_duration),
            output=output,
            starts_session=starts_session,
            ends_session=ends_session,
            **clocked,
        )
        self._finish = finisher(aggs, self._window)

    def fetch(self, key: Any) -> pa.Table:
        """The open sessions of ``key`` (a value, or a tuple for several key columns): Kafka's
        ``ReadOnlySessionStore.fetch(key)`` over what the processor holds. The same as
        ``windows(key)``."""
        return self._read([key], "key")

    def fetch_range(self, key_from: Any, key_to: Any) -> pa.Table:
        """The open sessions of the keys from ``key_from`` to ``key_to`` (both inclusive, in the
        keys' sort order; tuples compare column by column), ordered by key, then start: Kafka's
        ``fetch(keyFrom, keyTo)``. An inverted range is empty. Visits every held key."""
        return self._read([key_from, key_to], "key_from")

    def find_sessions(self, key: Any, earliest_end: Any, latest_start: Any) -> pa.Table:
        """The open sessions of ``key`` that end at or after ``earliest_end`` and start at or
        before ``latest_start`` (times of the session columns: int ticks, or ``datetime`` for
        a timestamp column): Kafka's ``findSessions(key, earliestSessionEndTime,
        latestSessionStartTime)``, the sessions a record at a time in between could meet."""
        return self._read([key], "key", earliest_end, latest_start)

    _kind = "session-processor/2"
    _window = ("session_start", "session_end")


@overload
def session_windows(
    data: Any, *, return_rejected: Literal[False] = ..., **kwargs: Unpack[_Arguments]
) -> pa.Table: ...


@overload
def session_windows(
    data: Any, *, return_rejected: Literal[True], **kwargs: Unpack[_Arguments]
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
    starts_session: str | None = None,
    ends_session: str | None = None,
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

    ``starts_session`` and ``ends_session`` name boolean columns (null is false) that mark
    session boundaries, such as a login and a logout: a record at ``t`` marked by
    ``starts_session`` puts a boundary just before ``t`` (no record earlier than ``t`` shares
    a session with the records at ``t`` and later), one marked by ``ends_session`` a boundary
    just after ``t`` (no record later than ``t`` shares a session with those at ``t`` and
    earlier). Records at equal times are never separated: a start and an end marker at one
    time make the records at that time a session of their own. Otherwise the gap rule (fixed
    or ``gap_column``) and ``max_duration`` cut sessions as without markers, never joining
    across a boundary.

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

        A logout ends its session, although the next click is within the gap:

        >>> clicks = pa.table({"user": ["a"] * 3, "ts": [0, 3, 8], "out": [None, True, False]})
        >>> [(s["session_start"], s["session_end"]) for s in session_windows(
        ...     clicks, key="user", time="ts", gap=10, ends_session="out").to_pylist()]
        [(0, 3), (8, 8)]
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
        starts_session=starts_session,
        ends_session=ends_session,
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
