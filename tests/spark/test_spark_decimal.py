"""Decimal (money) columns through windowstore.spark: values and types as Spark's own aggregates."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType

from windowstore import agg
from windowstore.spark import session_windows

pytestmark = pytest.mark.spark


def test_decimal_sessions_equal_sparks_sum_and_avg(spark: SparkSession) -> None:
    rng = random.Random(7)
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    rows = []
    for user in ("u1", "u2", "u3"):
        t = start
        for _ in range(40):
            t += timedelta(minutes=rng.choice([1, 5, 20, 45, 90]))
            cents = rng.choice([None, rng.randint(-99_999, 99_999), 99_999_999_99])
            amount = None if cents is None else Decimal(cents).scaleb(-2)
            rows.append((user, t, amount))
    df = spark.createDataFrame(rows, "user_id string, ts timestamp, amount decimal(10,2)")
    aggs = [agg.sum("amount"), agg.mean("amount"), agg.min("amount"), agg.max("amount")]
    ours = session_windows(df, key="user_id", time="ts", gap="30m", aggs=aggs)
    theirs = df.groupBy("user_id", F.session_window("ts", "30 minutes").alias("w")).agg(
        F.sum("amount").alias("sum_amount"),
        F.avg("amount").alias("mean_amount"),
        F.min("amount").alias("min_amount"),
        F.max("amount").alias("max_amount"),
    )
    types = {f.name: f.dataType for f in ours.schema.fields}
    assert types["sum_amount"] == DecimalType(20, 2)
    assert types["mean_amount"] == DecimalType(14, 6)
    assert types["min_amount"] == types["max_amount"] == DecimalType(10, 2)
    for f in theirs.schema.fields:
        if f.name in types:
            assert types[f.name] == f.dataType, f.name
    names = ["sum_amount", "mean_amount", "min_amount", "max_amount"]
    got = {(r["user_id"], r["session_start"]): tuple(r[n] for n in names) for r in ours.collect()}
    want = {(r["user_id"], r["w"]["start"]): tuple(r[n] for n in names) for r in theirs.collect()}
    assert len(want) > 10
    assert got == want
