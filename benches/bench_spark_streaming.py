"""Streaming session windows: windowstore.spark beside Spark's native streaming session_window.

The stream: --batches Parquet files of --events events each (--keys keys drawn uniformly), read
one file per micro-batch (maxFilesPerTrigger=1), then one file with a far-future record that
closes every session. Event time advances 60 s per file; each event is up to 30 s earlier than
its file's clock (out of order within the 30 s grace/watermark delay).

Contenders, both in final/append mode with a 30 s watermark delay, gap 1 minute, count, sum, min
and max of x, into Spark's `noop` sink, taking turns --repeat times:
- native: withWatermark(ts, "30 seconds").groupBy(session_window(ts, "1 minute"), k).agg(...)
- windowstore: windowstore.spark.session_windows(df, key=k, time=ts, gap="1m", grace="30s")

Figures per run, from the query's progress: the median per-micro-batch latency (trigger
execution, over the micro-batches with data, the first one excluded as warm-up) and the sustained
throughput (events of those micro-batches / their summed latency); then medians over the runs and
the ratio of throughputs windowstore / native (>= 1.0: windowstore is no slower). Output rows of
both are printed: the same sessions should come out.

Run: python benches/bench_spark_streaming.py [--events 200000] [--keys 100000] [--batches 12]
     [--repeat 3] [--provider default|rocksdb] [--partitions 8] [--arrow-batch 10000]
     [--floor]

--floor adds a third contender: windowstore's plan (watermark, buckets, applyInPandasWithState)
with a Python function that only counts its rows: what Spark's Python stateful operator costs
without the engine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from windowstore import agg
from windowstore.spark import session_windows

BASE_MS = 1_700_000_000_000
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def write_stream(folder: Path, batches: int, events: int, keys: int, seed: int = 1) -> None:
    """The stream's files, dated in order (Spark's file source goes by modification time)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    for i in range(batches + 1):
        if i < batches:
            clock = BASE_MS + (i + 1) * 60_000
            t = clock - rng.integers(0, 60_000, events) // 2 - rng.integers(0, 30_000, events)
            k = rng.integers(0, keys, events)
            x = rng.integers(0, 1000, events)
        else:  # the sentinel: closes every session of both contenders
            t, k, x = np.array([BASE_MS + 10 * 86_400_000]), np.array([-1]), np.array([0])
        table = pa.table(
            {
                "k": pa.array(k, pa.int64()),
                "ts": pa.array(t, pa.int64()).cast(pa.timestamp("ms", "UTC")),
                "x": pa.array(x, pa.int64()),
            }
        )
        path = folder / f"part-{i:03d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (86_400 + i, 86_400 + i))


def native(df: DataFrame) -> DataFrame:
    return (
        df.withWatermark("ts", "30 seconds")
        .groupBy(F.session_window("ts", "1 minute"), "k")
        .agg(F.count("*"), F.sum("x"), F.min("x"), F.max("x"))
    )


def ours(df: DataFrame) -> DataFrame:
    aggs = [agg.count(), agg.sum("x"), agg.min("x"), agg.max("x")]
    return session_windows(df, key="k", time="ts", gap="1m", grace="30s", aggs=aggs)


def floor(df: DataFrame, buckets: int = 8) -> DataFrame:
    """What windowstore's plan costs without the engine: the same buckets, through an
    applyInPandasWithState that only counts its rows and keeps a byte of state."""

    def count(key: Any, frames: Any, state: Any) -> Any:
        rows = sum(len(f) for f in frames)
        state.update((b"x",))
        yield pd.DataFrame({"rows": [rows]})

    bucket = F.pmod(F.xxhash64("k"), F.lit(buckets)).alias("b")
    micros = F.unix_micros("ts").alias("t", metadata={"spark.watermarkDelayMs": 30_000})
    return (
        df.withWatermark("ts", "30 seconds")
        .select(bucket, micros, "k", "x")
        .groupBy("b")
        .applyInPandasWithState(
            count, "rows long", "v binary", "append", GroupStateTimeout.EventTimeTimeout
        )
    )


def run(
    spark: SparkSession, source: Path, work: Path, build: Callable[[DataFrame], DataFrame]
) -> dict[str, float]:
    """One query over the whole stream; its latency and throughput figures."""
    shutil.rmtree(work, ignore_errors=True)
    stream = (
        spark.readStream.schema("k long, ts timestamp, x long")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
    )
    query = (
        build(stream)
        .writeStream.format("noop")
        .option("checkpointLocation", str(work))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    progress: list[dict[str, Any]] = query.recentProgress
    with_data = [p for p in progress if p["numInputRows"] > 1][1:]
    latency = [p["durationMs"]["triggerExecution"] / 1000 for p in with_data]
    return {
        "batches": len(progress),
        "latency_s": statistics.median(latency),
        "events_per_s": sum(p["numInputRows"] for p in with_data) / sum(latency),
        "output_rows": sum(p["sink"].get("numOutputRows", 0) for p in progress),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="events per micro-batch")
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--provider", choices=["default", "rocksdb"], default="default")
    parser.add_argument("--partitions", type=int, default=8, help="spark.sql.shuffle.partitions")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also run the plan without the engine (default provider only)",
    )
    parser.add_argument(
        "--arrow-batch",
        type=int,
        default=10_000,
        help="spark.sql.execution.arrow.maxRecordsPerBatch",
    )
    a = parser.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("windowstore-bench-streaming")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(a.partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "6g")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(a.arrow_batch))
    )
    if a.provider == "rocksdb":
        builder = builder.config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    root = Path(tempfile.mkdtemp(prefix="ws-bench-stream-"))
    try:
        write_stream(root / "in", a.batches, a.events, a.keys)
        print(
            f"{a.batches} micro-batches x {a.events:,} events, {a.keys:,} keys, "
            f"state store: {a.provider}, {a.partitions} shuffle partitions, Arrow batches of "
            f"{a.arrow_batch:,} rows"
        )
        contenders: list[tuple[str, Callable[[DataFrame], DataFrame]]] = [
            ("native", native),
            ("windowstore", ours),
        ]
        if a.floor:
            contenders.append(("floor", lambda df: floor(df, a.partitions)))
        results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in contenders}
        for i in range(a.repeat):
            for name, build in contenders:
                r = run(spark, root / "in", root / f"ck-{name}", build)
                results[name].append(r)
                print(
                    f"  run {i + 1} {name:12s} {r['events_per_s']:>10,.0f} events/s, "
                    f"median batch {r['latency_s']:.2f} s, {r['batches']} batches, "
                    f"{r['output_rows']:,} rows out"
                )
        med = {
            name: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            for name, rs in results.items()
        }
        for name, m in med.items():
            print(
                f"{name:12s} median {m['events_per_s']:>10,.0f} events/s, "
                f"median batch latency {m['latency_s']:.2f} s"
            )
        ratio = med["windowstore"]["events_per_s"] / med["native"]["events_per_s"]
        print(f"throughput ratio windowstore / native: {ratio:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
