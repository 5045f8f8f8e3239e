"""Streaming session windows: windowstore.spark beside Spark's native streaming session_window.

The stream: --batches micro-batches of --events events each (--keys keys drawn uniformly), then
a far-future record that closes every session. Event time advances 60 s per micro-batch; each
event is up to 30 s earlier than its micro-batch's clock (out of order within the 30 s
grace/watermark delay). With --source files (the default) each micro-batch is a Parquet file,
read one file per micro-batch (maxFilesPerTrigger=1). With --source kafka the events are first
produced to a topic of --topic-partitions partitions on a single-node Kafka broker that the
benchmark starts on 127.0.0.1 (tests/spark/kafka_broker.py: Kafka's own jars and Spark's Kafka
connector, resolved from Maven Central once and cached), as JSON values spread evenly over the
partitions, then read by Spark's Kafka source --events records per micro-batch
(maxOffsetsPerTrigger), the far-future record once on every partition; both contenders read the
same topic and parse the same JSON.

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
     [--floor] [--source files|kafka] [--topic-partitions 2]

--floor adds a third contender: windowstore's plan (watermark, buckets, applyInPandasWithState)
with a Python function that only counts its rows: what Spark's Python stateful operator costs
without the engine. --whole adds windowstore with spark.windowstore.state.layout=whole (each
bucket's state one row, rewritten by every call: the layout before the log layout; RocksDB only,
the default provider has no other).

--scenario long: long sessions, whose state grows with the open sessions and not with the
micro-batch. A first micro-batch opens --sessions sessions (one event per user), then
--batches micro-batches of --events (default 20,000) events on random users, event time +10 s
per micro-batch: with gap 30 minutes and grace 1 minute nothing closes. Native is
withWatermark(ts, "1 minute").groupBy(session_window(ts, "30 minutes"), k); windowstore
session_windows(..., gap="30m", grace="1m"), same aggregates. Each run is a fresh driver process
(its own JVM), so that its peak memory is its own; the contenders take turns. Per run: the
median latency of the small micro-batches (the first excluded as warm-up), the checkpoint bytes
written per small micro-batch (files under the checkpoint by modification time between commits:
the mean, which counts RocksDB's compactions where they land, and the median; with RocksDB, how
many of the micro-batches uploaded a compaction, which rewrites a partition's files whole and
lands in whichever micro-batch commits after RocksDB's background compaction finishes, so the
median moves with that race and the mean is the figure to compare), and the peak resident memory
(VmHWM) of the JVM and of the largest Python worker. --floor there runs windowstore's plan with
the provider's operator doing no windowing: with RocksDB a transformWithStateInPandas that
counts a bucket's rows and rewrites one small value state per call.

    python benches/bench_spark_streaming.py --scenario long --sessions 100000,1000000
        [--batches 10] [--events 20000] [--repeat 2] [--provider rocksdb] [--whole] [--floor]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from harness import ROCKSDB, kafka_module, scratch, tests_module
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from streaming_costs import PeakMemory, checkpoint_bytes, rocksdb_compactions
from streaming_floor import floor, floor_long

from windowstore import agg
from windowstore.spark import session_windows, spark_session

#: The Spark tests' streams (tests/spark/streams.py): the benchmark's queries run as theirs do.
streams = tests_module("spark.streams")
BASE_MS = 1_700_000_000_000
ROOT = Path(__file__).resolve().parents[1]
TOPIC = "events"
LAYOUT = "spark.windowstore.state.layout"


def stream_batches(batches: int, events: int, keys: int, seed: int = 1) -> Iterator[pa.Table]:
    """The stream's micro-batches (``k``, ``ts``, ``x``), then the sentinel: one record far in
    the future that closes every session of both contenders."""
    rng = np.random.default_rng(seed)
    for i in range(batches + 1):
        if i < batches:
            clock = BASE_MS + (i + 1) * 60_000
            t = clock - rng.integers(0, 60_000, events) // 2 - rng.integers(0, 30_000, events)
            k = rng.integers(0, keys, events)
            x = rng.integers(0, 1000, events)
        else:  # the sentinel
            t, k, x = np.array([BASE_MS + 10 * 86_400_000]), np.array([-1]), np.array([0])
        yield pa.table(
            {
                "k": pa.array(k, pa.int64()),
                "ts": pa.array(t, pa.int64()).cast(pa.timestamp("ms", "UTC")),
                "x": pa.array(x, pa.int64()),
            }
        )


def write_stream(folder: Path, batches: int, events: int, keys: int) -> None:
    """The stream's files, dated in order (Spark's file source goes by modification time)."""
    folder.mkdir(parents=True)
    for i, table in enumerate(stream_batches(batches, events, keys)):
        path = folder / f"part-{i:03d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (86_400 + i, 86_400 + i))


def read_files(spark: SparkSession, folder: Path) -> DataFrame:
    return (
        spark.readStream.schema("k long, ts timestamp, x long")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(folder))
    )


def produce(
    spark: SparkSession, bootstrap: str, batches: int, events: int, keys: int, partitions: int
) -> None:
    """Writes the stream to the topic, one Spark job per micro-batch (so every partition holds
    the micro-batches in order), each micro-batch's events spread evenly over the partitions
    and the sentinel on every partition. Spark's Kafka source takes each partition's share of a
    micro-batch in proportion to what it has left, so ``events`` records a micro-batch read back
    exactly the micro-batches written."""
    for table in stream_batches(batches, events, keys):
        if table.num_rows == 1:  # the sentinel
            table = pa.concat_tables([table] * partitions)
        part = pa.array(np.arange(table.num_rows) % partitions, pa.int32())
        df = spark.createDataFrame(table.append_column("partition", part).to_pandas())
        value = F.to_json(F.struct("k", F.unix_millis("ts").alias("ts"), "x"))
        (
            df.select(value.alias("value"), "partition")
            .write.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", TOPIC)
            .save()
        )


def read_kafka(spark: SparkSession, bootstrap: str, events: int) -> DataFrame:
    """The topic as the Kafka test's job reads it (tests/spark/kafka_job.py), ``events`` records
    a micro-batch."""
    job = tests_module("spark.kafka_job")
    return job.read_events(spark, bootstrap, TOPIC, "k long, ts long, x long", events)


def native(df: DataFrame, gap: str = "1 minute", delay: str = "30 seconds") -> DataFrame:
    """Spark's session_window: the short scenario's (gap 1 minute, watermark delay 30 s)."""
    return (
        df.withWatermark("ts", delay)
        .groupBy(F.session_window("ts", gap), "k")
        .agg(F.count("*"), F.sum("x"), F.min("x"), F.max("x"))
    )


def ours(df: DataFrame, gap: str = "1m", grace: str = "30s") -> DataFrame:
    """windowstore, with the same windows and aggregates as ``native``."""
    aggs = [agg.count(), agg.sum("x"), agg.min("x"), agg.max("x")]
    return session_windows(df, key="k", time="ts", gap=gap, grace=grace, aggs=aggs)


def ours_whole(df: DataFrame) -> DataFrame:
    """windowstore with the whole-state layout (the conf is read when the query is defined)."""
    return with_layout(df, "whole", ours)


def with_layout(df: DataFrame, layout: str, build: Callable[[DataFrame], DataFrame]) -> DataFrame:
    spark = df.sparkSession
    spark.conf.set(LAYOUT, layout)
    try:
        return build(df)
    finally:
        spark.conf.unset(LAYOUT)


# The long scenario: gap 30 minutes, watermark delay (grace) 1 minute.
native_long = partial(native, gap="30 minutes", delay="1 minute")
ours_long = partial(ours, gap="30m", grace="1m")


LONG: dict[str, Callable[[DataFrame], DataFrame]] = {
    "native": native_long,
    "windowstore": ours_long,
    "windowstore-whole": lambda df: with_layout(df, "whole", ours_long),
    "floor": lambda df: floor_long(df),
}


def write_long(folder: Path, sessions: int, batches: int, events: int, seed: int = 1) -> None:
    """The long-session stream: a first file opening ``sessions`` sessions (users 0 to
    sessions - 1, one event each within the first 10 s), then ``batches`` files of ``events``
    events on random users, file ``i`` within 10 s after BASE + 10 i s."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for i in range(batches + 1):
        k = np.arange(sessions) if i == 0 else rng.integers(0, sessions, events)
        t = BASE_MS + i * 10_000 + rng.integers(0, 10_000, len(k))
        table = pa.table(
            {
                "k": pa.array(k, pa.int64()),
                "ts": pa.array(t, pa.int64()).cast(pa.timestamp("ms", "UTC")),
                "x": pa.array(rng.integers(0, 1000, len(k)), pa.int64()),
            }
        )
        path = folder / f"part-{i:03d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (86_400 + i, 86_400 + i))


