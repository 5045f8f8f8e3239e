"""windowstore.spark beside Spark's native windows, on local[2], in the same run.

Data: --events clickstream events (windowstore.clickstream: Zipf users, bursts separated by idle
gaps) written once as Parquet (8 files, read as 8 input partitions) and read by every contender,
so each run pays the same scan. Each contender is timed as a full job writing to Spark's `noop`
sink, the contenders taking turns, --repeat rounds; the medians are printed with the ratio
windowstore / native. Results are checked equal first.

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

--floor adds each plan without the engine, what Spark costs windowstore before any windowing:
for sessions, the events read into Python in the input's partitions with nothing returned;
for sliding, the shuffle by key, the events read into Python and as many rows returned as
windowstore returns windows, made of the input's columns.

Peak memory: the JVM (driver and executor are one process in local mode) and the Python
workers, as VmHWM from /proc, reset before each run by writing 5 to /proc/PID/clear_refs.

Run: python benches/bench_spark.py [--events 10000000] [--users 100000] [--repeat 3]
     [--alternatives] [--batch 100000] [--floor]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from harness import descendants, peak_rss
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import windowstore
from windowstore import agg
from windowstore.clickstream import clickstream
from windowstore.spark import session_windows, sliding_windows, spark_session

GAP = "30 minutes"
GAP_US = 30 * 60 * 1_000_000
D_MS = 5 * 60 * 1000
AGGS = [agg.count(), agg.sum("amount"), agg.min("amount"), agg.max("amount")]
SESSION_COLUMNS = ["user_id", "session_start", "session_end", "count", "sum_amount"]
SESSION_COLUMNS += ["min_amount", "max_amount"]


# ----------------------------------------------------------------------------- memory


class Peaks:
    """Peak RSS of the Spark JVM and of its Python workers (VmHWM, reset per run)."""

    def __init__(self, spark: SparkSession) -> None:
        self.jvm = int(spark.sparkContext._gateway.proc.pid)  # type: ignore[union-attr]

    def reset(self) -> None:
        for pid in [self.jvm, *descendants(self.jvm)]:
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")

    def read(self) -> tuple[int, int]:
        """(JVM peak, largest Python worker peak) in bytes since the last reset."""
        workers = [
            p for p in descendants(self.jvm) if "python" in Path(f"/proc/{p}/comm").read_text()
        ]
        return peak_rss(self.jvm), max((peak_rss(p) for p in workers), default=0)


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


# ----------------------------------------------------------------------------- floors


def _read_only(batches):  # type: ignore[no-untyped-def]
    """Reads every batch, returns no row: the rows' trip to a Python worker, no engine."""
    for _batch in batches:
        pass
    yield from ()


def floor_sessions(df: DataFrame) -> DataFrame:
    """The session plan's first step without the engine: the events to Python in the input's
    own partitions (where the partial sessions are computed), nothing back."""
    return df.mapInArrow(_read_only, "rows long")


def _windows_like(per_event: float, batches):  # type: ignore[no-untyped-def]
    """``per_event`` rows of the sliding windows' schema per input row, made of the input's
    columns: the windows' trip back to the JVM, no engine."""
    parts = [b for b in batches if b.num_rows]
    if not parts:
        return
    t = pa.Table.from_batches(parts)
    ts, amount = t["ts_ms"], t["amount"]
    out = pa.table(
        {
            "user_id": t["user_id"],
            "window_start": ts,
            "window_end": ts,
            "window_time": ts,
            "count": ts,
            "sum_amount": amount,
            "min_amount": amount,
            "max_amount": amount,
        }
    )
    yield from out.to_batches()
    yield from out.slice(0, round(out.num_rows * (per_event - 1))).to_batches()


def floor_sliding(df: DataFrame, per_event: float, schema: str) -> DataFrame:
    """The sliding plan without the engine: the shuffle by key, the events to Python, and as
    many rows back as windowstore returns windows (``per_event`` per event)."""
    return df.repartition("user_id").mapInArrow(partial(_windows_like, per_event), schema)


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
    return int(got.num_rows)


def check_sliding(ours: DataFrame, native: DataFrame) -> tuple[int, int]:
    """Compared inside Spark (the full window set is too big to collect): the left windows of
    ours, one per record, equal Spark's range-frame rows; sums rounded to 6 decimals."""
    columns: list[Column | str] = [
        "user_id",
        "ts_ms",
        "count",
        F.round("sum_amount", 6).alias("sum_amount"),
        "min_amount",
        "max_amount",
    ]
    left = ours.where("window_end = window_time").withColumnRenamed("window_end", "ts_ms")
    left, want = left.select(*columns), native.select(*columns)
    missing, extra = want.exceptAll(left).count(), left.exceptAll(want).count()
    if missing or extra:
        raise SystemExit(f"sliding left windows differ: {missing} missing, {extra} extra")
    return int(ours.count()), int(want.count())


# ----------------------------------------------------------------------------- timing


