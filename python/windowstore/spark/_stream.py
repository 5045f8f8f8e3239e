"""Streaming DataFrames: session and sliding windows with state in Spark's state store.

The driver checks everything here, when the query is defined: the time column, the event-time
basis (``grace`` or a watermark), every engine parameter (the engine runs on an empty table of
the workers' input schema), and the output schema. The workers run :mod:`._bucket`.

The plan, for an input ``df``:

    df.withWatermark(time, grace)                      (unless df has a watermark already)
      .select(bucket, keys, unix_micros(time), ...,    (the columns the engine reads, and
              mark)                                     the watermark's mark: no row is late
                                                        for Spark, windowstore judges them)
      .groupBy(bucket)
      .transformWithStateInPandas(...)                 (RocksDB provider; else
                                                        applyInPandasWithState)
      .observe(name, windows, rejected_<reason>...)    (counts in the query's progress)
      .filter(window rows).select(timestamps back)

With ``return_rejected=True`` a second stream decodes the rejected records from the same
operator's output; writing both runs the operator once per query (each with its own
checkpoint), with the same deterministic results.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout
from pyspark.sql.types import TimestampType

from windowstore import _records
from windowstore._durations import (
    DurationLike,
    to_duration,
)
from windowstore.agg import Agg
from windowstore.exceptions import InvalidWindowSpec, SchemaError
from windowstore.spark import _bucket, _bucket_args, _bucket_log, _schema, _stream_state
from windowstore.spark._plan import column
from windowstore.spark._schema import engine_arrow_type
from windowstore.spark._stream_checks import check_durations, check_stream_time

__all__ = ["sink_columns", "stream_windows"]

_WATERMARK = "spark.watermarkDelayMs"
#: The input column that carries the watermark mark, and its value: past every watermark (in
#: microseconds, as Spark compares them), so that Spark drops no row as late.
_MARK = "__windowstore_watermark"
_NEVER_LATE = (1 << 63) - 1
#: Output columns that hold event times (epoch microseconds in the engine).
_TIME_OUTPUTS = ("session_start", "session_end", "window_start", "window_end", "window_time")


def stream_windows(
    df: DataFrame,
    *,
    kind: str,
    key: list[str],
    time: str | None,
    params: dict[str, Any],
    used: list[str],
    aggs: Sequence[Agg],
    grace: DurationLike | None,
    emit: str,
    return_rejected: bool,
    buckets: int | None,
    name: str,
    records: bool = False,
    clock: str = "event",
    idle_timeout: DurationLike | None = None,
) -> DataFrame | tuple[DataFrame, DataFrame]:
    """The windows of streaming ``df`` (see :func:`windowstore.spark.session_windows`); with
    ``records``, its rows tagged with their sessions.

    With ``clock="processing"`` there is no time column and no watermark: records' times are
    the micro-batch's processing time, and processing-time timers close windows. With
    ``idle_timeout`` the watermark stays, but the operator runs with
    processing-time timers too (Spark has one time mode per operator), called in every
    micro-batch while it holds open windows, so that it sees the processing time pass."""
    _check_emit_and_name(emit, name)
    check_stream_time(df, time, grace, clock)
    check_durations(df, kind, time, params, grace, clock, idle_timeout)
    # Event time: the watermark's delay (see _event_time); processing time has none.
    df, delay_ms = (df, 0) if time is None else _event_time(df, time, grace)
    processing = clock == "processing"
    partitions = _stream_state.local_partitions(df.sparkSession)
    n = _stream_state.buckets(df, buckets, partitions)
    # Rejected records come back whole, as in the batch adapter; tagged records too.
    used = _input_columns(df, used, records=records, whole_rows=return_rejected or records)
    # Timestamps go to Python as epoch microseconds: pandas would shift them into the session
    # time zone, and integers are cheaper to hand over.
    micros = {c for c in used if isinstance(_schema.field(df, c).dataType, TimestampType)}
    projected = _project(df, key, n, used, micros, None if processing else delay_ms)
    input_schema = _schema.arrow_schema(projected, used)
    engine_params = _engine_params(
        params,
        key=key,
        emit=emit,
        aggs=aggs,
        time=time,
        delay_ms=delay_ms,
        clock=clock,
        records=records,
        idle_timeout=idle_timeout,
    )
    # Tagged rows are held in the state and come out whole: their timestamps go back to Arrow
    # timestamps in the engine, so that session ids are those of every other engine.
    timestamps = tuple(sorted(micros)) if records else ()
    wall = "processing" if processing else ("idle" if idle_timeout is not None else None)
    windows_schema, rejected_schema = _engine_schemas(
        df, kind, engine_params, time, input_schema, delay_ms, timestamps, wall
    )
    output_schema = _bucket.output_schema(windows_schema)
    conf = df.sparkSession.conf
    rocksdb = _stream_state.on_rocksdb(conf)
    layout = _stream_state.layout(conf.get(_bucket_args.LAYOUT_CONF, None), rocksdb, wall)
    args = _bucket_args.BucketArgs(
        kind=kind,
        params=engine_params,
        time=time,
        input_schema=input_schema,
        output_schema=output_schema,
        delay_ms=delay_ms,
        # The bucket count is part of it: with another count, keys would meet other keys' state.
        fingerprint=json.dumps(
            {
                "kind": kind,
                "buckets": n,
                **{k: repr(v) for k, v in sorted(engine_params.items())},
            },
            sort_keys=True,
        ),
        timer_inclusive=rocksdb,
        timestamps=timestamps,
        wall=wall,
        max_entry_bytes=_stream_state.conf_number(
            conf, _bucket_args.MAX_ENTRY_CONF, _bucket_args.DEFAULT_MAX_ENTRY, 1024
        ),
        compact_ratio=_stream_state.conf_number(
            conf, _bucket_args.COMPACT_CONF, _bucket_args.DEFAULT_COMPACT_RATIO, 0
        ),
        cache_entries=_stream_state.conf_number(
            conf, _bucket_args.CACHE_CONF, _bucket_args.DEFAULT_CACHE_ENTRIES, 0
        ),
    )
    out = _windows_operator(projected, args, emit, rocksdb=rocksdb, layout=layout)
    is_window = F.col(_bucket.REJECTED).isNull()
    observed = out.observe(
        name,
        F.count(F.when(is_window, 1)).alias("windows"),
        *[
            F.coalesce(F.sum(_bucket.count_column(r)), F.lit(0)).alias(f"rejected_{r}")
            for r in _bucket.REASONS
        ],
    )
    windows = observed.filter(is_window).select(
        *sink_columns(windows_schema, key, aggs, micros, records)
    )
    if partitions is not None:
        # Last: a call that raises changes nothing.
        _stream_state.set_local_partitions(df.sparkSession, partitions)
    if not return_rejected:
        return windows
    return windows, _rejected_records(out.filter(~is_window), rejected_schema, micros)


def _check_emit_and_name(emit: str, name: str) -> None:
    """Refuses an ``emit`` that is no output mode of a stream, and a ``name`` (the name the
    query's counts are observed under) that is not a non-empty string."""
    if emit not in ("final", "updates"):
        raise InvalidWindowSpec(
            f'invalid emit: {emit!r}; a stream takes "final" (output mode append) or '
            '"updates" (output mode update)',
            "emit",
        )
    if not isinstance(name, str) or not name:
        raise InvalidWindowSpec(
            f"invalid name: a non-empty string is required, not {name!r}", "name"
        )


def _input_columns(df: DataFrame, used: list[str], *, records: bool, whole_rows: bool) -> list[str]:
    """The columns of ``df`` the workers read: ``used`` (a SchemaError names a missing one)
    and, with ``whole_rows``, every other column of ``df`` too. With ``records``, a column of
    ``df`` named as a tag is refused (``_records.check_columns``)."""
    for c in used:
        _schema.field(df, c)  # a SchemaError naming a missing column
    if records:
        _records.check_columns(df.columns)
    if whole_rows:
        return [*df.columns, *[c for c in used if c not in df.columns]]
    return used


def _project(
    df: DataFrame,
    key: list[str],
    buckets: int,
    used: list[str],
    micros: set[str],
    delay_ms: int | None,
) -> DataFrame:
    """The operator's input: the bucket of each row's ``key`` (one of ``buckets``), the
    ``used`` columns (those in ``micros`` as epoch microseconds) and, with the watermark delay
    ``delay_ms`` of an event-time stream (None in processing time), the watermark's mark."""
    bucket = F.pmod(F.xxhash64(*[column(k) for k in key]), F.lit(buckets)).cast("int")
    # The time column loses its watermark mark here (unix_micros(...).alias carries none):
    # Spark's stateful operators drop every input row whose marked column is at or below the
    # watermark, and windowstore decides lateness itself (a record behind the watermark may
    # still join an open window). The mark goes on _MARK instead, a constant no watermark
    # reaches: applyInPandasWithState needs a marked input column for its event-time timeout
    # and its watermark. Spark computes the watermark upstream, from the time column.
    mark = (
        []
        if delay_ms is None
        else [F.lit(_NEVER_LATE).alias(_MARK, metadata={_WATERMARK: delay_ms})]
    )
    return df.select(
        bucket.alias(_bucket.BUCKET),
        *[F.unix_micros(column(c)).alias(c) if c in micros else column(c) for c in used],
        *mark,
    )


def _engine_params(
    params: dict[str, Any],
    *,
    key: list[str],
    emit: str,
    aggs: Sequence[Agg],
    time: str | None,
    delay_ms: int,
    clock: str,
    records: bool,
    idle_timeout: DurationLike | None,
) -> dict[str, Any]:
    """The engine's parameters: the window kind's ``params``, the key, emission and aggregates,
    then the clock (in event time, the time column and the watermark delay as the grace), the
    idle timeout and, with ``records``, tagged rows as the output."""
    engine_params = {
        **params,
        "key": key,
        "emit": emit,
        "aggs": tuple(aggs),
    }
    if clock == "processing":
        engine_params["clock"] = "processing"
    else:
        # Without records the engine reads the time column as epoch microseconds (an integer
        # column of time_unit "us", so integer ticks); with records, as a timestamp, which has
        # its own unit (a time_unit is refused there) and takes a length only.
        if records:
            engine_params.update(time=time, grace=f"{delay_ms}ms")
        else:
            engine_params.update(time=time, time_unit="us", grace=delay_ms * 1000)
        if clock != "event":
            engine_params["clock"] = clock  # the engine refuses it, naming clock
    if idle_timeout is not None:
        engine_params["idle_timeout"] = idle_timeout
    if records:
        engine_params["output"] = "records"
    return engine_params


def _engine_schemas(
    df: DataFrame,
    kind: str,
    engine_params: dict[str, Any],
    time: str | None,
    input_schema: pa.Schema,
    delay_ms: int,
    timestamps: tuple[str, ...],
    wall: str | None,
) -> tuple[pa.Schema, pa.Schema]:
    """The schemas of the windows and of the rejected records the workers' engine gives back
    (after ``BucketArgs.from_engine``) for input of ``input_schema``. First the engine checks
    every parameter and column on an empty table of that schema, its type errors in Spark's
    types."""

    def check(schema: pa.Schema) -> None:
        checked = _bucket_args.BucketArgs(
            kind, engine_params, time, schema, pa.schema([]), delay_ms, "", True, timestamps, wall
        )
        checked.new_processor().process(checked.to_engine(schema.empty_table()))

    # Type errors in Spark's types; timestamps reach the engine as epoch microseconds.
    _schema.in_spark_terms(
        df,
        input_schema,
        check,
        lambda dt: pa.int64() if isinstance(dt, TimestampType) else engine_arrow_type(dt),
    )
    probe_args = _bucket_args.BucketArgs(
        kind, engine_params, time, input_schema, pa.schema([]), delay_ms, "", True, timestamps, wall
    )
    probe = probe_args.new_processor()
    windows_schema = probe_args.from_engine(
        probe.process(probe_args.to_engine(input_schema.empty_table()))
    ).schema
    rejected_schema = probe_args.from_engine(probe.rejected()).schema
    return windows_schema, rejected_schema


def _windows_operator(
    projected: DataFrame, args: _bucket_args.BucketArgs, emit: str, *, rocksdb: bool, layout: str
) -> DataFrame:
    """The stateful operator over ``projected`` grouped by bucket: on the RocksDB provider
    ``transformWithStateInPandas`` (with the processor of the state ``layout``), else
    ``applyInPandasWithState``; its timers in event time, or in processing time when the wall
    clock is read (``args.wall``)."""
    spark_output = _schema.spark_schema(args.output_schema)
    grouped = projected.groupBy(_bucket.BUCKET)
    mode = "Append" if emit == "final" else "Update"
    if rocksdb:
        log = layout == "log"
        processor = _bucket_log.LogBucketProcessor(args) if log else _bucket.BucketProcessor(args)
        return grouped.transformWithStateInPandas(
            processor,
            spark_output,
            mode,
            "EventTime" if args.wall is None else "ProcessingTime",
        )
    return grouped.applyInPandasWithState(
        partial(_bucket.apply_in_pandas_with_state, args),
        spark_output,
        _bucket.STATE_SCHEMA,
        mode.lower(),
        GroupStateTimeout.EventTimeTimeout
        if args.wall is None
        else GroupStateTimeout.ProcessingTimeTimeout,
    )


def _rejected_records(rows: DataFrame, schema: pa.Schema, micros: set[str]) -> DataFrame:
    """The rejected records decoded from the operator's rejected ``rows``, of the engine's
    rejected ``schema``; the columns in ``micros`` back to timestamps."""
    rejected = rows.select(_bucket.REJECTED).mapInArrow(
        _bucket.read_rejected, _schema.spark_schema(schema)
    )
    return rejected.select(*[_from_micros(f.name, f.name in micros, (), micros) for f in schema])


def sink_columns(
    windows: pa.Schema, key: Sequence[str], aggs: Sequence[Agg], micros: set[str], records: bool
) -> list[Column]:
    """The sink's columns of the engine's ``windows`` (after ``BucketArgs.from_engine``): event
    times back to timestamps. ``micros``: the input columns that are Spark timestamps (handed
    to the engine as epoch microseconds). Timestamp keys, and in ``records`` mode every
    timestamp column, come back as timestamps."""
    times = set(_TIME_OUTPUTS) | (micros if records else micros & set(key))
    return [_from_micros(f.name, f.name in times, aggs, micros) for f in windows]


def _from_micros(name: str, is_time: bool, aggs: Sequence[Agg], micros: set[str]) -> Column:
    """Output column ``name``, back to a timestamp when it holds timestamps (``micros``: the
    input columns handed over as epoch microseconds)."""
    agg = next((a for a in aggs if a.output_name == name), None)
    if agg is not None and agg.column in micros:
        if agg.func in ("min", "max", "first", "last"):
            is_time = True
        elif agg.func in ("collect", "collect_all"):
            return F.transform(column(name), F.timestamp_micros).alias(name)
    return F.timestamp_micros(column(name)).alias(name) if is_time else column(name)


def _event_time(df: DataFrame, time: str, grace: DurationLike | None) -> tuple[DataFrame, int]:
    """``df`` with a watermark on ``time`` and its delay in ms: the one ``df`` has, or one of
    ``grace``. Stream time is then the watermark plus the delay."""
    marked = {f.name: f.metadata[_WATERMARK] for f in df.schema.fields if _WATERMARK in f.metadata}
    others = sorted(set(marked) - {time})
    if others:
        raise SchemaError(
            f'column "{others[0]}": the stream\'s watermark is on "{others[0]}"; windows need '
            f'it on their time column "{time}"',
            others[0],
        )
    grace_us = None if grace is None else _grace_micros(grace)
    if time in marked:
        delay_ms = int(marked[time])
        if grace_us is not None and grace_us != delay_ms * 1000:
            raise InvalidWindowSpec(
                f"invalid grace: the stream already has a watermark delay of {delay_ms} ms on "
                f'"{time}", which is its grace; pass grace=None, or drop the watermark',
                "grace",
            )
        return df, delay_ms
    if grace_us is None:
        raise InvalidWindowSpec(
            "invalid grace: a stream needs an event-time basis; pass grace= (how late a record "
            f'may be, e.g. grace="10 minutes") or call df.withWatermark("{time}", delay) first',
            "grace",
        )
    if grace_us % 1000:
        raise InvalidWindowSpec(
            f"invalid grace: {grace_us} us; Spark's watermark counts whole milliseconds", "grace"
        )
    marked_df = df.withWatermark(time, f"{grace_us // 1000} milliseconds")
    return marked_df, grace_us // 1000


def _grace_micros(grace: DurationLike) -> int:
    unit, value = to_duration(grace, "grace")
    micros = value if unit == "ticks" else value // 1000
    if value < 0:
        raise InvalidWindowSpec(f"invalid grace: must be >= 0, got {grace!r}", "grace")
    if unit == "nanos" and value % 1000:
        raise InvalidWindowSpec(
            f"invalid grace: {grace!r} is finer than the microseconds of a timestamp", "grace"
        )
    return micros
