"""The contenders of bench_flink.py beside the processor: Apache Flink, run in a virtual
environment of its own, and windowstore.spark on a local Spark session."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv
from bench_sessions import GAP_MS, GRACE_MS
from harness import end_process, tests_module

from windowstore import agg

HERE = Path(__file__).resolve().parent
AGGS = [agg.count(), agg.sum("amount"), agg.min("amount"), agg.max("amount")]
#: The columns every contender's sessions are compared in.
SESSION = ["user_id", "start", "end", "count", "sum", "min", "max"]
#: The key of the record that closes every session of Spark's stream.
SPARK_SENTINEL = "~sentinel"


def flink_python(version: str, root: Path) -> Path:
    """The Python of a virtual environment with ``apache-flink==version``, created under ``root``
    on first use (keyed by the Flink and Python versions: PyFlink's wheels are per Python) and
    kept; a file lock keeps two benches from creating it at once."""
    py = f"py{sys.version_info.major}{sys.version_info.minor}"
    venv = root / f"flink-{version}-{py}"
    python = venv / "bin" / "python"
    ready = venv / ".windowstore-ready"
    if ready.is_file():
        print(f"Flink {version}: cached virtual environment {venv}", flush=True)
        return python
    root.mkdir(parents=True, exist_ok=True)
    with (root / f".flink-{version}-{py}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.is_file():  # created by another process while this one waited
            return python
        print(f"Flink {version}: creating its virtual environment {venv} ...", flush=True)
        start = time.perf_counter()
        shutil.rmtree(venv, ignore_errors=True)  # a half-made one
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "--progress-bar", "off", "--quiet"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, f"apache-flink=={version}"], check=True)
        ready.write_text(f"apache-flink=={version}\n")
        size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
        print(
            f"Flink {version}: virtual environment created in {time.perf_counter() - start:.0f} s, "
            f"{size / 1e6:,.0f} MB",
            flush=True,
        )
    return python


class FlinkRuns:
    """benches/flink_job.py in Flink's Python: one JVM (PyFlink's gateway, whose local
    mini-cluster runs the jobs) for every :meth:`run`. ``start_s``: from launching the process to
    its JVM ready."""

    def __init__(self, python: Path, log: Path) -> None:
        self.log = log
        self._stderr = log.open("w")
        start = time.perf_counter()
        self.process = subprocess.Popen(
            [str(python), str(HERE / "flink_job.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
        )  # fmt: skip
        self._line()
        self.start_s = time.perf_counter() - start

    def _line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            tail = self.log.read_text()[-4000:]
            raise RuntimeError(f"flink_job.py stopped (exit {self.process.wait()}):\n{tail}")
        result: dict[str, Any] = json.loads(line)
        return result

    def run(self, source: Path, output: Path, parallelism: int, delay_ms: int) -> dict[str, Any]:
        """One job over ``source`` (a file or a folder of CSV files) into ``output``."""
        assert self.process.stdin is not None
        request = {
            "input": str(source),
            "output": str(output),
            "parallelism": parallelism,
            "gap_ms": GAP_MS,
            "delay_ms": delay_ms,
        }
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._line()

    def close(self) -> None:
        """Ends the process (its input closed); killed if it has not ended within a minute."""
        end_process(self.process, 60)
        self._stderr.close()


def read_flink(folder: Path) -> pa.Table:
    """Flink's sink files as sessions (``SESSION`` columns, Flink's window as it wrote it)."""
    hidden = [p.name for p in folder.iterdir() if p.name.startswith(".")]
    if hidden:  # in-progress or pending files: the sink did not commit its output
        raise AssertionError(f"Flink left uncommitted files in {folder}: {hidden[:3]}")
    names = SESSION
    convert = csv.ConvertOptions(
        column_types={
            "user_id": pa.string(),
            "start": pa.timestamp("ms"),
            "end": pa.timestamp("ms"),
            "count": pa.int64(),
            "sum": pa.float64(),
            "min": pa.float64(),
            "max": pa.float64(),
        }
    )
    tables = [
        csv.read_csv(p, read_options=csv.ReadOptions(column_names=names), convert_options=convert)
        for p in sorted(folder.iterdir())
        if p.stat().st_size
    ]
    if not tables:
        return pa.table({n: pa.array([], convert.column_types[n]) for n in names})
    return pa.concat_tables(tables)


class SparkRuns:
    """windowstore.spark on one local Spark session (bench_spark_streaming's), both providers."""

    def __init__(self, partitions: int, driver_memory: str, arrow_batch: int) -> None:
        from bench_spark_streaming import session

        # pyspark's own worker warns of a pandas deprecation at every call of the operator.
        os.environ["PYTHONWARNINGS"] = "ignore::FutureWarning"
        start = time.perf_counter()
        options = argparse.Namespace(
            partitions=partitions,
            driver_memory=driver_memory,
            arrow_batch=arrow_batch,
            provider="default",
        )
        self.spark = session(options)
        self.start_s = time.perf_counter() - start

    def run(self, folder: Path, work: Path, provider: str) -> tuple[pa.Table, dict[str, int]]:
        """The sessions, the records windowstore rejected as late (its metrics) and the records
        Spark's stateful operator dropped before windowstore saw them (event time below the
        watermark: ``numRowsDroppedByWatermark``)."""
        import pyarrow.parquet as pq
        from bench_spark_streaming import ROCKSDB
        from pyspark.sql import functions as F

        from windowstore.spark import metrics
        from windowstore.spark import session_windows as spark_sessions

        key = "spark.sql.streaming.stateStore.providerClass"
        if provider == "rocksdb":
            self.spark.conf.set(key, ROCKSDB)
        else:
            self.spark.conf.unset(key)
        shutil.rmtree(work, ignore_errors=True)
        events = (
            self.spark.readStream.schema("user_id string, ts long, amount double")
            .option("maxFilesPerTrigger", 1)
            .csv(str(folder))
            .select("user_id", F.timestamp_millis("ts").alias("ts"), "amount")
        )
        windows = spark_sessions(
            events,
            key="user_id",
            time="ts",
            gap=timedelta(milliseconds=GAP_MS),
            grace=timedelta(milliseconds=GRACE_MS),
            aggs=AGGS,
        )
        streams = tests_module("spark.streams")
        query = streams.to_parquet(windows, work / "out", work / "checkpoint", availableNow=True)
        query.awaitTermination()
        counts: dict[str, int] = {}
        dropped = 0
        for progress in query.recentProgress:
            for name, value in metrics(progress).items():
                counts[name] = counts.get(name, 0) + value
            dropped += sum(op["numRowsDroppedByWatermark"] for op in progress["stateOperators"])
        rejected = sum(v for k, v in counts.items() if k.startswith("rejected_"))
        if rejected != counts.get("rejected_late", 0):
            raise AssertionError(f"records rejected for other reasons than lateness: {counts}")
        if query.recentProgress[0]["batchId"] != 0:  # Spark keeps the last 100 progresses
            raise AssertionError("the first micro-batches' progress is gone: fewer --spark-files")
        table = pq.read_table(work / "out")
        table = table.rename_columns(SESSION)
        for c in ("start", "end"):
            ms = table[c].cast(pa.timestamp("ms")).cast(pa.int64())
            table = table.set_column(table.schema.get_field_index(c), c, ms)
        keep = pc.not_equal(table["user_id"], SPARK_SENTINEL)
        return table.filter(keep), {"rejected": rejected, "dropped": dropped}

    def close(self) -> None:
        self.spark.stop()