def long_child(a: argparse.Namespace) -> None:
    """One run of the long-session scenario in this process: prints its figures as JSON."""
    spark = session(a)
    memory = PeakMemory()
    checkpoint = Path(a.checkpoint)
    df = read_files(spark, Path(a.input))
    query = streams.to_noop(LONG[a.child](df), checkpoint)
    memory.stop()
    progress: list[dict[str, Any]] = query.recentProgress
    small = [p for p in progress if 0 < p["numInputRows"] <= a.events][1:]
    written = checkpoint_bytes(checkpoint)
    measured = [written.get(p["batchId"], 0) for p in small]
    compactions = rocksdb_compactions(checkpoint) if a.provider == "rocksdb" else {}
    figures = {
        "first_s": progress[0]["durationMs"]["triggerExecution"] / 1000,
        "latency_s": statistics.median(p["durationMs"]["triggerExecution"] / 1000 for p in small),
        "ck_median": statistics.median(measured),
        "ck_mean": statistics.mean(measured),
        "compacted": sum(1 for p in small if compactions.get(p["batchId"], 0)),
        "jvm": memory.jvm,
        "worker": memory.worker,
    }
    print("RESULT " + json.dumps(figures), flush=True)
    spark.stop()


def long_scenario(a: argparse.Namespace) -> None:
    """The long-session scenario: per number of open sessions, the contenders taking turns,
    each run a child process (:func:`long_child`)."""
    contenders = ["native", "windowstore"] + (["windowstore-whole"] if a.whole else [])
    contenders += ["floor"] if a.floor else []
    with scratch("ws-bench-long-") as root:
        for sessions in [int(n) for n in a.sessions.split(",")]:
            folder = root / f"in-{sessions}"
            write_long(folder, sessions, a.batches, a.events)
            print(
                f"long sessions: {sessions:,} open, then {a.batches} micro-batches x "
                f"{a.events:,} events, state store: {a.provider}, {a.partitions} shuffle "
                "partitions",
                flush=True,
            )
            results: dict[str, list[dict[str, float]]] = {c: [] for c in contenders}
            for i in range(a.repeat):
                for c in contenders:
                    shutil.rmtree(root / "ck", ignore_errors=True)
                    command = [
                        sys.executable, __file__, "--child", c, "--input", str(folder),
                        "--checkpoint", str(root / "ck"), "--provider", a.provider,
                        "--partitions", str(a.partitions), "--events", str(a.events),
                        "--arrow-batch", str(a.arrow_batch), "--driver-memory",
                        a.driver_memory,
                    ]  # fmt: skip
                    done = subprocess.run(command, capture_output=True, text=True)
                    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
                    if not lines:
                        print(done.stdout[-2000:], done.stderr[-4000:])
                        raise SystemExit(f"{c} failed")
                    r = json.loads(lines[-1][len("RESULT ") :])
                    results[c].append(r)
                    print(f"  run {i + 1} {c:18s} {_long_line(r)}", flush=True)
            for c, rs in results.items():
                m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
                print(f"{sessions:>9,} {c:18s} median {_long_line(m)}", flush=True)
            native_s = statistics.median(r["latency_s"] for r in results["native"])
            ours_s = statistics.median(r["latency_s"] for r in results["windowstore"])
            print(f"latency ratio windowstore / native: {ours_s / native_s:.2f}", flush=True)


