"""windowstore.spark.session_windows on real Spark: the complete-data engine's sessions, and
Spark's own session_window's for fixed gaps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import windowstore
from windowstore import agg
from windowstore.clickstream import clickstream
from windowstore.spark import session_windows

from .compare import assert_same_windows
from .conftest import AMOUNT_AGGS, to_spark

pytestmark = pytest.mark.spark

AGGS = [
    *AMOUNT_AGGS,
    agg.mean("amount"),
    agg.first("page"),
    agg.last("page"),
    agg.collect("page", max_size=3),
    agg.sum("items"),
]
BY = ["user_id", "session_start"]


def events(n: int = 20_000, users: int = 200, seed: int = 3) -> pa.Table:
    """A clickstream (times strictly increasing per user: no ties) with a string column, an
    integer column with nulls, and timestamps in microseconds."""
    t = clickstream(n, users=users, seed=seed)
    rng = np.random.default_rng(seed)
    pages = pa.array([f"/p/{i}" for i in rng.integers(0, 50, n)], pa.string())
    items = pa.array(rng.integers(0, 5, n), pa.int64(), mask=rng.random(n) < 0.1)
    return t.append_column("page", pages).append_column("items", items)


def with_timestamps(t: pa.Table) -> pa.Table:
    ts = t["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us", "UTC"))
    return t.set_column(t.schema.get_field_index("ts"), "ts", ts)


def test_fixed_gap_equals_the_complete_engine_on_timestamps(spark: SparkSession) -> None:
    table = with_timestamps(events())
    got = session_windows(
        to_spark(spark, table), key="user_id", time="ts", gap="30m", aggs=AGGS
    ).toArrow()
    want = windowstore.session_windows(table, key="user_id", time="ts", gap="30m", aggs=AGGS)
    assert want.num_rows > 1000  # many sessions, most with several events
    assert_same_windows(got, want, BY)


def test_integer_times_and_the_output_keeps_their_type(spark: SparkSession) -> None:
    table = events(5_000)
    table = table.set_column(1, "ts", table["ts"].cast(pa.int64()))
    df = to_spark(spark, table)
    result = session_windows(df, key="user_id", time="ts", gap=600_000, aggs=[agg.count()])
    assert dict(result.dtypes)["session_start"] == "bigint"
    want = windowstore.session_windows(
        table, key="user_id", time="ts", gap=600_000, aggs=[agg.count()]
    )
    assert_same_windows(result.toArrow(), want, BY)


def test_timestamp_ntz_comes_back_as_timestamp_ntz(spark: SparkSession) -> None:
    table = events(3_000)
    table = table.set_column(1, "ts", table["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us")))
    df = to_spark(spark, table).withColumn("ts", F.col("ts").cast("timestamp_ntz"))
    result = session_windows(df, key="user_id", time="ts", gap="10m", aggs=[agg.count()])
    assert dict(result.dtypes)["session_end"] == "timestamp_ntz"
    want = windowstore.session_windows(
        table, key="user_id", time="ts", gap="10m", aggs=[agg.count()]
    )
    assert_same_windows(result.toArrow(), want, BY)


def test_dynamic_gaps_equal_the_complete_engine(spark: SparkSession) -> None:
    table = events(10_000)
    rng = np.random.default_rng(11)
    gaps = rng.integers(60_000, 3_000_000, table.num_rows)
    table = table.append_column("gap", pa.array(gaps, pa.int64()))
    kw: dict[str, Any] = dict(key="user_id", time="ts", gap_column="gap", max_gap="40m", aggs=AGGS)
    got = session_windows(to_spark(spark, table), **kw).toArrow()
    want = windowstore.session_windows(table, **kw)
    assert_same_windows(got, want, BY)


def test_multi_column_keys(spark: SparkSession) -> None:
    table = events(8_000)
    device = pa.array(np.random.default_rng(5).integers(0, 3, table.num_rows), pa.int32())
    table = table.append_column("device", device)
    kw: dict[str, Any] = dict(key=["user_id", "device"], time="ts", gap="15m", aggs=AGGS)
    got = session_windows(to_spark(spark, table), **kw).toArrow()
    want = windowstore.session_windows(table, **kw)
    assert got.column_names[:2] == ["user_id", "device"]
    assert_same_windows(got, want, ["user_id", "device", "session_start"])


def test_same_sessions_as_spark_session_window(spark: SparkSession) -> None:
    table = with_timestamps(events())
    df = to_spark(spark, table)
    ours = session_windows(df, key="user_id", time="ts", gap="30 minutes", aggs=AMOUNT_AGGS)
    native = df.groupBy("user_id", F.session_window("ts", "30 minutes")).agg(
        F.count("*").alias("count"),
        F.sum("amount").alias("sum_amount"),
        F.min("amount").alias("min_amount"),
        F.max("amount").alias("max_amount"),
    )
    spark_sessions = native.select(
        "user_id",
        F.col("session_window.start").alias("session_start"),
        # Spark's end is the reach (last event + gap, exclusive); ours is the last event.
        (F.col("session_window.end") - F.expr("INTERVAL 30 MINUTES")).alias("session_end"),
        "count",
        "sum_amount",
        "min_amount",
        "max_amount",
    )
    got, want = ours.toArrow(), spark_sessions.toArrow()
    assert got.num_rows > 1000
    assert_same_windows(got, want, BY)


def test_empty_input_gives_no_sessions_with_the_schema(spark: SparkSession) -> None:
    table = with_timestamps(events(0))
    result = session_windows(
        spark.createDataFrame(table), key="user_id", time="ts", gap="1m", aggs=AGGS
    )
    assert result.count() == 0
    assert result.columns == ["user_id", "session_start", "session_end"] + [
        a.output_name for a in AGGS
    ]


def test_a_partition_with_one_key_only(spark: SparkSession) -> None:
    ts = np.arange(0, 100_000, 1_000, dtype=np.int64)
    table = pa.table({"user_id": ["solo"] * len(ts), "ts": ts, "amount": np.ones(len(ts))})
    df = spark.createDataFrame(table).coalesce(1)
    got = session_windows(
        df, key="user_id", time="ts", gap=1_000, aggs=[agg.count(), agg.sum("amount")]
    )
    rows = got.collect()
    assert [(r.session_start, r.session_end, r["count"]) for r in rows] == [(0, 99_000, 100)]


def test_skewed_keys(spark: SparkSession) -> None:
    t = clickstream(30_000, users=50, seed=9, zipf=2.5)  # the top user holds most events
    counts = pc.value_counts(t["user_id"]).field("counts").to_numpy()
    assert counts.max() > 0.5 * t.num_rows
    kw: dict[str, Any] = dict(
        key="user_id", time="ts", gap="5m", aggs=[agg.count(), agg.max("amount")]
    )
    got = session_windows(to_spark(spark, t, partitions=4), **kw).toArrow()
    want = windowstore.session_windows(t, **kw)
    assert_same_windows(got, want, BY)
