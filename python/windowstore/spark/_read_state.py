"""The open windows of a streaming query, read from its checkpoint: :func:`read_state`.

Spark's state data source reads the state of one committed micro-batch (``statestore``, one
state variable at a time); the rows of each bucket meet in one Python call
(``groupBy(bucket).applyInArrow``), which restores the bucket's processor exactly as the
workers do (:mod:`._state`: the same row check, chunks, base snapshot and replay of the log),
and takes its :meth:`~windowstore.SessionWindowProcessor.windows`, converted as the query
converts its output (``BucketArgs.from_engine``, then ``_stream.sink_columns``). The query's
parameters are in every state row (``params``, the fingerprint of :mod:`._stream`, whose values
are ``repr`` text read back with ``ast.literal_eval``): the kind, key, time column, grace,
clock, output and the built-in aggregates. Not there: udfs' functions, and which input columns
other than the time column were Spark timestamps (the engine saw epoch microseconds); those are
arguments.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from windowstore._durations import to_duration
from windowstore._processor import WindowProcessor
from windowstore.agg import Agg
from windowstore.exceptions import InvalidWindowSpec, SnapshotError
from windowstore.spark import _schema
from windowstore.spark._bucket_args import BucketArgs
from windowstore.spark._plan import check_aggs
from windowstore.spark._state import (
    ENTRY_SCHEMA,
    META_SCHEMA,
    STATE_SCHEMA,
    Position,
    base_snapshot,
    read_log,
    read_spilled,
    replay_log,
)
from windowstore.spark._workers import checked_workers

__all__ = ["read_state"]

#: The operators of the two APIs, as the state metadata source names them.
_APPLY = "applyInPandasWithState"
_TWS = "transformWithState"
#: The state variables of transformWithStateInPandas (see :mod:`._state`).
_WHOLE, _META, _LOG, _OLD_BASE = (
    "windowstore",
    "windowstore_meta",
    "windowstore_log",
    "windowstore_base",
)

#: The grouping key of both operators (``_bucket.BUCKET``).
_BUCKET = "__windowstore_bucket"
#: Window bounds in records mode, which are no input columns.
_TAGS = ("session_start", "session_end")


@checked_workers
def read_state(
    spark: SparkSession,
    checkpoint_location: str | os.PathLike[str],
    batch_id: int | None = None,
    *,
    aggs: Sequence[Agg] = (),
    timestamps: Sequence[str] = (),
) -> DataFrame:
    """The open windows of a windowstore streaming query, read from its checkpoint.

    The query is one started with [`session_windows`][windowstore.spark.session_windows] or
    [`sliding_windows`][windowstore.spark.sliding_windows] on a streaming DataFrame. The
    windows are those its state holds after micro-batch ``batch_id`` (default: the latest
    committed), with their aggregates so far: what
    [`windows()`][windowstore.SessionWindowProcessor.windows] of each bucket's processor
    returns, in ``final`` mode exactly the windows the watermark has not closed yet (the sink's
    windows plus these are then the windows of all the input so far). The query may be
    running: a committed micro-batch's state is never rewritten, and all reads are of that one
    micro-batch. Spark keeps the state of the last ``spark.sql.streaming.minBatchesToRetain``
    micro-batches (100 by default); older ones cannot be read.

    Everything is read through Spark's state data source (``spark.read.format("statestore")``,
    options ``batchId`` and ``operatorId``; ``state-metadata`` names the operator and the latest
    committed micro-batch), so any file system and Spark Connect work:

    - default provider (``applyInPandasWithState``): each bucket's group state, one row
      (``value.groupState``: the parameters and the processor's bytes);
    - RocksDB (``transformWithStateInPandas``), one variable per read (``stateVarName``):
      ``windowstore`` (the ``whole`` layout's row; its chunks, if it spilled past
      ``maxEntryBytes``, from ``windowstore_log``), and for the ``log`` layout
      ``windowstore_meta`` and ``windowstore_log`` (the base snapshot's chunks and the log of
      calls, replayed on it as the workers replay it), and the list state of earlier versions,
      ``windowstore_base`` (with ``flattenCollectionTypes=false``, to keep its chunks' order).

    Each bucket is restored in one Python worker call, as the query restores it after a
    failure, and one bucket also on the driver first, for the output's schema.

    What the checkpoint cannot say is taken as arguments: the functions of user-defined
    aggregates, and which input columns other than the time column were timestamps (the engine
    saw them as epoch microseconds).

    Args:
        spark: The session that reads (any: it need not be the query's).
        checkpoint_location: The query's ``checkpointLocation``.
        batch_id: A committed micro-batch whose state Spark still keeps; default the latest.
        aggs: The query's ``aggs``, needed only when they include a
            [`udf`][windowstore.agg.udf] (a checkpoint holds no Python function); checked
            against the checkpoint's.
        timestamps: Key or aggregated input columns, other than the time column, that are Spark
            timestamps: they come back as timestamps, as in the sink (else as epoch
            microseconds). Not needed with ``output="records"``, whose state keeps the types.

    Returns:
        The open windows, in the columns and types of the query's sink rows, in no particular
        order: the key columns, the window bounds and the aggregates (``emit="updates"``: no
        ``op`` column; every window in it was last emitted as an upsert of these values);
        with ``output="records"``, the held input rows with their tags so far. A query that
        has processed no record yet has no columns.

    Raises:
        SnapshotError: The checkpoint holds no windowstore state at that micro-batch (no
            committed micro-batch, another kind of query, or several windowstore operators), or
            ``batch_id`` is not one of the micro-batches whose state it keeps (names them).
        InvalidWindowSpec: ``aggs`` or ``timestamps`` do not match the query.

    Examples:
        >>> from windowstore.spark import read_state
        >>> read_state(spark, "ck/sessions/").show()
        >>> read_state(spark, "ck/sessions/", batch_id=41).filter("user_id = 'u1'").collect()
    """
    # Imported here: it needs pandas, which `import windowstore.spark` does not (batch jobs).
    from windowstore.spark._stream import sink_columns

    location = os.fspath(checkpoint_location)
    operator = _operator(spark, location, batch_id)
    state, heads = _state_rows(spark, location, operator)
    found = heads.first()
    if found is None:
        return spark.createDataFrame([], StructType([]))
    params = found["params"]
    query = _Query.parse(params, location)
    chosen = _check_aggs(aggs, query.aggs)
    args = BucketArgs(
        kind=query.kind,
        params={"aggs": tuple(chosen)},
        time=query.time,
        input_schema=pa.schema([]),
        output_schema=pa.schema([]),
        delay_ms=query.delay_ms,
        fingerprint=params,
        timer_inclusive=operator.name != _APPLY,
        wall=query.wall,
    )
    # One bucket on the driver: the output's schema, and in records mode which input columns
    # are timestamps (the engine holds them as such, and a replay casts them so).
    probe = _Rows.of(state.where(F.col("bucket") == found["bucket"]).toArrow())
    held = _restore(args, probe, replay=False).windows()
    if not held.num_columns:
        return spark.createDataFrame([], StructType([]))
    micros = {query.time} if query.time is not None else set()
    if query.records:
        tz = pa.timestamp("us", "UTC")
        found_ts = tuple(f.name for f in held.schema if f.type == tz and f.name not in _TAGS)
        args = dataclasses.replace(args, timestamps=found_ts)
        micros |= set(found_ts)
    micros |= _check_timestamps(timestamps, query, chosen, held.schema)
    schema = args.from_engine(held.schema.empty_table()).schema

    # A function of its own, not a partial: applyInArrow reads its type hints.
    def bucket_windows(table: pa.Table) -> pa.Table:
        return _bucket_windows(args, schema, table)

    windows = state.groupBy("bucket").applyInArrow(bucket_windows, _schema.spark_schema(schema))
    return windows.select(*sink_columns(schema, query.key, chosen, micros, query.records))


@dataclasses.dataclass(frozen=True)
class _Operator:
    """The query's windows operator in its checkpoint, and the micro-batch to read."""

    id: int
    #: ``applyInPandasWithState`` or ``transformWithStateInPandasExec``.
    name: str
    #: Its state variables (transformWithState).
    variables: list[str]
    batch: int


def _operator(spark: SparkSession, location: str, batch_id: int | None) -> _Operator:
    """The windowstore operator of the checkpoint, as the state metadata source lists it, and
    the micro-batch to read (``batch_id``, else the latest committed)."""
    rows = spark.read.format("state-metadata").load(location).collect()
    found = []
    for row in rows:
        names: list[str] = []
        if row["operatorName"].startswith(_TWS):
            variables = json.loads(row["operatorProperties"] or "{}").get("stateVariables", [])
            names = [v["stateName"] for v in variables]
            if _META not in names and _WHOLE not in names:
                continue
        elif row["operatorName"] != _APPLY:
            continue
        first, latest = row["minBatchId"], row["maxBatchId"]
        if batch_id is not None and not first <= batch_id <= latest:
            raise SnapshotError(
                f"batch_id={batch_id}: the checkpoint {location} holds the state of micro-batches "
                f"{first} to {latest} (Spark keeps spark.sql.streaming.minBatchesToRetain of them)",
                location,
            )
        chosen = latest if batch_id is None else batch_id
        found.append(_Operator(row["operatorId"], row["operatorName"], names, chosen))
    if len(found) != 1 or found[0].batch < 0:
        listed = ", ".join(f"{r['operatorName']} (id {r['operatorId']})" for r in rows)
        what = "several windowstore operators" if len(found) > 1 else "no windowstore state"
        raise SnapshotError(
            f"the checkpoint {location} holds {what}: read_state reads the checkpoint of a "
            "query started with windowstore.spark.session_windows or sliding_windows on a "
            "streaming DataFrame (one windows operator) that has committed a micro-batch; "
            f"stateful operators found: {listed or 'none'}",
            location,
        )
    return found[0]


def _state_rows(
    spark: SparkSession, location: str, operator: _Operator
) -> tuple[DataFrame, DataFrame]:
    """Every state row of ``operator`` at its micro-batch, in one DataFrame: ``bucket`` and one
    struct column per kind of row (``whole``, ``meta``, ``entry`` of the log map, ``old_base``,
    the others null); and the buckets' ``params`` (from their row or meta entry)."""

    def read(var: str | None = None, **options: str) -> DataFrame:
        reader = spark.read.format("statestore").option("batchId", operator.batch)
        reader = reader.option("operatorId", operator.id)
        if var is not None:
            reader = reader.option("stateVarName", var)
        for option, value in options.items():
            reader = reader.option(option, value)
        return reader.load(location)

    bucket = F.col("key").getField(_BUCKET).alias("bucket")
    # Structs of the fields, not the state's own: their fields are nullable, as a union's rows
    # of other variables need (toArrow refuses nulls in a non-nullable field).
    heads: list[DataFrame] = []
    parts: list[DataFrame] = []
    if operator.name == _APPLY:
        parts.append(read().select(bucket, F.struct("value.groupState.*").alias("whole")))
        heads.append(parts[0].select("bucket", "whole.params"))
    if _WHOLE in operator.variables:
        parts.append(read(_WHOLE).select(bucket, F.struct("value.*").alias("whole")))
        heads.append(parts[-1].select("bucket", "whole.params"))
    if _META in operator.variables:
        parts.append(read(_META).select(bucket, F.struct("value.*").alias("meta")))
        heads.append(parts[-1].select("bucket", "meta.params"))
    if _LOG in operator.variables:
        entry: Column = F.struct(F.col("user_map_key.seq").alias("seq"), "user_map_value.*")
        parts.append(read(_LOG).select(bucket, entry.alias("entry")))
    if _OLD_BASE in operator.variables:
        # Not flattened: the list's elements in order, in one row per bucket.
        chunks = F.col("list_value").getField("chunk")
        old = read(_OLD_BASE, flattenCollectionTypes="false")
        parts.append(old.select(bucket, chunks.alias("old_base")))
    rows, params = _union_rows(parts), heads[0]
    for head in heads[1:]:
        params = params.unionByName(head)
    return rows, params


def _union_rows(parts: list[DataFrame]) -> DataFrame:
    """The state rows of ``parts`` (``bucket`` and one kind of row each) in one DataFrame with
    a column for every kind of row, null where a row is of another kind."""
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part, allowMissingColumns=True)
    for column in ("whole", "meta", "entry", "old_base"):
        if column not in rows.columns:
            rows = rows.withColumn(column, F.lit(None))
    return rows


@dataclasses.dataclass(frozen=True)
class _Query:
    """The query's parameters, from the fingerprint its state rows hold."""

    kind: str
    key: list[str]
    time: str | None
    delay_ms: int
    wall: str | None
    records: bool
    #: The ``repr`` of the query's aggregates.
    aggs: str

    @classmethod
    def parse(cls, params: str, location: str) -> _Query:
        try:
            fp = json.loads(params)
            value = {"key": ast.literal_eval(fp["key"])}
            for name in ("time", "grace", "clock", "output"):
                value[name] = ast.literal_eval(fp[name]) if name in fp else None
            kind, aggs = fp["kind"], fp["aggs"]
        except (ValueError, KeyError, SyntaxError, TypeError) as e:
            raise SnapshotError(
                f"the checkpoint {location} holds state this version of windowstore cannot "
                f"read: its parameters ({params[:200]}) ({e})",
                location,
            ) from None
        processing = value["clock"] == "processing"
        idle = fp.get("idle_timeout", "None") != "None"
        return cls(
            kind=kind,
            key=list(value["key"]),
            time=value["time"],
            delay_ms=_delay_ms(value["grace"]),
            wall="processing" if processing else ("idle" if idle else None),
            records=value["output"] == "records",
            aggs=aggs,
        )


def _delay_ms(grace: object) -> int:
    """The watermark delay in ms from a query's ``grace`` parameter: integer microseconds (the
    time column read as epoch microseconds) or, in records mode, a length such as ``"30000ms"``."""
    if grace is None:
        return 0
    if isinstance(grace, int):
        return grace // 1000
    _, nanos = to_duration(str(grace), "grace")
    return nanos // 1_000_000


def _check_aggs(given: Sequence[Agg], text: str) -> list[Agg]:
    """The query's aggregates: ``given`` if they are the query's (their ``repr`` is in its
    fingerprint), else the built-ins read from the fingerprint."""
    aggs = check_aggs(given)
    if aggs:
        if repr(tuple(aggs)) != text:
            raise InvalidWindowSpec(
                f"invalid aggs: the query's aggregates are {text}, not {tuple(aggs)!r}; pass "
                "the aggs=[...] the query was started with",
                "aggs",
            )
        return aggs
    parsed = _builtin_aggs(text)
    if parsed is None:
        raise InvalidWindowSpec(
            f"invalid aggs: the query computes user-defined aggregates ({text}), whose "
            "functions a checkpoint does not hold; pass the aggs=[...] the query was started with",
            "aggs",
        )
    return parsed


def _builtin_aggs(text: str) -> list[Agg] | None:
    """The aggregates of a fingerprint's ``aggs`` (the ``repr`` of a tuple of ``Agg``), or None
    if one is a udf. Read as literals, never evaluated."""
    tree = ast.parse(text, mode="eval").body
    if not isinstance(tree, ast.Tuple):
        raise SnapshotError(f"unreadable aggregates in the checkpoint's parameters: {text}")
    out = []
    for call in tree.elts:
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            raise SnapshotError(f"unreadable aggregates in the checkpoint's parameters: {text}")
        if call.func.id != "Agg":
            return None
        out.append(Agg(**{str(k.arg): ast.literal_eval(k.value) for k in call.keywords}))
    return out


def _check_timestamps(
    names: Sequence[str], query: _Query, aggs: Sequence[Agg], held: pa.Schema
) -> set[str]:
    """``names`` if each is a key or aggregated input column (any input column in records
    mode)."""
    if isinstance(names, str):
        names = [names]
    allowed = {*query.key, *(c for a in aggs for c in a.input_columns)}
    if query.records:
        allowed |= set(held.names) - set(_TAGS) - {"session_id"}
    for name in names:
        if name not in allowed:
            raise InvalidWindowSpec(
                f"invalid timestamps: {name!r} is no key or aggregated column of the query "
                f"({', '.join(sorted(allowed))})",
                "timestamps",
            )
    return set(names)


@dataclasses.dataclass
class _Rows:
    """One bucket's state rows, as the workers' state API gives them (tuples)."""

    whole: tuple[Any, ...] | None
    meta: tuple[Any, ...] | None
    log: _Map
    old_base: list[tuple[bytes]]

    @classmethod
    def of(cls, table: pa.Table) -> _Rows:
        def rows(column: str, names: Sequence[str]) -> list[tuple[Any, ...]]:
            return [tuple(d[n] for n in names) for d in table.column(column).to_pylist() if d]

        whole = rows("whole", STATE_SCHEMA.names)
        meta = rows("meta", META_SCHEMA.names)
        entries = rows("entry", ["seq", *ENTRY_SCHEMA.names])
        old = [c for chunks in table.column("old_base").to_pylist() if chunks for c in chunks]
        return cls(
            whole=whole[0] if whole else None,
            meta=meta[0] if meta else None,
            log=_Map([((e[0],), e[1:]) for e in entries]),
            old_base=[(c,) for c in old],
        )


@dataclasses.dataclass
class _Map:
    """A map state's entries, read like the workers' map state (:func:`read_log`)."""

    items: list[tuple[tuple[int], tuple[Any, ...]]]

    def iterator(self) -> list[tuple[tuple[int], tuple[Any, ...]]]:
        return self.items


def _restore(args: BucketArgs, rows: _Rows, replay: bool = True) -> WindowProcessor:
    """A bucket's processor as its state holds it, as the workers restore it: its row
    (``whole``), or its base snapshot with its log replayed (``log``; not replayed unless
    ``replay``)."""
    if rows.meta is not None:
        args.check(rows.meta[0])
        at = Position(*rows.meta[1:])
        chunks, log = read_log(rows.log)
        p = args.from_snapshot(base_snapshot(at, chunks, lambda: rows.old_base))
        if replay:
            replay_log(args, p, at, log)
        return p
    if rows.whole is not None:
        params, engine, token = rows.whole
        return args.restore(params, engine or read_spilled(rows.log, token))
    raise RuntimeError(
        "windowstore: a bucket's state has neither a row nor a meta entry: the state store "
        "does not hold what this query wrote"
    )


def _bucket_windows(args: BucketArgs, schema: pa.Schema, table: pa.Table) -> pa.Table:
    """The open windows of one bucket (``applyInArrow``: all the bucket's state rows)."""
    held = _restore(args, _Rows.of(table)).windows()
    if not held.num_columns:
        return schema.empty_table()
    return args.from_engine(held).select(schema.names).cast(schema)
