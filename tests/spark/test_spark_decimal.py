"""Decimal (money) columns through windowstore.spark: values and types as Spark's own aggregates."""

from __future__ import annotations

import os
import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType

from windowstore import agg
from windowstore.spark import session_windows

from .compare import assert_same_windows

pytestmark = pytest.mark.spark

TYPE = pa.decimal128(10, 2)
SENTINEL = "~end"
AGGS = [
    agg.count(),
    agg.sum("amount"),
    agg.mean("amount"),
    agg.min("amount"),
    agg.max("amount"),
    agg.first("amount"),
    agg.last("amount"),
    agg.count_distinct("amount"),
    agg.collect("amount"),
]


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


def test_a_decimal_stream_equals_the_batch_adapter(spark: SparkSession, tmp_path: Path) -> None:
    """Micro-batches of a decimal(10,2) column, out of order within the grace, through the
    streaming state (stored, merged, checkpointed between batches): the batch windows."""
    rng = random.Random(11)
    base = datetime(2024, 1, 1, tzinfo=timezone.utc)
    schema = pa.schema([("k", pa.string()), ("ts", pa.timestamp("us", "UTC")), ("amount", TYPE)])
    frames, t = [], 0
    for _ in range(4):
        rows = []
        for _ in range(30):
            t += rng.randint(0, 3)
            cents = rng.choice([None, rng.randint(-99_999, 99_999), 99_999_999_99])
            amount = None if cents is None else Decimal(cents).scaleb(-2)
            when = base + timedelta(seconds=t - rng.randint(0, 10))
            rows.append((rng.choice(["a", "b", "c"]), when, amount))
        frames.append(rows)
    frames.append([(SENTINEL, base + timedelta(days=10), None)])
    folder = tmp_path / "source"
    folder.mkdir()
    for i, rows in enumerate(frames):
        columns = list(zip(*rows, strict=True))
        table = pa.table(dict(zip(schema.names, columns, strict=True)), schema=schema)
        pq.write_table(table, tmp_path / f".{i}.parquet")
        os.utime(tmp_path / f".{i}.parquet", (86_400 + i, 86_400 + i))
        (tmp_path / f".{i}.parquet").rename(folder / f"part-{i:03d}.parquet")
    spark_schema = "k string, ts timestamp, amount decimal(10,2)"
    stream = spark.readStream.schema(spark_schema).option("maxFilesPerTrigger", 1)
    windows = session_windows(
        stream.parquet(str(folder)), key="k", time="ts", gap="5s", grace="20s", aggs=AGGS
    )
    query = (
        windows.writeStream.format("memory")
        .queryName("ws_decimal")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    got = spark.table("ws_decimal").filter(f"k != '{SENTINEL}'").toArrow()
    every = [r for rows in frames[:-1] for r in rows]
    batch = spark.createDataFrame(every, spark_schema)
    want = session_windows(batch, key="k", time="ts", gap="5s", aggs=AGGS).toArrow()
    assert got.schema.field("sum_amount").type == pa.decimal128(20, 2)
    assert got.schema.field("mean_amount").type == pa.decimal128(14, 6)
    assert want.num_rows > 5
    assert_same_windows(got.select(want.column_names), want, ["k", "session_start"])
