"""The driver of ``test_spark_connect.py``: windowstore's batch and streaming adapters through a
local Spark Connect server, in a process of its own.

``SparkSession.builder.remote("local[2]")`` starts the server in this process (a classic Spark
session with Spark Connect's plugin) and marks the whole process as a Connect client, so it
cannot share a process with the classic session of the other tests.

Run from ``tests/``: ``python -m spark.connect_job WORK``. ``WORK`` holds ``batch.arrow`` (the
batch input) and ``stream/`` (the streaming input, Parquet files); the job writes each result
there as an Arrow file and ``result.json``: the observed metrics read by
``windowstore.spark.metrics`` and the lines windowstore logged.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from windowstore.spark import metrics

from .streams import GRACE, KINDS, PROVIDER, PROVIDERS, read_stream

#: The windows of the batch adapter's runs (``batch-NAME.arrow``).
BATCH = ("fixed_gap", "sliding")
#: The windows of the streaming runs (``stream-PROVIDER.arrow``), final.
STREAM = "fixed_gap"


class Lines(logging.Handler):
    """Keeps the messages logged to it."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def write_arrow(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)


def main(work: Path) -> None:
    # Before the session starts: the workers run this interpreter; the server's own settings
    # (static ones, which a Connect session cannot set) go on spark-submit's command line;
    # SPARK_TESTING makes pyspark bind the server to a free port and connect to that port
    # (instead of 15002, which parallel runs would share).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_SUBMIT_ARGS"] = (
        "--conf spark.ui.enabled=false --conf spark.ui.showConsoleProgress=false "
        "--driver-memory 1g pyspark-shell"
    )
    os.environ["SPARK_TESTING"] = "1"
    started = time.monotonic()
    spark = (
        SparkSession.builder.remote("local[2]")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    result: dict[str, Any] = {
        "session": type(spark).__module__,
        "startup_s": time.monotonic() - started,
    }

    with pa.memory_map(str(work / "batch.arrow")) as source:
        table = pa.ipc.open_file(source).read_all()
    df = spark.createDataFrame(table)
    for name in BATCH:
        write_arrow(KINDS[name].windows(df).toArrow(), work / f"batch-{name}.arrow")
    result["batch_s"] = time.monotonic() - started - result["startup_s"]

    lines = Lines()
    logging.getLogger("windowstore.spark").addHandler(lines)
    for provider, chosen in sorted(PROVIDERS.items()):
        if chosen is None:
            spark.conf.unset(PROVIDER)
        else:
            spark.conf.set(PROVIDER, chosen)
        before, began = len(lines.messages), time.monotonic()
        windows = KINDS[STREAM].windows(read_stream(spark, work / "stream"), grace=GRACE)
        query = (
            windows.writeStream.format("memory")
            .queryName(f"connect_{provider}")
            .option("checkpointLocation", str(work / f"checkpoint-{provider}"))
            .outputMode("append")
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        write_arrow(spark.table(f"connect_{provider}").toArrow(), work / f"stream-{provider}.arrow")
        result[provider] = {
            "last": metrics(query),
            "each": [metrics(p) for p in query.recentProgress],
            "logged": lines.messages[before:],
            "seconds": time.monotonic() - began,
        }
    spark.stop()
    result["total_s"] = time.monotonic() - started
    (work / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
