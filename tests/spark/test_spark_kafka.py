"""Structured Streaming from a real Kafka broker: a single KRaft node started from Kafka's own
jars (``kafka_broker.py``), read through Spark's Kafka connector by the job of
``kafka_job.py``, whose driver is killed with SIGKILL mid-stream and restarted from its
checkpoint. Skipped only where Java is missing; the jars come from Maven Central, resolved once
and cached."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from .compare import assert_same_windows
from .kafka_broker import KafkaBroker, java_missing, spark_jars
from .kafka_job import MAX_OFFSETS, sessions
from .streams import SENTINEL, committed, events, kill_after_commits

JAVA_MISSING = java_missing()
# Checked when the tests are collected: without java, Spark could not start either.
pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(JAVA_MISSING is not None, reason=JAVA_MISSING or ""),
]

JOB = Path(__file__).with_name("kafka_job.py")
TOPIC = "clicks"
PARTITIONS = 2
BY = ["user_id", "session_start"]
#: 480 events on 8 users (``k0`` ... ``k7``), out of order by up to the grace: streams.events'
#: 6 groups of ``MAX_OFFSETS`` (each shuffled), so each micro-batch reads exactly one group, as
#: the file-source tests read one file.
EVENTS = pd.concat(events(seed=11, files=6, per_file=MAX_OFFSETS), ignore_index=True)
EVENTS = EVENTS[EVENTS["k"] != SENTINEL].reset_index(drop=True)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A Kafka broker for this module's tests, stopped after them."""
    with KafkaBroker(tmp_path_factory.mktemp("kafka")) as running:
        yield running


def records(folder: Path) -> Path:
    """The topic's records as JSON lines for ``kafka_job.py --produce``: the events in order,
    spread round-robin over the partitions, then on every partition a sentinel whose time, ten
    days later, closes every session.

    Spark's watermark is one for the whole query, while its Kafka source takes each partition's
    share of a micro-batch in proportion to what the partition has left. Round-robin, the
    partitions advance in step, so every micro-batch is a slice of the events' order (out of
    order within the grace, and no more), and the sentinels come last. Partitioned by user
    instead, one partition's events could run ahead of another's by more than the grace and make
    the other's late: the sessions would be Spark's, but no longer the batch result."""
    lines = []
    for i, e in enumerate(EVENTS.itertuples()):
        value = {"user_id": e.k, "ts": e.ts.value // 1_000_000, "amount": float(e.x)}
        lines.append({"partition": i % PARTITIONS, "key": e.k, "value": value})
    end_ms = EVENTS["ts"].max().value // 1_000_000 + 10 * 86_400_000
    for p in range(PARTITIONS):
        sentinel = {"user_id": SENTINEL, "ts": end_ms, "amount": 0.0}
        lines.append({"partition": p, "key": SENTINEL, "value": sentinel})
    path = folder / "records.jsonl"
    path.write_text(
        "".join(json.dumps({**r, "value": json.dumps(r["value"])}) + "\n" for r in lines)
    )
    return path


def job(*args: str) -> list[str]:
    """The command line of a ``kafka_job.py`` driver."""
    return [sys.executable, str(JOB), *args]


def run_job(command: list[str], log: Path, timeout: float = 300) -> None:
    """Runs a driver to its end; fails with the tail of its output if it fails."""
    with log.open("wb") as out:
        result = subprocess.run(
            command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False
        )
    assert result.returncode == 0, log.read_text()[-3000:]


def sink_rows(spark: SparkSession, sink: Path) -> pa.Table:
    """The committed rows of a Parquet sink (read through its metadata log), sentinel out."""
    df = spark.read.parquet(str(sink))
    return df.filter(df.user_id != SENTINEL).toArrow()


def batch_result(spark: SparkSession) -> pa.Table:
    """The batch adapter's sessions of the same events."""
    df = EVENTS.rename(columns={"k": "user_id", "x": "amount"})[["user_id", "ts", "amount"]]
    df = df.assign(amount=df["amount"].astype("float64"))
    return sessions(
        spark.createDataFrame(df, "user_id string, ts timestamp, amount double")
    ).toArrow()


def test_a_driver_killed_mid_stream_restarts_to_the_uninterrupted_sessions(
    spark: SparkSession, broker: KafkaBroker, tmp_path: Path
) -> None:
    broker.create_topic(TOPIC, partitions=PARTITIONS)
    common = [broker.bootstrap, TOPIC, spark_jars()]

    # An uninterrupted run (which first writes the events to the topic).
    clean = tmp_path / "uninterrupted"
    produce = ["--produce", str(records(tmp_path))]
    run_job(job(*common, str(clean / "out"), str(clean / "checkpoint"), *produce),
            tmp_path / "uninterrupted.log")  # fmt: skip
    want = sink_rows(spark, clean / "out")
    batches = committed(clean / "checkpoint")
    assert batches >= len(EVENTS) // MAX_OFFSETS
    # Nothing was late or lost: the stream's sessions are the batch adapter's.
    assert want.num_rows >= 40
    assert_same_windows(want, batch_result(spark), BY)

    # The same query, its driver killed after 3 micro-batches, then restarted to the end.
    sink, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    killed = job(*common, str(sink), str(checkpoint), "--until-killed")
    done = kill_after_commits(killed, checkpoint, 3, tmp_path / "killed.log")
    assert done < batches, "the driver finished before it was killed"
    run_job(job(*common, str(sink), str(checkpoint)), tmp_path / "restarted.log")
    assert committed(checkpoint) > done
    assert_same_windows(sink_rows(spark, sink), want, BY)
