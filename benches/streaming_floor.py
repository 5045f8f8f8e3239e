"""The floor contenders of bench_spark_streaming.py: windowstore's plan (watermark, buckets,
Spark's Python stateful operator) with a Python function that does no windowing, what Spark
costs windowstore before any windowing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
from harness import ROCKSDB
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType

__all__ = ["floor", "floor_long"]


def floor(df: DataFrame, buckets: int = 8, delay: str = "30 seconds") -> DataFrame:
    """What windowstore's plan costs without the engine: the same buckets, through an
    applyInPandasWithState that only counts its rows and keeps a byte of state."""

    def count(key: Any, frames: Any, state: Any) -> Any:
        rows = sum(len(f) for f in frames)
        state.update((b"x",))
        yield pd.DataFrame({"rows": [rows]})

    return (
        _bucketed(df, buckets, delay)
        .groupBy("b")
        .applyInPandasWithState(
            count, "rows long", "v binary", "append", GroupStateTimeout.EventTimeTimeout
        )
    )


def _bucketed(df: DataFrame, buckets: int, delay: str) -> DataFrame:
    """``df`` with a watermark, its bucket column ``b`` and the columns windowstore reads (the
    event time as microseconds ``t``, which carries the watermark as windowstore's does)."""
    bucket = F.pmod(F.xxhash64("k"), F.lit(buckets)).alias("b")
    delay_ms = {"30 seconds": 30_000, "1 minute": 60_000}[delay]
    micros = F.unix_micros("ts").alias("t", metadata={"spark.watermarkDelayMs": delay_ms})
    return df.withWatermark("ts", delay).select(bucket, micros, "k", "x")


class CountRows(StatefulProcessor):
    """The long scenario's floor with RocksDB: per bucket call, count the rows and rewrite one
    small value state, the least windowstore's log layout does (it also appends a log entry
    and sets a timer)."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("v", StructType([StructField("v", BinaryType())]))

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Any:
        n = sum(len(f) for f in rows)
        self.state.update((b"x",))
        yield pd.DataFrame({"rows": [n]})

    def close(self) -> None:
        pass


def floor_long(df: DataFrame) -> DataFrame:
    """The long scenario's floor: windowstore's plan (watermark, buckets, Spark's Python
    stateful operator for the provider) with a Python function that only counts its rows."""
    spark = df.sparkSession
    buckets = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    if ROCKSDB not in (spark.conf.get("spark.sql.streaming.stateStore.providerClass") or ""):
        return floor(df, buckets, "1 minute")
    return (
        _bucketed(df, buckets, "1 minute")
        .groupBy("b")
        .transformWithStateInPandas(CountRows(), "rows long", "Append", "EventTime")
    )
