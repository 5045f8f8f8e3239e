"""Sliding windows of Spark DataFrames: every record of a key in one partition, one engine call."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Literal, overload

from pyspark.sql import Column, DataFrame

from windowstore._clock import Clock
from windowstore._durations import DurationLike, to_duration
from windowstore._processor import OnInvalid, TimeUnit
from windowstore.agg import Agg
from windowstore.sliding import SlidingOptions
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

__all__ = ["sliding_windows"]


class _Arguments(SlidingOptions, SparkOptions, total=False):
    """The keyword arguments of `sliding_windows` but ``return_rejected``."""

    key: Required[str | Column | Sequence[str | Column]]
    time: str | Column | None
    time_difference: Required[DurationLike]


@overload
def sliding_windows(
    df: DataFrame, *, return_rejected: Literal[False] = ..., **kwargs: Unpack[_Arguments]
) -> DataFrame: ...


@overload
def sliding_windows(
    df: DataFrame, *, return_rejected: Literal[True], **kwargs: Unpack[_Arguments]
) -> tuple[DataFrame, DataFrame]: ...


@checked_workers
def sliding_windows(
    df: DataFrame,
    *,
    key: str | Column | Sequence[str | Column],
    time: str | Column | None = None,
    time_difference: DurationLike,
    aggs: Sequence[Agg] = (),
    on_invalid: OnInvalid = "error",
    time_unit: TimeUnit | None = None,
    return_rejected: bool = False,
    partitions: int | None = None,
    grace: DurationLike | None = None,
    emit: Literal["final", "updates"] = "final",
    buckets: int | None = None,
    name: str | None = None,
    clock: Clock = "event",
    idle_timeout: DurationLike | None = None,
) -> DataFrame | tuple[DataFrame, DataFrame]:
    """Kafka's sliding windows (KIP-450) of a batch DataFrame, computed by the Rust engine.

    The windows are those of [`windowstore.sliding_windows`][] over all of ``df``: per key,
    every distinct set of records within ``time_difference`` of each other, once. ``df`` is
    shuffled by key; each partition then goes to the engine in one call.

    Args:
        df: The input. Only the key, time and aggregated columns are read.
        key: Key column name(s), or columns of ``df`` (``F.col("user_id")``).
        time: A ``timestamp``, ``timestamp_ntz`` or integer column (epoch ticks of
            ``time_unit``, default milliseconds).
        time_difference: The window length D (``"5m"``, ``timedelta`` or integer ticks).
        aggs: Aggregations from [`windowstore.agg`][].
        on_invalid: ``"error"`` (default) fails the job on the first unusable row (null key or
            time), naming its reason; ``"drop"`` leaves such rows out, and
            ``return_rejected=True`` returns them.
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
            query's progress (``windows`` and ``rejected_<reason>`` per micro-batch).
        clock: Streams only. ``"event"`` (default) or ``"processing"``: a record's time is the
            processing time of the micro-batch that reads it (``time`` and ``grace`` are left
            out), and a window closes in the first micro-batch whose processing time passes
            its end, also while the source is idle (processing-time timers: use a trigger
            interval). The window bounds are arrival timestamps. As for
            [`session_windows`][windowstore.spark.session_windows].
        idle_timeout: Streams only, event time: once the query's stream time has not grown for
            this much processing time, stream time runs with the processing time, so that the
            windows an idle source leaves open close; as for
            [`session_windows`][windowstore.spark.session_windows].

    Returns:
        The windows: the key columns, ``window_start``, ``window_end`` (both inclusive),
        ``window_time`` (the latest record time in the window), of the time column's Spark type,
        then the aggregates. With ``return_rejected=True``, ``(windows, rejected)``.

    Raises:
        SchemaError: A column is missing or of an unusable type (names the column).
        InvalidWindowSpec: A parameter is invalid (names the parameter).

    Examples:
        >>> from windowstore import agg
        >>> from windowstore.spark import sliding_windows
        >>> df = spark.createDataFrame([("a", 8000), ("a", 9200)], "user string, ts long")
        >>> sliding_windows(df, key="user", time="ts", time_difference=5000,
        ...                 aggs=[agg.count()]).count()
        3
    """
    names = _schema.keys(df, key)
    time = None if time is None else _schema.column_name(df, time, "time")
    aggs = check_aggs(aggs)
    to_duration(time_difference, "time_difference")  # a clear error for an unreadable one now
    if df.isStreaming:
        check_stream_options(partitions=partitions, time_unit=time_unit)
        # Imported only for streams: it needs pandas, which a batch job's executors need not have.
        from windowstore.spark._stream import stream_windows

        return stream_windows(
            df,
            kind="sliding",
            key=names,
            time=time,
            params={
                "time_difference": time_difference,
                "on_invalid": check_on_invalid(on_invalid),
            },
            used=_schema.used_columns(names, time, [], aggs),
            aggs=aggs,
            grace=grace,
            emit=emit,
            return_rejected=return_rejected,
            buckets=buckets,
            name="windowstore" if name is None else name,
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
    args = _udf.SlidingArgs(
        key=names,
        time=time,
        time_unit=time_unit,
        time_difference=time_difference,
        aggs=tuple(aggs),
        on_invalid=on_invalid,
    )
    check_on_invalid(on_invalid)
    _schema.check_time(df, time)
    columns = _schema.used_columns(names, time, [], aggs)
    _schema.in_spark_terms(
        df,
        _schema.arrow_schema(df, columns),
        lambda schema: _udf.sliding_call(args, schema.empty_table(), args.aggs),
    )
    empty = _schema.arrow_schema(df, columns).empty_table()
    # The engine checks everything on an empty table of the executors' schema, before any job.
    schema = _udf.sliding_call(args, empty, args.aggs)[0].schema
    windows = by_key(project(df, columns), names, partitions).mapInArrow(
        partial(_udf.sliding, args), _schema.spark_schema(schema)
    )
    if not return_rejected:
        return windows
    full = _schema.arrow_schema(df, df.columns).empty_table()
    rejected_schema = _udf.sliding_call(args, full, ())[1].schema
    rejected = df.mapInArrow(
        partial(_udf.rejected_sliding, args), _schema.spark_schema(rejected_schema)
    )
    return windows, rejected
