"""User-defined aggregates and count_distinct through Spark: batch sessions (map-side partial
states merged after the shuffle), batch sliding windows and a Structured Streaming query, each
against windowstore's complete mode on the same rows."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark.sql import SparkSession

import windowstore
from windowstore import AggregateFunctionError, agg
from windowstore.spark import session_windows, sliding_windows

from .conftest import sort_rows, to_spark
from .streams import GRACE, SCHEMA, SENTINEL, events, read_stream, to_parquet, write_files

pytestmark = pytest.mark.spark

# The workers cannot import this test module: its functions travel by value, as functions
# of a user's script (module __main__) do.
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


def spread(x: pa.Array) -> int | None:
    values = [v for v in x.to_pylist() if v is not None]
    return max(values) - min(values) if values else None


def order_signature(x: pa.Array) -> str:
    return ",".join("-" if v is None else str(v) for v in x.to_pylist())


AGGS = [
    agg.count(),
    agg.udf(spread, "x", returns=pa.int64()).alias("spread"),
    agg.udf(order_signature, "x", returns=pa.string()).alias("xs"),
    agg.count_distinct("x"),
    agg.count_distinct("s"),
]


def rows() -> pa.Table:
    """Records of 5 keys with ties, nulls and repeated values."""
    n = 400
    return pa.table(
        {
            "k": [f"k{i % 5}" for i in range(n)],
            "ts": pa.array([(i * 37) % 1000 for i in range(n)], pa.int64()),
            "x": pa.array([None if i % 11 == 0 else (i * 7) % 13 for i in range(n)], pa.int64()),
            "s": [None if i % 6 == 0 else f"v{i % 4}" for i in range(n)],
        }
    )


def test_batch_sessions_equal_complete_mode(spark: SparkSession) -> None:
    t = rows()
    got = session_windows(to_spark(spark, t), key="k", time="ts", gap=20, aggs=AGGS).toArrow()
    want = windowstore.session_windows(t, key="k", time="ts", gap=20, aggs=AGGS)
    assert want.num_rows > 20
    by = ["k", "session_start"]
    assert sort_rows(got, by).to_pylist() == sort_rows(want, by).to_pylist()


def test_batch_sliding_windows_equal_complete_mode(spark: SparkSession) -> None:
    t = rows()
    df = to_spark(spark, t)
    got = sliding_windows(df, key="k", time="ts", time_difference=30, aggs=AGGS).toArrow()
    want = windowstore.sliding_windows(t, key="k", time="ts", time_difference=30, aggs=AGGS)
    by = ["k", "window_start"]
    assert sort_rows(got, by).to_pylist() == sort_rows(want, by).to_pylist()


def test_a_raising_function_fails_the_job_naming_the_aggregate(spark: SparkSession) -> None:
    def broken(x: pa.Array) -> int:
        raise ValueError("no luck")

    df = to_spark(spark, rows())
    aggs = [agg.udf(broken, "x", returns=pa.int64()).alias("broken")]
    with pytest.raises(Exception, match="aggregate 'broken' raised ValueError: no luck"):
        session_windows(df, key="k", time="ts", gap=20, aggs=aggs).collect()
    # The same function locally raises the library's error, with the function's as its cause.
    with pytest.raises(AggregateFunctionError):
        windowstore.session_windows(rows(), key="k", time="ts", gap=20, aggs=aggs)


STREAM_AGGS = [
    agg.count(),
    agg.udf(spread, "x", returns=pa.int64()).alias("spread"),
    agg.udf(order_signature, "x", returns=pa.string()).alias("xs"),
    agg.count_distinct("x"),
]


def test_a_stream_equals_the_batch_adapter(spark: SparkSession, tmp_path: Path) -> None:
    frames = events(seed=11, files=6)
    write_files(frames, tmp_path / "in")
    windows = session_windows(
        read_stream(spark, tmp_path / "in"),
        key="k",
        time="ts",
        gap="30s",
        grace=GRACE,
        aggs=STREAM_AGGS,
    )
    query = to_parquet(windows, tmp_path / "out", tmp_path / "checkpoint", availableNow=True)
    query.awaitTermination()
    out = spark.read.parquet(str(tmp_path / "out"))
    got = out.filter(out.k != SENTINEL).toArrow()
    every = pd.concat(frames, ignore_index=True)
    every = every[every["k"] != SENTINEL]
    want = session_windows(
        spark.createDataFrame(every, SCHEMA), key="k", time="ts", gap="30s", aggs=STREAM_AGGS
    ).toArrow()
    assert want.num_rows > 10
    by = ["k", "session_start"]
    assert sort_rows(got, by).to_pylist() == sort_rows(want, by).to_pylist()
