"""The Kafka job of the Spark Kafka test: click events read from a Kafka topic by Spark's Kafka
source, sessionized by windowstore, written to a Parquet sink (the example of
``docs/how-to/spark-streaming.md``).

Run as a script, it is a driver process of the test (which kills one with SIGKILL):

    python tests/spark/kafka_job.py BOOTSTRAP TOPIC JARS SINK CHECKPOINT
                                    [--produce RECORDS] [--until-killed]

It windows TOPIC into the Parquet sink SINK, from the earliest offsets, ``MAX_OFFSETS`` records
a micro-batch: until the end of the topic as it is when the query starts (trigger
``availableNow``), or with ``--until-killed`` until killed. ``--produce`` first writes the
records of RECORDS (JSON lines of ``partition``, ``key`` and ``value``) to TOPIC, in the file's
order, each to the partition it names. JARS: the Kafka connector's jars, comma-separated
(``kafka_broker.spark_jars()``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from windowstore import agg
from windowstore.spark import session_windows

#: What each record's value holds: JSON with the user, the event time (epoch milliseconds) and an
#: amount.
VALUE_SCHEMA = "user_id string, ts long, amount double"
GAP = "30s"
GRACE = "20s"
AGGS = [agg.count(), agg.sum("amount"), agg.max("amount")]
#: Records per micro-batch (over all partitions): small, so that a topic makes many.
MAX_OFFSETS = 80


def spark_session(jars: str) -> SparkSession:
    """A local Spark session with the Kafka connector's ``jars`` (comma-separated paths)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("windowstore-kafka-job")
        .config("spark.jars", jars)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def read_events(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    value_schema: str = VALUE_SCHEMA,
    per_trigger: int = MAX_OFFSETS,
) -> DataFrame:
    """The topic's records, from the earliest offsets, ``per_trigger`` a micro-batch, as a stream
    of events: the fields of their JSON values (``value_schema``: ``user_id``, ``ts`` and
    ``amount`` by default), ``ts`` (epoch milliseconds) as a timestamp. The streaming benchmark
    reads its topic with it too."""
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", per_trigger)
        .load()
    )
    value = F.from_json(F.col("value").cast("string"), value_schema)
    events = raw.select(value.alias("e")).select("e.*")
    return events.withColumn("ts", F.timestamp_millis("ts"))


def sessions(events: DataFrame) -> DataFrame:
    """The final sessions of ``events`` (a stream, with the grace, or a batch DataFrame)."""
    grace = GRACE if events.isStreaming else None
    return session_windows(events, key="user_id", time="ts", gap=GAP, grace=grace, aggs=AGGS)


def produce(spark: SparkSession, bootstrap: str, topic: str, events: str) -> None:
    """Writes the records of the JSON lines file ``events`` to ``topic``, in the file's order:
    one task writes them all, and Kafka keeps one producer's order within a partition."""
    records = spark.read.schema("partition int, key string, value string").json(events)
    (
        records.coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .save()
    )


def run(
    spark: SparkSession, bootstrap: str, topic: str, sink: str, checkpoint: str, until_killed: bool
) -> None:
    """Windows ``topic`` into the Parquet sink ``sink`` (final sessions, output mode append)."""
    writer = (
        sessions(read_events(spark, bootstrap, topic))
        .writeStream.format("parquet")
        .option("path", sink)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
    )
    trigger: dict[str, Any] = (
        {"processingTime": "0 seconds"} if until_killed else {"availableNow": True}
    )
    writer.trigger(**trigger).start().awaitTermination()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("bootstrap", "topic", "jars", "sink", "checkpoint"):
        parser.add_argument(name)
    parser.add_argument("--produce", metavar="RECORDS")
    parser.add_argument("--until-killed", action="store_true")
    a = parser.parse_args(argv)
    spark = spark_session(a.jars)
    if a.produce is not None:
        produce(spark, a.bootstrap, a.topic, a.produce)
    run(spark, a.bootstrap, a.topic, a.sink, a.checkpoint, a.until_killed)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