def timed(
    contenders: list[tuple[str, Callable[[], DataFrame]]], repeat: int, peaks: Peaks
) -> list[float]:
    """Runs the contenders in turn, ``repeat`` rounds (so that load from elsewhere on the
    machine hits all of them alike); prints and returns each one's median seconds."""
    times: list[list[float]] = [[] for _ in contenders]
    jvm, worker = [0] * len(contenders), [0] * len(contenders)
    for _ in range(repeat):
        for i, (_name, make) in enumerate(contenders):
            peaks.reset()
            start = time.perf_counter()
            make().write.format("noop").mode("overwrite").save()
            times[i].append(time.perf_counter() - start)
            j, w = peaks.read()
            jvm[i], worker[i] = max(jvm[i], j), max(worker[i], w)
    for i, (name, _make) in enumerate(contenders):
        runs = " ".join(f"{t:.2f}" for t in times[i])
        print(
            f"  {name:<48} median {statistics.median(times[i]):6.2f}s  (runs {runs})  "
            f"peak JVM {jvm[i] / 2**30:.2f} GiB, Python worker {worker[i] / 2**20:.0f} MiB",
            flush=True,
        )
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch", type=int, default=100_000, help="maxRecordsPerBatch")
    parser.add_argument("--alternatives", action="store_true", help="also designs (a), (b)")
    parser.add_argument("--no-sliding", action="store_true")
    parser.add_argument(
        "--floor", action="store_true", help="also each plan's Spark cost without the engine"
    )
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run this interpreter

    table = clickstream(args.events, users=args.users, seed=7)
    ts_us = table["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us", "UTC"))
    table = table.append_column("ts_ms", table["ts"]).set_column(1, "ts", ts_us)
    with tempfile.TemporaryDirectory() as tmp:
        rows = -(-table.num_rows // 8)
        for i in range(8):
            pq.write_table(table.slice(i * rows, rows), f"{tmp}/part-{i}.parquet")
        del table
        spark = spark_session(
            "local[2]",
            {
                "spark.driver.memory": "6g",
                "spark.driver.maxResultSize": "2g",
                "spark.sql.shuffle.partitions": "8",
                # One input partition per file (8), not Spark's 128 MiB splits (2 here): two big
                # tasks leave a core idle whenever the shared machine slows one of them down.
                "spark.sql.files.maxPartitionBytes": "16m",
                "spark.sql.execution.arrow.maxRecordsPerBatch": str(args.batch),
            },
            app="windowstore-bench-spark",
        )
        peaks = Peaks(spark)
        df = spark.read.parquet(tmp)
        sessions_df = df.select("user_id", "ts", "amount")
        print(
            f"{args.events:,} events, {args.users:,} users, local[2], "
            f"{df.rdd.getNumPartitions()} input partitions, maxRecordsPerBatch {args.batch:,}"
        )

        sessions = check_sessions(ours_sessions(sessions_df), native_sessions(sessions_df))
        print(f"sessions (gap {GAP}): {sessions:,} sessions, equal to Spark's session_window")
        contenders = [
            ("native session_window", lambda: native_sessions(sessions_df)),
            ("windowstore (c: partials, shuffle, merge)", lambda: ours_sessions(sessions_df)),
        ]
        if args.floor:
            contenders.append(("floor: events to Python only", lambda: floor_sessions(sessions_df)))
        if args.alternatives:
            schema = ours_sessions(sessions_df).schema.simpleString()
            schema = schema[len("struct<") : -1].replace(":", " ")
            for name, make in [
                ("(b) repartition + complete engine per partition", whole_partition_sessions),
                ("(a) groupBy.applyInArrow, engine per key", grouped_sessions),
            ]:
                check_sessions(make(sessions_df, schema), native_sessions(sessions_df))
                contenders.append((name, partial(make, sessions_df, schema)))
        medians = timed(contenders, args.repeat, peaks)
        for (name, _), t in zip(contenders[1:], medians[1:], strict=True):
            label = name.split(" (")[0].split(" ")[0].rstrip(":")
            print(f"  ratio {label} / native: {t / medians[0]:.2f}")
        if args.alternatives:
            for batch in (10_000, 1_000_000):
                spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch))
                label = f"(c) with maxRecordsPerBatch {batch:,}"
                native, ours = timed(
                    [
                        ("native session_window", lambda: native_sessions(sessions_df)),
                        (label, lambda: ours_sessions(sessions_df)),
                    ],
                    args.repeat,
                    peaks,
                )
                print(f"  ratio {label} / native: {ours / native:.2f}")
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.batch))

        if not args.no_sliding:
            sliding_df = df.select("user_id", "ts_ms", "amount")
            full, left = check_sliding(ours_sliding(sliding_df), native_sliding(sliding_df))
            print(
                f"sliding (D = {D_MS // 60000} min): {full:,} windows (full set) from windowstore, "
                f"{left:,} left windows from Spark, left windows equal"
            )
            contenders = [
                ("native rangeBetween(-D, 0), left windows", lambda: native_sliding(sliding_df)),
                ("windowstore sliding_windows, full set", lambda: ours_sliding(sliding_df)),
            ]
            if args.floor:
                schema = ours_sliding(sliding_df).schema.simpleString()
                schema = schema[len("struct<") : -1].replace(":", " ")
                contenders.append(
                    (
                        "floor: shuffle, to Python, windows back",
                        lambda: floor_sliding(sliding_df, full / args.events, schema),
                    )
                )
            medians = timed(contenders, args.repeat, peaks)
            print(f"  ratio windowstore / native: {medians[1] / medians[0]:.2f}")
            if args.floor:
                print(f"  ratio floor / native: {medians[2] / medians[0]:.2f}")
        spark.stop()


if __name__ == "__main__":
    main()
