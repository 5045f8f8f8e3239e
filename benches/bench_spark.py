"""windowstore.spark beside Spark's native windows, on local[2], in the same run.

Data: --events clickstream events (windowstore.clickstream: Zipf users, bursts separated by idle
gaps) written once as Parquet (8 files) and read by every contender, so each run pays the same
scan. Each contender is timed as a full job writing to Spark's `noop` sink, --repeat times; the
medians are printed with the ratio windowstore / native. Results are checked equal first.

Sessions (gap 30 min; count, sum, min, max of amount):
- native: groupBy(user_id, session_window(ts, "30 minutes")).agg(...);
- windowstore (what windowstore.spark.session_windows does): partial sessions per input
  partition, shuffle of the partials by key, merge (design c);
- with --alternatives also (b) repartition(user_id) + one mapInArrow call of the complete engine
  per partition, and (a) groupBy(user_id).applyInArrow with the engine per user, and design (c)
  at several spark.sql.execution.arrow.maxRecordsPerBatch values.

Sliding (time difference 5 min, integer ms times; count, sum, min, max):
- native: the left windows only, as rangeBetween(-D, 0) aggregates over a window by user;
- windowstore.spark.sliding_windows: Kafka's full window set (left and right windows).

Peak memory: the JVM (driver and executor are one process in local mode) and the Python
workers, as VmHWM from /proc, reset before each run by writing 5 to /proc/PID/clear_refs.

Run: python benches/bench_spark.py [--events 10000000] [--users 100000] [--repeat 3]
     [--alternatives] [--batch 100000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

from pyspark.sql import DataFrame, SparkSession, Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import windowstore  # noqa: E402
from windowstore import agg  # noqa: E402
from windowstore.clickstream import clickstream  # noqa: E402
from windowstore.spark import session_windows, sliding_windows  # noqa: E402

GAP = "30 minutes"
GAP_US = 30 * 60 * 1_000_000
D_MS = 5 * 60 * 1000
AGGS = [agg.count(), agg.sum("amount"), agg.min("amount"), agg.max("amount")]
SESSION_COLUMNS = ["user_id", "session_start", "session_end", "count", "sum_amount"]
SESSION_COLUMNS += ["min_amount", "max_amount"]


# ----------------------------------------------------------------------------- memory


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        children = [p for p, pp in parents.items() if pp == pid]
        out += children
        frontier += children
    return out


def _hwm(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Peaks:
    """Peak RSS of the Spark JVM and of its Python workers (VmHWM, reset per run)."""

    def __init__(self, spark: SparkSession) -> None:
        self.jvm = int(spark.sparkContext._gateway.proc.pid)  # type: ignore[union-attr]

    def reset(self) -> None:
        for pid in [self.jvm, *_descendants(self.jvm)]:
            try:
                Path(f"/proc/{pid}/clear_refs").write_text("5")
            except OSError:
                pass

    def read(self) -> tuple[int, int]:
        """(JVM peak, largest Python worker peak) in bytes since the last reset."""
        workers = [
            p for p in _descendants(self.jvm) if "python" in Path(f"/proc/{p}/comm").read_text()
        ]
        return _hwm(self.jvm), max((_hwm(p) for p in workers), default=0)


# ----------------------------------------------------------------------------- contenders


def native_sessions(df: DataFrame) -> DataFrame:
    return df.groupBy("user_id", F.session_window("ts", GAP)).agg(
        F.count("*").alias("count"),
        F.sum("amount").alias("sum_amount"),
        F.min("amount").alias("min_amount"),
        F.max("amount").alias("max_amount"),
    )


def ours_sessions(df: DataFrame) -> DataFrame:
    return session_windows(df, key="user_id", time="ts", gap=GAP, aggs=AGGS)


def _complete(batches):  # type: ignore[no-untyped-def]
    parts = [b for b in batches if b.num_rows]
    if parts:
        table = pa.Table.from_batches(parts)
        yield from windowstore.session_windows(
            table, key="user_id", time="ts", gap=GAP, aggs=AGGS
        ).to_batches()


def _per_group(table: pa.Table) -> pa.Table:
    return windowstore.session_windows(table, key="user_id", time="ts", gap=GAP, aggs=AGGS)


def whole_partition_sessions(df: DataFrame, schema: str) -> DataFrame:
    """(b): shuffle every event by key, then the complete engine once per partition."""
    return df.repartition("user_id").mapInArrow(_complete, schema)


def grouped_sessions(df: DataFrame, schema: str) -> DataFrame:
    """(a): shuffle every event by key, then the engine once per key (applyInArrow)."""
    return df.groupBy("user_id").applyInArrow(_per_group, schema)


def native_sliding(df: DataFrame) -> DataFrame:
    frame = Window.partitionBy("user_id").orderBy("ts_ms").rangeBetween(-D_MS, 0)
    return df.select(
        "user_id",
        "ts_ms",
        F.count("*").over(frame).alias("count"),
        F.sum("amount").over(frame).alias("sum_amount"),
        F.min("amount").over(frame).alias("min_amount"),
        F.max("amount").over(frame).alias("max_amount"),
    )


def ours_sliding(df: DataFrame) -> DataFrame:
    return sliding_windows(df, key="user_id", time="ts_ms", time_difference=D_MS, aggs=AGGS)


# ----------------------------------------------------------------------------- checks


def canonical(t: pa.Table, by: list[str]) -> pa.Table:
    """Sorted, every field nullable."""
    t = t.sort_by([(c, "ascending") for c in by])
    return pa.table({c: t[c].combine_chunks() for c in t.column_names})


def same(got: pa.Table, want: pa.Table) -> bool:
    """Equal tables; sums up to relative 1e-9 (merges add floats in another order)."""
    if got.column_names != want.column_names or got.num_rows != want.num_rows:
        return False
    for name in got.column_names:
        if name == "sum_amount":
            if not np.allclose(got[name].to_numpy(), want[name].to_numpy(), rtol=1e-9, atol=0):
                return False
        elif not got[name].equals(want[name]):
            return False
    return True


def check_sessions(ours: DataFrame, native: DataFrame) -> int:
    got = canonical(ours.toArrow().select(SESSION_COLUMNS), ["user_id", "session_start"])
    spark_sessions = native.select(
        "user_id",
        F.col("session_window.start").alias("session_start"),
        (F.col("session_window.end") - F.expr(f"INTERVAL {GAP}")).alias("session_end"),
        "count",
        "sum_amount",
        "min_amount",
        "max_amount",
    )
    want = canonical(spark_sessions.toArrow(), ["user_id", "session_start"])
    if not same(got, want):
        raise SystemExit(f"session results differ: {got.num_rows} vs {want.num_rows} rows")
    return got.num_rows


def check_sliding(ours: DataFrame, native: DataFrame) -> tuple[int, int]:
    windows = ours.toArrow()
    left = windows.filter(pc.equal(windows["window_end"], windows["window_time"]))
    left = left.select(["user_id", "window_end", "count", "sum_amount", "min_amount", "max_amount"])
    left = left.rename_columns(
        ["user_id", "ts_ms", "count", "sum_amount", "min_amount", "max_amount"]
    )
    got = canonical(left, ["user_id", "ts_ms"])
    want = canonical(native.toArrow(), ["user_id", "ts_ms"])
    if not same(got, want):
        raise SystemExit(f"sliding left windows differ: {got.num_rows} vs {want.num_rows} rows")
    return windows.num_rows, want.num_rows


# ----------------------------------------------------------------------------- timing


def timed(
    name: str, make: Callable[[], DataFrame], repeat: int, peaks: Peaks
) -> tuple[float, int, int]:
    times, jvm, worker = [], 0, 0
    for _ in range(repeat):
        peaks.reset()
        start = time.perf_counter()
        make().write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - start)
        j, w = peaks.read()
        jvm, worker = max(jvm, j), max(worker, w)
    runs = " ".join(f"{t:.2f}" for t in times)
    print(
        f"  {name:<44} median {statistics.median(times):6.2f}s  (runs {runs})  "
        f"peak JVM {jvm / 2**30:.2f} GiB, Python worker {worker / 2**20:.0f} MiB",
        flush=True,
    )
    return statistics.median(times), jvm, worker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch", type=int, default=100_000, help="maxRecordsPerBatch")
    parser.add_argument("--alternatives", action="store_true", help="also designs (a), (b)")
    parser.add_argument("--no-sliding", action="store_true")
    args = parser.parse_args()

    table = clickstream(args.events, users=args.users, seed=7)
    ts_us = table["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us", "UTC"))
    table = table.append_column("ts_ms", table["ts"]).set_column(1, "ts", ts_us)
    with tempfile.TemporaryDirectory() as tmp:
        rows = -(-table.num_rows // 8)
        for i in range(8):
            pq.write_table(table.slice(i * rows, rows), f"{tmp}/part-{i}.parquet")
        del table
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "6g")
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.batch))
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        peaks = Peaks(spark)
        df = spark.read.parquet(tmp)
        sessions_df = df.select("user_id", "ts", "amount")
        print(
            f"{args.events:,} events, {args.users:,} users, local[2], "
            f"{df.rdd.getNumPartitions()} input partitions, maxRecordsPerBatch {args.batch:,}"
        )

        sessions = check_sessions(ours_sessions(sessions_df), native_sessions(sessions_df))
        print(f"sessions (gap {GAP}): {sessions:,} sessions, equal to Spark's session_window")
        native, _, _ = timed(
            "native session_window", lambda: native_sessions(sessions_df), args.repeat, peaks
        )
        ours, _, _ = timed(
            "windowstore (c: partials, shuffle, merge)",
            lambda: ours_sessions(sessions_df),
            args.repeat,
            peaks,
        )
        print(f"  ratio windowstore / native: {ours / native:.2f}")
        if args.alternatives:
            schema = ours_sessions(sessions_df).schema.simpleString()
            schema = schema[len("struct<") : -1].replace(":", " ")
            for name, make in [
                ("(b) repartition + complete engine per partition", whole_partition_sessions),
                ("(a) groupBy.applyInArrow, engine per key", grouped_sessions),
            ]:
                check_sessions(make(sessions_df, schema), native_sessions(sessions_df))
                t, _, _ = timed(name, lambda m=make: m(sessions_df, schema), args.repeat, peaks)
                print(f"  ratio {name[:3]} / native: {t / native:.2f}")
            for batch in (10_000, 1_000_000):
                spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch))
                t, _, _ = timed(
                    f"(c) with maxRecordsPerBatch {batch:,}",
                    lambda: ours_sessions(sessions_df),
                    args.repeat,
                    peaks,
                )
                print(f"  ratio / native: {t / native:.2f}")
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.batch))

        if not args.no_sliding:
            sliding_df = df.select("user_id", "ts_ms", "amount")
            full, left = check_sliding(ours_sliding(sliding_df), native_sliding(sliding_df))
            print(
                f"sliding (D = {D_MS // 60000} min): {full:,} windows (full set) from windowstore, "
                f"{left:,} left windows from Spark, left windows equal"
            )
            native, _, _ = timed(
                "native rangeBetween(-D, 0), left windows",
                lambda: native_sliding(sliding_df),
                args.repeat,
                peaks,
            )
            ours, _, _ = timed(
                "windowstore sliding_windows, full set",
                lambda: ours_sliding(sliding_df),
                args.repeat,
                peaks,
            )
            print(f"  ratio windowstore / native: {ours / native:.2f}")
        spark.stop()


if __name__ == "__main__":
    main()
