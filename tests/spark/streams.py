"""Generated event streams for the streaming tests: Parquet files, one per micro-batch, and the
queries that window them.

Run as a script, it is the driver process the kill test kills: it runs one query until then.

    python tests/spark/streams.py KIND SOURCE SINK CHECKPOINT PROVIDER
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from windowstore import agg
from windowstore.spark import session_windows, sliding_windows

SCHEMA = "k string, ts timestamp, x long, g long"
#: Epoch seconds of the first event: Spark's watermark is 0 until data has been seen.
BASE_S = 1_700_000_000
#: The sentinel key: one record far in the future, in the last file, closes every window.
SENTINEL = "~end"
GRACE = "20s"
AGGS = [agg.count(), agg.sum("x"), agg.min("x"), agg.max("x"), agg.mean("x")]
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
#: The state store providers the streaming tests run with (None: Spark's default).
PROVIDERS = {"default": None, "rocksdb": ROCKSDB}


@dataclass(frozen=True)
class Kind:
    """One windowing of the tests: its name and keyword arguments."""

    name: str
    kwargs: dict[str, Any]

    def windows(self, df: DataFrame, **extra: Any) -> Any:
        fn = sliding_windows if "time_difference" in self.kwargs else session_windows
        if "gap_column" in self.kwargs:
            # The files hold gaps as integer microseconds; next to a timestamp a gap column
            # must say its unit: Spark's day-time interval.
            df = df.withColumn("g", F.expr("g * INTERVAL 1 MICROSECOND"))
        return fn(df, key="k", time="ts", aggs=AGGS, **self.kwargs, **extra)

    @property
    def by(self) -> list[str]:
        return ["k", "window_start" if "time_difference" in self.kwargs else "session_start"]


KINDS = {
    "fixed_gap": Kind("fixed_gap", {"gap": "30s"}),
    "dynamic_gap": Kind("dynamic_gap", {"gap_column": "g", "max_gap": "60s"}),
    "max_duration": Kind("max_duration", {"gap": "30s", "max_duration": "45s"}),
    "sliding": Kind("sliding", {"time_difference": "20s"}),
}


def events(seed: int, files: int = 12, per_file: int = 40, keys: int = 8) -> list[pd.DataFrame]:
    """``files`` micro-batches of events, out of order by up to the grace (20 s) and no more:
    each event is its true time (never decreasing) minus up to 20 s, so no event is ever
    behind the largest time seen before it by more than the grace."""
    rng = random.Random(seed)
    true_ms = BASE_S * 1000
    out = []
    for _ in range(files):
        rows = []
        for _ in range(per_file):
            true_ms += rng.randint(0, 3000)
            t = true_ms - rng.randint(0, 20_000)
            gap_s = rng.choice([5, 15, 40, 60])
            rows.append((f"k{rng.randrange(keys)}", t, rng.randint(-5, 100), gap_s * 1_000_000))
        rng.shuffle(rows)
        out.append(_frame(rows))
    out.append(_frame([(SENTINEL, true_ms + 10 * 86_400_000, 0, 1_000_000)]))
    return out


def _frame(rows: list[tuple[str, int, int, int]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["k", "ts", "x", "g"])
    frame["ts"] = pd.to_datetime(frame["ts"], unit="ms", utc=True).astype("datetime64[us, UTC]")
    return frame


def write_files(frames: list[pd.DataFrame], folder: Path, first: int = 0) -> None:
    """Writes ``frames`` as numbered Parquet files (written aside, then renamed in, so that a
    running stream never reads half a file). Spark's file source takes files in modification
    time order, so file ``i`` is dated ``i`` seconds after the epoch-plus-a-day: files written
    in the same instant would otherwise come in any order."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, frame in enumerate(frames, start=first):
        tmp = folder.parent / f".{folder.name}-{i:03d}.parquet"
        frame.to_parquet(tmp, index=False)
        os.utime(tmp, (86_400 + i, 86_400 + i))
        tmp.rename(folder / f"part-{i:03d}.parquet")


def read_stream(spark: SparkSession, folder: Path, schema: str = SCHEMA) -> DataFrame:
    """The files of ``folder`` as a stream, one file per micro-batch."""
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))


def start_to_parquet(
    spark: SparkSession, kind: Kind, source: Path, sink: Path, checkpoint: Path, **trigger: Any
) -> Any:
    """Starts the final-mode windows of ``source`` into a Parquet sink; returns the query."""
    windows = kind.windows(read_stream(spark, source), grace=GRACE)
    return to_parquet(windows, sink, checkpoint, **trigger)


def to_parquet(df: DataFrame, sink: Path, checkpoint: Path, **trigger: Any) -> Any:
    """Starts the stream ``df`` into a Parquet sink (output mode append), with ``trigger``
    (Spark's default without one); returns the query."""
    writer = (
        df.writeStream.format("parquet")
        .option("path", str(sink))
        .option("checkpointLocation", str(checkpoint))
        .outputMode("append")
    )
    return (writer.trigger(**trigger) if trigger else writer).start()


def to_memory(streams: dict[str, DataFrame], checkpoints: Path) -> list[Any]:
    """Runs each stream, all the data available, into the memory table of its name (output
    mode append, its checkpoint in ``checkpoints / name``), the queries at once; returns them
    once all have finished."""
    queries = [
        df.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoints / name))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
        for name, df in streams.items()
    ]
    for query in queries:
        query.awaitTermination()
    return queries


def to_noop(df: DataFrame, checkpoint: Path) -> Any:
    """Runs the stream ``df`` over all the data available into Spark's ``noop`` sink (output
    mode append); returns the finished query, whose progress has the figures. The streaming
    benchmark runs its queries with it too."""
    query = (
        df.writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return query


def committed(checkpoint: Path) -> int:
    """How many micro-batches the query of ``checkpoint`` has committed."""
    commits = checkpoint / "commits"
    if not commits.exists():
        return 0
    return sum(1 for p in commits.iterdir() if p.name.isdigit())


def kill_after_commits(
    command: list[str], checkpoint: Path, commits: int, log: Path, timeout: float = 300
) -> int:
    """Runs the driver ``command`` (output to ``log``) in a process group of its own until its
    query (``checkpoint``) has committed ``commits`` micro-batches, then kills the group with
    SIGKILL: the driver, its JVM and its Python workers, without a chance to clean up. Returns
    how many micro-batches were committed by then."""
    with log.open("wb") as out:
        driver = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + timeout
        while committed(checkpoint) < commits:
            assert driver.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"the driver committed no {commits} micro-batches"
            time.sleep(0.2)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    return committed(checkpoint)


def local_spark(app: str, conf: dict[str, str]) -> SparkSession:
    """A SparkSession as the tests run Spark: local[2], no UI, 4 shuffle partitions, UTC, then
    ``conf``; Spark's own log lines at ERROR only."""
    builder = SparkSession.builder.master("local[2]").appName(app)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        **conf,
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(kind: str, source: str, sink: str, checkpoint: str, provider: str) -> None:
    """Runs the final-mode windows of ``source`` into ``sink`` until killed."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    conf = {} if provider == "default" else {PROVIDER: provider}
    spark = local_spark("windowstore-stream-job", conf)
    query = start_to_parquet(
        spark, KINDS[kind], Path(source), Path(sink), Path(checkpoint), processingTime="0 seconds"
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:6])
