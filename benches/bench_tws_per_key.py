"""What one state row per key would cost: Spark's transformWithStateInPandas, per key and
micro-batch, with the least a windowing processor does (read a value state, write it back, set
an event-time timer), and nothing else.

This is why windowstore's streaming adapter keeps one state row per bucket of keys: every state
call is a round trip from the Python worker to the JVM.

Data: --batches files of --keys events, one per key, read one file per micro-batch, RocksDB state
store (which transformWithState needs), local[2].

--extra-variables N[,N...]: what a registered state variable costs when nothing is written to it
(windowstore's log layout registers two such, to read checkpoints of the whole layout and of
earlier versions). The processor registers N more value states and never touches them; each N is
a query of its own, the Ns taking turns --repeat times, and the figure is the median micro-batch
(the first two of each query excluded as warm-up). Use --keys 8 --partitions 8 for windowstore's
buckets.

Run: python benches/bench_tws_per_key.py [--keys 20000] [--batches 3]
     python benches/bench_tws_per_key.py --extra-variables 0,2,8 --keys 8 --partitions 8
         --batches 12 [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from harness import ROCKSDB, scratch, tests_module
from pyspark.sql import SparkSession
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType

from windowstore.spark import spark_session


class PerKey(StatefulProcessor):
    """Reads the key's state, writes 40 bytes back, sets a timer: one key, one call."""

    def __init__(self, extra_variables: int = 0) -> None:
        self.extra_variables = extra_variables

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        schema = StructType([StructField("v", BinaryType())])
        self.state = handle.getValueState("s", schema)
        # Registered, never read or written.
        for i in range(self.extra_variables):
            handle.getValueState(f"unused_{i}", schema)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Any:
        n = sum(len(r) for r in rows)
        self.state.get()
        self.state.update((b"x" * 40,))
        self.handle.registerTimer(timerValues.getCurrentWatermarkInMs() + 10**9)
        yield pd.DataFrame({"k": [key[0]], "n": [n]})

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
        return iter([])

    def close(self) -> None:
        pass


def query_seconds(
    spark: SparkSession, root: Path, a: argparse.Namespace, extra_variables: int
) -> list[float]:
    """One query over the --batches files: each micro-batch's seconds (those with input)."""
    shutil.rmtree(root / "ck", ignore_errors=True)
    df = (
        spark.readStream.schema("k long, ts timestamp")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(root / "in"))
        .withWatermark("ts", "10 seconds")
    )
    out = df.groupBy("k").transformWithStateInPandas(
        PerKey(extra_variables), "k long, n long", "Append", "EventTime"
    )
    query = tests_module("spark.streams").to_noop(out, root / "ck")
    return [
        p["durationMs"]["triggerExecution"] / 1000
        for p in query.recentProgress
        if p["numInputRows"] > 0
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--extra-variables", help="comma-separated counts (see above)")
    parser.add_argument("--repeat", type=int, default=3, help="with --extra-variables")
    a = parser.parse_args()
    spark = spark_session(
        "local[2]",
        {
            "spark.sql.shuffle.partitions": str(a.partitions),
            "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
            # Spark's default, as the figures of docs/benchmarks.md were measured.
            "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
        },
        app="windowstore-bench-tws",
    )
    with spark, scratch("ws-bench-tws-") as root:
        (root / "in").mkdir()
        for i in range(a.batches):
            ts = pd.to_datetime(np.full(a.keys, 1000 + i), unit="s").astype("datetime64[us]")
            path = root / "in" / f"b{i:03d}.parquet"
            pd.DataFrame({"k": np.arange(a.keys), "ts": ts}).to_parquet(path)
            os.utime(path, (86_400 + i, 86_400 + i))
        if a.extra_variables is None:
            seconds = query_seconds(spark, root, a, 0)
            per_key = statistics.median(seconds) / a.keys
            print(
                f"{a.keys:,} keys per micro-batch: median {statistics.median(seconds):.2f} s a "
                f"micro-batch ({', '.join(f'{s:.2f}' for s in seconds)}), "
                f"{per_key * 1000:.2f} ms per key; at 100,000 keys: {per_key * 100_000:.0f} s"
            )
            return
        counts = [int(n) for n in a.extra_variables.split(",")]
        runs: dict[int, list[float]] = {n: [] for n in counts}
        for r in range(a.repeat):
            for n in counts:
                seconds = query_seconds(spark, root, a, n)[2:]
                runs[n].append(statistics.median(seconds))
                print(f"  run {r + 1}, {n} unused variables: {runs[n][-1] * 1000:.0f} ms")
        base = statistics.median(runs[counts[0]])
        print(f"{a.keys} keys, {a.partitions} partitions, median micro-batch over {a.repeat} runs:")
        for n in counts:
            m = statistics.median(runs[n])
            slope = (
                f", {(m - base) / (n - counts[0]) * 1000:+.1f} ms a variable"
                if n != counts[0]
                else ""
            )
            print(f"  {n} unused variables: {m * 1000:.0f} ms{slope}")


if __name__ == "__main__":
    main()