def _long_line(r: dict[str, float]) -> str:
    mib = 1 << 20
    return (
        f"batch {r['latency_s']:.2f} s (first {r['first_s']:.1f} s), checkpoint "
        f"{r['ck_mean'] / mib:.2f} MiB/batch (median {r['ck_median'] / mib:.2f}, "
        f"{r['compacted']:.0f} of the batches with a compaction), peak JVM "
        f"{r['jvm'] / mib:,.0f} MiB, largest Python worker {r['worker'] / mib:,.0f} MiB"
    )


def session(a: argparse.Namespace, jars: str | None = None) -> SparkSession:
    conf = {
        "spark.sql.shuffle.partitions": str(a.partitions),
        "spark.driver.memory": a.driver_memory,
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(a.arrow_batch),
    }
    if a.provider == "rocksdb":
        conf["spark.sql.streaming.stateStore.providerClass"] = ROCKSDB
    if jars is not None:
        conf["spark.jars"] = jars
    return spark_session("local[2]", conf, app="windowstore-bench-streaming")


def run(
    read: Callable[[], DataFrame],
    work: Path,
    build: Callable[[DataFrame], DataFrame],
    sentinels: int,
) -> dict[str, float]:
    """One query over the whole stream; its latency and throughput figures. The micro-batches
    with data are those with more rows than the sentinels'."""
    shutil.rmtree(work, ignore_errors=True)
    query = streams.to_noop(build(read()), work)
    progress: list[dict[str, Any]] = query.recentProgress
    with_data = [p for p in progress if p["numInputRows"] > sentinels][1:]
    latency = [p["durationMs"]["triggerExecution"] / 1000 for p in with_data]
    return {
        "batches": len(progress),
        "latency_s": statistics.median(latency),
        "events_per_s": sum(p["numInputRows"] for p in with_data) / sum(latency),
        "output_rows": sum(p["sink"].get("numOutputRows", 0) for p in progress),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", choices=["short", "long"], default="short")
    parser.add_argument(
        "--sessions", default="100000,1000000", help="long: open sessions, comma-separated"
    )
    parser.add_argument("--whole", action="store_true", help="also windowstore, whole layout")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--checkpoint", help=argparse.SUPPRESS)
    parser.add_argument("--events", type=int, default=None, help="events per micro-batch")
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--provider", choices=["default", "rocksdb"], default="default")
    parser.add_argument("--partitions", type=int, default=8, help="spark.sql.shuffle.partitions")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also run windowstore's plan with a Python function that does no windowing "
        "(short: applyInPandasWithState, the default provider's operator; long: the "
        "provider's own operator)",
    )
    parser.add_argument(
        "--arrow-batch",
        type=int,
        default=10_000,
        help="spark.sql.execution.arrow.maxRecordsPerBatch",
    )
    parser.add_argument("--source", choices=["files", "kafka"], default="files")
    parser.add_argument(
        "--topic-partitions", type=int, default=2, help="partitions of the Kafka topic"
    )
    a = parser.parse_args()
    long = a.scenario == "long" or a.child is not None
    a.events = a.events or (20_000 if long else 200_000)
    a.batches = a.batches or (10 if long else 12)
    a.repeat = a.repeat or (2 if long else 3)
    if a.child is not None:
        return long_child(a)
    if long:
        return long_scenario(a)
    kafka = None
    if a.source == "kafka":
        if a.events % a.topic_partitions:
            parser.error("--events must be a multiple of --topic-partitions")
        kafka = kafka_module()
        reason = kafka.java_missing()
        if reason is not None:
            parser.error(f"--source kafka: {reason}")

    spark = session(a, None if kafka is None else kafka.spark_jars())

    with contextlib.ExitStack() as stack:
        root = stack.enter_context(scratch("ws-bench-stream-"))
        stack.callback(spark.stop)
        if kafka is not None:
            broker = stack.enter_context(kafka.KafkaBroker(root / "kafka"))
            broker.create_topic(TOPIC, partitions=a.topic_partitions)
            produce(spark, broker.bootstrap, a.batches, a.events, a.keys, a.topic_partitions)
            sentinels = a.topic_partitions
            source = f"Kafka topic of {a.topic_partitions} partitions"

            def read() -> DataFrame:
                return read_kafka(spark, broker.bootstrap, a.events)
        else:
            write_stream(root / "in", a.batches, a.events, a.keys)
            sentinels = 1
            source = "Parquet files"

            def read() -> DataFrame:
                return read_files(spark, root / "in")

        print(
            f"{a.batches} micro-batches x {a.events:,} events from {source}, {a.keys:,} keys, "
            f"state store: {a.provider}, {a.partitions} shuffle partitions, Arrow batches of "
            f"{a.arrow_batch:,} rows"
        )
        contenders: list[tuple[str, Callable[[DataFrame], DataFrame]]] = [
            ("native", native),
            ("windowstore", ours),
        ]
        if a.whole:
            contenders.append(("windowstore-whole", ours_whole))
        if a.floor:
            contenders.append(("floor", lambda df: floor(df, a.partitions)))
        results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in contenders}
        for i in range(a.repeat):
            for name, build in contenders:
                r = run(read, root / f"ck-{name}", build, sentinels)
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


if __name__ == "__main__":
    main()
