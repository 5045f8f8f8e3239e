"""A small stream at Spark's defaults: windowstore.spark.session_windows beside Spark's native
streaming session_window, both timed in one run.

The stream: 9 records of 3 keys in 3 Parquet files, read one file per micro-batch
(maxFilesPerTrigger=1); the third file is 10 minutes later and closes the first two files'
sessions. The session is Spark's defaults but for what a run needs (``local[2]``, no UI, UTC):
``spark.sql.shuffle.partitions`` unset (200) before each query is defined, the default state
store provider. (windowstore's adapter sets a local session left at 200 to its default
parallelism when it defines a query: Spark's Python stateful operators run a Python task per state
partition in every micro-batch.)

Contenders, both in final/append mode with a 30 s watermark delay and a gap of 1 minute, count and
sum of x, into a Parquet sink, availableNow (every file, then the watermark's no-data
micro-batches), taking turns --repeat times, each on a fresh checkpoint:
- native: withWatermark(ts, "30 seconds").groupBy(session_window(ts, "1 minute"), k).agg(...)
- windowstore: windowstore.spark.session_windows(df, key=k, time=ts, gap="1m", grace="30s")
  (``--buckets`` to try another bucket count than the default)

Before timing, both run once and their sessions are checked equal (Spark's session end is
windowstore's + gap). Figures: each query's wall time from start to termination; the median of
each contender and the ratio windowstore / native (<= 1.5 is the target).

Run: python benches/bench_small_stream.py [--repeat 3] [--buckets N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from harness import scratch, tests_module
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from windowstore import agg
from windowstore.spark import session_windows

#: The Spark tests' streams (tests/spark/streams.py): the queries run to their sink as theirs do.
streams = tests_module("spark.streams")

BASE = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
#: (key, seconds after BASE, x) per micro-batch.
BATCHES = [
    [("a", 0, 1), ("b", 5, 2), ("c", 10, 3)],
    [("a", 40, 4), ("b", 90, 5), ("c", 20, 6)],
    [("a", 600, 7), ("b", 610, 8), ("c", 620, 9)],
]


def write_stream(folder: Path) -> None:
    """The micro-batches' files, dated in order (Spark's file source goes by modification time)."""
    folder.mkdir(parents=True)
    for i, rows in enumerate(BATCHES):
        table = pa.table(
            {
                "k": [k for k, _, _ in rows],
                "ts": pa.array(
                    [BASE + timedelta(seconds=s) for _, s, _ in rows], pa.timestamp("us", "UTC")
                ),
                "x": pa.array([x for _, _, x in rows], pa.int64()),
            }
        )
        path = folder / f"part-{i:03d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (86_400 + i, 86_400 + i))


def native(df: DataFrame, buckets: int | None) -> DataFrame:
    del buckets
    return (
        df.withWatermark("ts", "30 seconds")
        .groupBy(F.session_window("ts", "1 minute"), "k")
        .agg(F.count("*").alias("count"), F.sum("x").alias("sum_x"))
        .select(
            "k",
            F.col("session_window.start").alias("session_start"),
            (F.col("session_window.end") - F.expr("INTERVAL 1 MINUTE")).alias("session_end"),
            "count",
            "sum_x",
        )
    )


def ours(df: DataFrame, buckets: int | None) -> DataFrame:
    return session_windows(
        df,
        key="k",
        time="ts",
        gap="1m",
        grace="30s",
        aggs=[agg.count(), agg.sum("x")],
        buckets=buckets,
    )


def run(
    spark: SparkSession, source: Path, work: Path, build: Callable[[DataFrame], DataFrame]
) -> tuple[float, str | None, list[tuple[object, ...]]]:
    """One query over the whole stream: its wall time, its state partitions and its sessions,
    sorted."""
    shutil.rmtree(work, ignore_errors=True)
    # Spark's default for each query: windowstore's adapter sets the local session's count (to
    # its default parallelism) when it defines a query on a session left at the default.
    spark.conf.unset("spark.sql.shuffle.partitions")
    df = spark.readStream.schema("k string, ts timestamp, x long").option("maxFilesPerTrigger", 1)
    windows = build(df.parquet(str(source)))
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    started = time.perf_counter()
    streams.to_parquet(windows, work / "out", work / "ck", availableNow=True).awaitTermination()
    elapsed = time.perf_counter() - started
    rows = spark.read.parquet(str(work / "out")).collect()
    return elapsed, partitions, sorted(tuple(r) for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--buckets", type=int, default=None, help="windowstore's buckets=")
    a = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("windowstore-bench-small-stream")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with spark, scratch("ws-bench-small-") as root:
        write_stream(root / "in")
        contenders = {
            "native": lambda df: native(df, a.buckets),
            "windowstore": lambda df: ours(df, a.buckets),
        }
        results = {}
        used = {}
        for name, build in contenders.items():
            _, used[name], results[name] = run(spark, root / "in", root / f"check-{name}", build)
        if results["native"] != results["windowstore"] or not results["native"]:
            sys.exit(f"the sessions differ: {results}")
        print(
            f"{sum(map(len, BATCHES))} records in {len(BATCHES)} micro-batches, "
            f"{len(results['native'])} sessions out (equal); state partitions: "
            + ", ".join(f"{name} {n}" for name, n in used.items())
            + f"; buckets={'default' if a.buckets is None else a.buckets}"
        )
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for i in range(a.repeat):
            for name, build in contenders.items():
                elapsed, _, _ = run(spark, root / "in", root / f"ck-{name}", build)
                times[name].append(elapsed)
                print(f"  run {i + 1} {name:12s} {elapsed:6.1f} s")
        med = {name: statistics.median(t) for name, t in times.items()}
        for name, m in med.items():
            print(f"{name:12s} median {m:6.1f} s")
        print(f"ratio windowstore / native: {med['windowstore'] / med['native']:.2f}")


if __name__ == "__main__":
    main()
