"""windowstore.spark through Spark Connect (a local server, ``remote("local[2]")``): the batch
adapter against the complete-data engine, the streaming adapter (both state store providers,
final windows) against it too; ``windowstore.spark.metrics`` on Connect and classic queries;
the line logged when a windows stream is defined on Spark's default state store provider."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import Row, SparkSession

import windowstore
from windowstore.spark import metrics

from .compare import assert_same_windows
from .connect_job import BATCH, STREAM, write_arrow
from .streams import (
    AGGS,
    GRACE,
    KINDS,
    PROVIDER,
    PROVIDERS,
    ROCKSDB,
    SENTINEL,
    events,
    read_stream,
    to_memory,
    write_files,
)

pytestmark = pytest.mark.spark

#: Two micro-batches of events out of order within the grace, then the sentinel's.
FRAMES = events(seed=11, files=2)
TESTS = Path(__file__).resolve().parents[1]
METRICS = {
    "windows",
    "rejected_late",
    "rejected_null_key",
    "rejected_null_time",
    "rejected_invalid_gap",
    "rejected_time_overflow",
}


def every_event() -> pa.Table:
    """The events of FRAMES, the sentinel left out, as one Arrow table."""
    every = pd.concat(FRAMES, ignore_index=True)
    return pa.Table.from_pandas(every[every["k"] != SENTINEL], preserve_index=False)


def complete(name: str) -> pa.Table:
    """The complete-data engine's windows of KINDS[name] over every event."""
    kwargs = KINDS[name].kwargs
    fn = windowstore.sliding_windows if "time_difference" in kwargs else windowstore.session_windows
    out: pa.Table = fn(every_event(), key="k", time="ts", aggs=AGGS, **kwargs)
    return out


def read_arrow(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def test_windows_and_metrics_through_spark_connect(tmp_path: Path) -> None:
    # One test, one server: pytest-xdist's workers would each start one for a shared fixture.
    write_arrow(every_event(), tmp_path / "batch.arrow")
    write_files(FRAMES, tmp_path / "stream")
    proc = subprocess.run(
        [sys.executable, "-m", "spark.connect_job", str(tmp_path)],
        cwd=TESTS, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["session"] == "pyspark.sql.connect.session"

    for name in BATCH:
        want = complete(name)
        assert want.num_rows > 10, name
        assert_same_windows(read_arrow(tmp_path / f"batch-{name}.arrow"), want, KINDS[name].by)

    want = complete(STREAM)
    for store, chosen in PROVIDERS.items():
        sink = read_arrow(tmp_path / f"stream-{store}.arrow")
        assert_same_windows(sink.filter(pc.not_equal(sink["k"], SENTINEL)), want, KINDS[STREAM].by)
        run = result[store]
        each = [m for m in run["each"] if m]
        assert len(each) >= len(FRAMES), store
        assert all(set(m) == METRICS for m in each), store
        assert sum(m["windows"] for m in each) == sink.num_rows, store
        assert all(m[k] == 0 for m in each for k in METRICS - {"windows"}), store
        assert run["last"] == each[-1], store
        # The default provider's line, once; none on RocksDB.
        logged = run["logged"]
        if chosen is None:
            assert len(logged) == 1
            assert f"{PROVIDER}={ROCKSDB}" in logged[0]
        else:
            assert logged == []


def test_metrics_of_a_classic_query(spark: SparkSession, tmp_path: Path) -> None:
    write_files(FRAMES, tmp_path / "in")
    windows = KINDS[STREAM].windows(read_stream(spark, tmp_path / "in"), grace=GRACE, name="ws")
    (query,) = to_memory({"classic_metrics": windows}, tmp_path)
    rows = spark.table("classic_metrics").count()
    progress = query.recentProgress
    each = [metrics(p, name="ws") for p in progress]
    assert [m for m in each if m] == [p["observedMetrics"]["ws"].asDict() for p in progress]
    assert all(set(m) == METRICS for m in each)
    assert rows > 10
    assert sum(m["windows"] for m in each) == rows
    assert metrics(query, name="ws") == each[-1]
    # Another name's metrics: none. The progress's JSON form reads the same.
    assert metrics(query) == {}
    assert metrics(json.loads(progress[-1].json), name="ws") == each[-1]


class FakeQuery:
    """A query whose last progress is an idle one (no observed metrics)."""

    def __init__(self, progress: list[dict[str, Any]]) -> None:
        self.recentProgress = progress
        self.lastProgress = progress[-1] if progress else None


def test_metrics_reads_connect_rows_and_skips_idle_progress() -> None:
    schema = {
        "type": "struct",
        "fields": [
            {"name": n, "type": "long", "nullable": False, "metadata": {}}
            for n in ("windows", "rejected_late")
        ],
    }
    connect = {"observedMetrics": {"windowstore": Row(values=[7, 2], schema=schema)}}
    classic = {"observedMetrics": {"windowstore": Row(windows=3, rejected_late=0)}}
    idle: dict[str, Any] = {"observedMetrics": {}}
    assert metrics(connect) == {"windows": 7, "rejected_late": 2}
    assert metrics(classic) == {"windows": 3, "rejected_late": 0}
    assert metrics(FakeQuery([connect, classic, idle])) == {"windows": 3, "rejected_late": 0}
    assert metrics(FakeQuery([idle])) == {}
    assert metrics(FakeQuery([])) == {}


def test_the_default_provider_is_named_once(
    spark: SparkSession, provider: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_files(FRAMES[:1], tmp_path / "in")
    stream = read_stream(spark, tmp_path / "in")
    with caplog.at_level(logging.INFO, logger="windowstore.spark"):
        # Two streams from one call: one line.
        KINDS[STREAM].windows(stream, grace=GRACE, return_rejected=True)
    lines = [r for r in caplog.records if r.name == "windowstore.spark"]
    if PROVIDERS[provider] is None:
        assert len(lines) == 1
        assert lines[0].levelno == logging.WARNING
        assert f"{PROVIDER}={ROCKSDB}" in lines[0].getMessage()
    else:
        assert lines == []
