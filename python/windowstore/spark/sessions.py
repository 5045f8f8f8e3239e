"""Session windows of Spark DataFrames: map-side partial sessions, merged after the shuffle."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Literal, overload

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql.types import StructType

from windowstore import _core, _records
from windowstore._clock import Clock
from windowstore._durations import DurationLike, to_duration
from windowstore._processor import OnInvalid, TimeUnit, aggs_arg, finisher
from windowstore.agg import Agg
from windowstore.sessions import SessionOptions
from windowstore.spark import _schema, _udf
from windowstore.spark._plan import (
    SparkOptions,
    batch_time,
    by_key,
    check_aggs,
    check_on_invalid,
    check_stream_options,
    project,
)
from windowstore.spark._workers import checked_workers

if TYPE_CHECKING:
    from typing_extensions import Required, Unpack

__all__ = ["session_windows"]


class _Arguments(SessionOptions, SparkOptions, total=False):
    """The keyword arguments of `session_windows` but ``return_rejected``."""

    key: Required[str | Column | Sequence[str | Column]]
    time: str | Column | None


@overload
def session_windows(
    df: DataFrame, *, return_rejected: Literal[False] = ..., **kwargs: Unpack[_Arguments]
) -> DataFrame: ...


@overload
def session_windows(
    df: DataFrame, *, return_rejected: Literal[True], **kwargs: Unpack[_Arguments]
) -> tuple[DataFrame, DataFrame]: ...


@checked_workers
def session_windows(
    df: DataFrame,
    *,
    key: str | Column | Sequence[str | Column],
    time: str | Column | None = None,
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
    partitions: int | None = None,
    grace: DurationLike | None = None,
    emit: Literal["final", "updates"] = "final",
    buckets: int | None = None,
    name: str | None = None,
    output: _records.Output = "windows",
    clock: Clock = "event",
    idle_timeout: DurationLike | None = None,
) -> DataFrame | tuple[DataFrame, DataFrame]:
    """Session windows of a batch DataFrame, computed by the Rust engine in Spark's workers.

    The sessions are those of [`windowstore.session_windows`][] over all of ``df``: per key,
    the records whose intervals ``[t, t + gap]`` chain. Each input partition is cut into
    partial sessions first (one Arrow call per partition, aggregates kept as mergeable states),
    so only the partials are shuffled by key; after the shuffle the partials of each key are
    merged and finished. The result is lazy, like any DataFrame.

    Args:
        df: The input. Only the key, time, gap, marker and aggregated columns are read.
        key: Key column name(s), or columns of ``df`` (``F.col("user_id")``).
        time: A ``timestamp``, ``timestamp_ntz`` or integer column (epoch ticks of
            ``time_unit``, default milliseconds); a stream needs a ``timestamp``. None with
            ``clock="processing"``.
        gap: A fixed gap: ``"30m"``, ``timedelta`` or integer ticks of the time column
            (microseconds for timestamps).
        gap_column: A column of per-record gaps, with ``max_gap``: ``interval day to second``,
            or integer ticks with an integer time column (a batch next to a timestamp refuses
            integers).
        max_gap: The cap on dynamic gaps.
        max_duration: The longest a session may span from its first to its last record (see
            [`windowstore.session_windows`][]). A cut depends on every earlier record of the
            key, so a batch shuffles the rows (not partial sessions) by key and cuts each
            partition's keys in one Arrow call: a worker holds all rows of the keys of its
            partition, as with ``output="records"``. A stream keeps the records of open
            sessions in its state (about 30 bytes plus the aggregated values per record).
        starts_session: A ``boolean`` column (null is false) whose true rows start a session,
            such as a login: a row marked at ``t`` puts a boundary just before ``t`` (see
            [`windowstore.session_windows`][]). Markers move the cuts of every later row of
            the key, so, as with ``max_duration``, a batch shuffles the rows (not partial
            sessions) by key and a stream keeps the records of open sessions in its state; a
            stream closes the session before a start marker at ``t`` once stream time passes
            ``t - 1 + grace``.
        ends_session: A ``boolean`` column (null is false) whose true rows end their session,
            such as a logout: a row marked at ``t`` puts a boundary just after ``t``. A stream
            closes that session once stream time passes ``t + grace``, not a gap later.
        aggs: Aggregations from [`windowstore.agg`][].
        on_invalid: ``"error"`` (default) fails the job on the first unusable row (null key or
            time, invalid gap, time overflow), naming its reason; ``"drop"`` leaves such rows out
            of the windows, and ``return_rejected=True`` returns them.
        time_unit: Batches only: the tick of an integer time column.
        return_rejected: Also return the rejected rows: every input column plus ``reason``.
        partitions: Batches only: partitions of the shuffle by key (default:
            ``spark.sql.shuffle.partitions``).
        grace: Streams only: how late a record may arrive (the watermark delay Spark gets;
            whole milliseconds). A stream needs it unless ``df`` has a watermark on ``time``.
        emit: ``"final"`` (each window once, when the watermark closes it; output mode
            append) or, for streams, ``"updates"`` (a changelog with an ``op`` column; output
            mode update).
        buckets: Streams only: how many buckets of state the keys are hashed into (default:
            ``spark.sql.shuffle.partitions``, one per state partition; a local session left at
            Spark's default of 200 is set to its default parallelism when the query is
            defined, as Spark's Python stateful operators run a task per state partition in
            every micro-batch): with the default state store provider each is one state row,
            with RocksDB a snapshot and a log of the calls since (see the Structured Streaming
            how-to, "State"). Keep it for the life of a checkpoint.
        name: Streams only: the name (default ``"windowstore"``) of the observed metrics in the
            query's progress (``windows`` and ``rejected_<reason>`` per micro-batch; with
            ``output="records"``, ``windows`` counts tagged rows).
        output: ``"windows"`` or ``"records"``: every input row that is not rejected, all its
            columns, plus ``session_start``, ``session_end`` and ``session_id``, exactly as
            [`windowstore.session_windows`][] defines them (the same ids), so that any Spark
            aggregation grouped by ``session_id`` applies to sessions. Needs
            ``emit="final"`` and no ``aggs``. A batch shuffles the whole rows by key and tags
            each partition's keys in one Arrow call: a worker holds all rows of the keys of its
            partition, as for sliding windows. A stream holds each accepted row in its bucket's
            state until its session closes (the state then grows with the rows of the open
            sessions) and outputs it once, when the watermark closes the session.
        clock: Streams only. ``"event"`` (default) or ``"processing"``: a record's time is its
            arrival, the processing time of the micro-batch that reads it (Spark's batch
            timestamp, to the millisecond; ``time`` and ``grace`` are left out, no watermark is
            needed), and a key's session closes in the first micro-batch whose processing time
            is more than ``gap`` after its last record, also while the source is idle: the
            operator runs with processing-time timers (``TimeMode.ProcessingTime``, or
            ``GroupStateTimeout.ProcessingTimeTimeout``), for which Spark runs micro-batches
            without data. ``session_start`` and ``session_end`` are arrival timestamps. Use a
            trigger interval (``trigger(processingTime="1 second")``): the query runs a
            micro-batch at every trigger.
        idle_timeout: Streams only, event time: once the query's stream time (the watermark
            plus its delay) has not grown for this much processing time, stream time runs with
            the processing time from there (``T + (now - w)``, ``w`` the processing time of the
            first micro-batch that saw stream time ``T``), so that windows an idle source
            leaves open close and, with ``emit="final"``, come out; a record arriving later is
            judged late or not by the advanced stream time (counted, and returned with
            ``return_rejected=True``). Each bucket holding open windows is then called in every
            micro-batch (a processing-time timer): use a trigger interval. The idle clock is in
            the state; a restarted query starts the idle period again.

    Returns:
        The windows: the key columns, ``session_start`` and ``session_end`` (first and last
        event time, both inclusive, of the time column's Spark type), then the aggregates; with
        ``output="records"``, the input's columns then ``session_start``, ``session_end`` and
        ``session_id`` (long). With ``return_rejected=True``, ``(windows, rejected)``: the
        tagged rows and the rejected rows are together exactly the input rows.

    Raises:
        SchemaError: A column is missing or of an unusable type (names the column).
        InvalidWindowSpec: A parameter is invalid (names the parameter).

    Examples:
        >>> from windowstore import agg
        >>> from windowstore.spark import session_windows
        >>> df = spark.createDataFrame([("a", 0, 1.0), ("a", 5, 2.0)],
        ...                            "user string, ts long, x double")
        >>> session_windows(df, key="user", time="ts", gap=10, aggs=[agg.sum("x")]).collect()
        [Row(user='a', session_start=0, session_end=5, sum_x=3.0)]
    """
    names = _schema.keys(df, key)
    time = None if time is None else _schema.column_name(df, time, "time")
    aggs = check_aggs(aggs)
    records = _records.check_output(output, aggs, emit if df.isStreaming else "final")
    markers = _markers(starts_session, ends_session)
    _schema.check_markers(df, markers)
    extra = [gap_column, *markers.values()]
    if df.isStreaming:
        check_stream_options(partitions=partitions, time_unit=time_unit)
        # Imported only for streams: it needs pandas, which a batch job's executors need not have.
        from windowstore.spark._stream import stream_windows

        return stream_windows(
            df,
            kind="sessions",
            key=names,
            time=time,
            params={
                "gap": gap,
                "gap_column": gap_column,
                "max_gap": max_gap,
                "max_duration": max_duration,
                **markers,
                "on_invalid": check_on_invalid(on_invalid),
            },
            used=_schema.used_columns(names, time, extra, aggs),
            aggs=aggs,
            grace=grace,
            emit=emit,
            return_rejected=return_rejected,
            buckets=buckets,
            name="windowstore" if name is None else name,
            records=records,
            clock=clock,
            idle_timeout=idle_timeout,
        )
    time = batch_time(
        time,
        emit=emit,
        grace=grace,
        clock=clock,
        idle_timeout=idle_timeout,
        buckets=buckets,
        name=name,
    )
    args = _udf.SessionArgs(
        spec={
            "key": names,
            "time": time,
            "time_unit": time_unit,
            "gap": None if gap is None else to_duration(gap, "gap"),
            "gap_column": gap_column,
            "max_gap": None if max_gap is None else to_duration(max_gap, "max_gap"),
            "aggs": aggs_arg(aggs),
            "on_invalid": check_on_invalid(on_invalid),
        },
        finish=finisher(aggs, ("session_start", "session_end")),
        max_duration=None if max_duration is None else to_duration(max_duration, "max_duration"),
        starts_session=starts_session,
        ends_session=ends_session,
    )
    _schema.check_time(df, time)
    # The engine's type errors, in Spark's types (records need every column's Arrow form).
    _schema.in_spark_terms(
        df,
        _schema.arrow_schema(df, _schema.used_columns(names, time, extra, aggs)),
        lambda schema: _core.session_windows(schema.empty_table(), **args.core()),
    )
    if records:
        tagged = _records_of(df, args, partitions)
        return (tagged, _rejected(df, args)) if return_rejected else tagged
    columns = _schema.used_columns(names, time, extra, aggs)
    arrow = _schema.arrow_schema(df, columns)
    # The engines check everything on an empty table of the executors' schema: same rules, and
    # the exact output schemas, before any job starts.
    empty = arrow.empty_table()
    if args.whole_rows:
        windows = _capped_of(df, args, columns, empty, partitions)
        return (windows, _rejected(df, args)) if return_rejected else windows
    partial_schema = _core.session_partials(empty, **args.core())[0].schema
    windows_empty = _core.merge_session_partials(
        partial_schema.empty_table(), input=empty, key=names, aggs=args.spec["aggs"]
    )
    windows_schema = (windows_empty if args.finish is None else args.finish(windows_empty)).schema

    partials = project(df, columns).mapInArrow(
        partial(_udf.session_partials, args), _schema.spark_schema(partial_schema)
    )
    windows = by_key(partials, names, partitions).mapInArrow(
        partial(_udf.merge_partials, args, arrow), _schema.spark_schema(windows_schema)
    )
    if not return_rejected:
        return windows
    return windows, _rejected(df, args)


def _records_of(df: DataFrame, args: _udf.SessionArgs, partitions: int | None) -> DataFrame:
    """Every row of ``df`` tagged with its session: the rows shuffled by key, each partition
    tagged in one call of the complete-data engine (all rows of a key are in one partition)."""
    _records.check_columns(df.columns)
    arrow = _schema.arrow_schema(df, df.columns)
    # The engine checks everything on an empty table; its output gives the tags' Spark types.
    probe, _ = _records.complete_records(arrow.empty_table(), args.records_core())
    tags = _schema.spark_schema(
        pa.schema([probe.schema.field(c) for c in _records.SESSION_COLUMNS])
    )
    schema = StructType([*df.schema.fields, *tags.fields])
    return by_key(df, args.key, partitions).mapInArrow(partial(_udf.session_records, args), schema)


def _capped_of(
    df: DataFrame,
    args: _udf.SessionArgs,
    columns: list[str],
    empty: pa.Table,
    partitions: int | None,
) -> DataFrame:
    """Sessions with a maximum duration or markers: the rows shuffled by key, each partition's
    keys cut in one call of the complete-data engine. Neither is mergeable from partial
    sessions (where they cut depends on every earlier record of the key), so the rows travel
    whole."""
    windows_empty, _, _ = _core.session_windows(empty, **args.core())
    schema = (windows_empty if args.finish is None else args.finish(windows_empty)).schema
    return by_key(project(df, columns), args.key, partitions).mapInArrow(
        partial(_udf.capped_sessions, args), _schema.spark_schema(schema)
    )


def _markers(starts_session: str | None, ends_session: str | None) -> dict[str, str]:
    """The marker parameters given, by name. A stream's engine parameters (and so its
    checkpoint's fingerprint) hold them only when given: a query without markers restarts
    on the checkpoints of earlier versions."""
    given = {"starts_session": starts_session, "ends_session": ends_session}
    return {name: column for name, column in given.items() if column is not None}


def _rejected(df: DataFrame, args: _udf.SessionArgs) -> DataFrame:
    """The rows of ``df`` the engine rejects, with their reason (computed only when read)."""
    arrow = _schema.arrow_schema(df, df.columns)
    schema = _core.session_windows(arrow.empty_table(), **args.core(aggs=[]))[1].schema
    return df.mapInArrow(partial(_udf.rejected_sessions, args), _schema.spark_schema(schema))
