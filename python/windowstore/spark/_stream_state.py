"""Where a Structured Streaming query's state lives: the state store provider, the state
layout of a bucket, the bucket count and a local session's state partitions."""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from windowstore.exceptions import InvalidWindowSpec
from windowstore.spark._bucket_args import LAYOUT_CONF
from windowstore.spark._plan import positive_int

__all__ = [
    "buckets",
    "conf_number",
    "layout",
    "local_partitions",
    "on_rocksdb",
    "set_local_partitions",
]

_ROCKSDB = "RocksDBStateStoreProvider"
_PARTITIONS = "spark.sql.shuffle.partitions"


def on_rocksdb(conf: Any) -> bool:
    """Whether the session's state store provider is RocksDB; a warning when it is Spark's
    default (HDFSBackedStateStoreProvider)."""
    provider = conf.get("spark.sql.streaming.stateStore.providerClass") or ""
    if provider.rsplit(".", 1)[-1] in ("", "HDFSBackedStateStoreProvider"):
        # Once per windows query defined; the speed-up is benches/bench_spark_streaming.py's.
        logging.getLogger("windowstore.spark").warning(
            "this streaming query runs on Spark's default state store provider "
            "(HDFSBackedStateStoreProvider); windowstore runs about twice as fast on RocksDB: "
            "set spark.sql.streaming.stateStore.providerClass="
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
            " before a query starts on a new checkpoint"
        )
    return _ROCKSDB in provider


def set_local_partitions(spark: SparkSession, partitions: int) -> None:
    """Gives the local session ``partitions`` state partitions (see
    :func:`local_partitions`), with a warning that says so."""
    spark.conf.set(_PARTITIONS, str(partitions))
    logging.getLogger("windowstore.spark").warning(
        "spark.sql.shuffle.partitions was Spark's default (200) on this local session; set "
        "to %d, its default parallelism: every micro-batch runs one Python task per state "
        "partition, and a query keeps its checkpoint's count. Set it before defining the "
        "query to choose another",
        partitions,
    )


def layout(chosen: str | None, rocksdb: bool, wall: str | None) -> str:
    """The state layout: ``log`` (base snapshot plus a log of calls, RocksDB only, event time
    only) or ``whole`` (each bucket's state in one row, rewritten by every call)."""
    if chosen not in (None, "log", "whole"):
        raise InvalidWindowSpec(
            f'invalid {LAYOUT_CONF}: {chosen!r}; "log" (the default with the RocksDB '
            'provider) or "whole"',
            LAYOUT_CONF,
        )
    if chosen == "log" and not rocksdb:
        raise InvalidWindowSpec(
            f'invalid {LAYOUT_CONF}: "log" needs the RocksDB state store provider '
            "(its list and map state); with other providers a bucket's state is one row",
            LAYOUT_CONF,
        )
    if chosen == "log" and wall is not None:
        raise InvalidWindowSpec(
            f'invalid {LAYOUT_CONF}: "log" replays event-time calls; processing-time '
            'sessions and idle_timeout keep each bucket\'s state whole ("whole")',
            LAYOUT_CONF,
        )
    if chosen is None:
        return "log" if rocksdb and wall is None else "whole"
    return chosen


def conf_number(conf: Any, name: str, default: float, low: float) -> Any:
    """A numeric Spark configuration of windowstore's state, of the type of its default."""
    value = conf.get(name, None)
    if value is None:
        return default
    try:
        number = type(default)(value)
    except ValueError:
        number = None
    if number is None or number < low:
        raise InvalidWindowSpec(f"invalid {name}: {value!r}; a number >= {low} is needed", name)
    return number


def buckets(df: DataFrame, buckets: int | None, partitions: int | None) -> int:
    """The bucket count: ``buckets``, else one per state partition."""
    if buckets is not None:
        return positive_int(buckets, "buckets")
    if partitions is not None:
        return partitions
    return int(df.sparkSession.conf.get(_PARTITIONS) or 200)


def local_partitions(spark: SparkSession) -> int | None:
    """The state partitions to give a local session that left ``spark.sql.shuffle.partitions``
    at Spark's default (its default parallelism), else None.

    Spark's Python stateful operators start a Python task per state partition in every
    micro-batch, data or not: at the default 200 a small local stream spends its time there
    (benches/bench_small_stream.py). The count is the session's when a query first starts on a
    checkpoint, and the checkpoint's from then on, so a session that chose it keeps it."""
    try:
        sc = spark.sparkContext
        chosen = spark._jsparkSession.sessionState().conf().contains(_PARTITIONS)
    except Exception:  # Spark Connect: the server's configuration
        return None
    if chosen or not (sc.master or "").startswith("local"):
        return None
    return max(1, int(sc.defaultParallelism))
