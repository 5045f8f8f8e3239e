"""windowstore.spark.sliding_windows on real Spark: the complete-data engine's full window set,
and Spark's own rangeBetween(-D, 0) aggregates for the left windows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

import windowstore
from windowstore import InvalidWindowSpec, SchemaError, agg
from windowstore.clickstream import clickstream
from windowstore.spark import sliding_windows

from .compare import assert_same_windows
from .conftest import AMOUNT_AGGS, to_spark

pytestmark = pytest.mark.spark

AGGS = [*AMOUNT_AGGS, agg.first("amount"), agg.last("amount"), agg.collect("amount", max_size=4)]
BY = ["user_id", "window_start"]


def events(n: int = 8_000, users: int = 100, seed: int = 4) -> pa.Table:
    return clickstream(n, users=users, seed=seed)


def test_equals_the_complete_engine_with_integer_times(spark: SparkSession) -> None:
    table = events()
    kw: dict[str, Any] = dict(key="user_id", time="ts", time_difference="2m", aggs=AGGS)
    got = sliding_windows(to_spark(spark, table), **kw)
    assert dict(got.dtypes)["window_time"] == "bigint"
    want = windowstore.sliding_windows(table, **kw)
    assert want.num_rows > table.num_rows  # left windows and right windows
    assert_same_windows(got.toArrow(), want, BY)


def test_equals_the_complete_engine_with_timestamps_and_two_keys(spark: SparkSession) -> None:
    table = events(6_000)
    ts = table["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us", "UTC"))
    device = pa.array(np.random.default_rng(2).integers(0, 2, table.num_rows), pa.int64())
    table = table.set_column(1, "ts", ts).append_column("device", device)
    kw: dict[str, Any] = dict(
        key=["user_id", "device"], time="ts", time_difference="90s", aggs=AGGS
    )
    got = sliding_windows(to_spark(spark, table), **kw)
    assert dict(got.dtypes)["window_start"] == "timestamp"
    want = windowstore.sliding_windows(table, **kw)
    assert_same_windows(got.toArrow(), want, ["user_id", "device", "window_start"])


def test_left_windows_match_spark_range_between(spark: SparkSession) -> None:
    table = events(5_000)
    d = 120_000
    df = to_spark(spark, table)
    ours = sliding_windows(
        df, key="user_id", time="ts", time_difference=d, aggs=[agg.count(), agg.sum("amount")]
    )
    # A left window [t - D, t] ends at a record's time: it is the one of Spark's range frame.
    left = ours.where("window_end = window_time").select(
        "user_id",
        F.col("window_end").alias("ts"),
        F.col("count"),
        F.col("sum_amount"),
    )
    frame = Window.partitionBy("user_id").orderBy("ts").rangeBetween(-d, 0)
    native = df.select(
        "user_id",
        "ts",
        F.count("*").over(frame).alias("count"),
        F.sum("amount").over(frame).alias("sum_amount"),
    ).dropDuplicates(["user_id", "ts"])
    got, want = left.toArrow(), native.toArrow()
    assert got.num_rows == table.num_rows  # times are distinct per user: one left window each
    assert_same_windows(got, want, ["user_id", "ts"])


def test_empty_input(spark: SparkSession) -> None:
    df = spark.createDataFrame(events(0))
    result = sliding_windows(df, key="user_id", time="ts", time_difference=10, aggs=AGGS)
    assert result.count() == 0
    assert result.columns[:4] == ["user_id", "window_start", "window_end", "window_time"]


def test_rejected_rows_and_bad_input(spark: SparkSession) -> None:
    df = spark.createDataFrame(
        [("a", 0, 1.0), (None, 1, 1.0), ("a", None, 2.0), ("a", 5, 3.0)],
        "user string, ts long, amount double",
    )
    kw: dict[str, Any] = dict(key="user", time="ts", time_difference=10, aggs=[agg.count()])
    windows, rejected = sliding_windows(df, **kw, on_invalid="drop", return_rejected=True)
    want, want_rejected = windowstore.sliding_windows(
        df.toArrow(), **kw, on_invalid="drop", return_rejected=True
    )
    assert_same_windows(windows.toArrow(), want, ["user", "window_start"])
    assert_same_windows(rejected.toArrow(), want_rejected, ["ts"])
    assert sorted(r.reason for r in rejected.collect()) == ["null_key", "null_time"]
    assert sum(r["count"] for r in windows.where("window_end = window_time").collect()) == 3
    with pytest.raises(SchemaError) as schema_error:
        sliding_windows(df, key="user", time="amount", time_difference=10)
    assert schema_error.value.column == "amount"
    with pytest.raises(InvalidWindowSpec) as spec_error:
        sliding_windows(df, key="user", time="ts", time_difference="ten seconds-ish")
    assert spec_error.value.parameter == "time_difference"
