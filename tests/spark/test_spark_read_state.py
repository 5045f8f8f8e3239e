"""``windowstore.spark.read_state`` on real checkpoints: file-source streams of long sessions
(many stay open), with the default provider (applyInPandasWithState) and RocksDB
(transformWithStateInPandas, both state layouts, with a log to replay). The sink's windows plus
the open windows read from the checkpoint are the complete-data engine's windows over all the
input, no record late: after the query stopped, and while it runs (sliding windows with a udf,
and an earlier micro-batch read again); tagged rows with snapshots in chunks; and a checkpoint
of another query refused."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

import windowstore
from windowstore import InvalidWindowSpec, SnapshotError, agg
from windowstore.spark import metrics, read_state, session_windows, sliding_windows

from .compare import assert_same_windows
from .streams import (
    BASE_S,
    GRACE,
    PROVIDER,
    ROCKSDB,
    committed,
    read_stream,
    to_parquet,
    write_files,
)

pytestmark = pytest.mark.spark

LAYOUT = "spark.windowstore.state.layout"
MAX_ENTRY = "spark.windowstore.state.maxEntryBytes"
COMPACT = "spark.windowstore.state.compactRatio"
NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"
AGGS = [agg.count(), agg.sum("x"), agg.max("x"), agg.mean("x")]
GAP = "40s"


def frames(files: int = 4, keys: int = 8, seed: int = 3) -> list[pd.DataFrame]:
    """``files`` micro-batches of 60 s of event time each, in time order across files (no
    record late): key ``k<j>`` is silent in every third file (a session closes) and active in
    the last ones (its session stays open)."""
    rng = random.Random(seed)
    out = []
    for i in range(files):
        rows = []
        for j in range(keys):
            if (i + j) % 3 == 0:
                continue
            for _ in range(rng.randint(2, 6)):
                t = (BASE_S + 60 * i) * 1000 + rng.randrange(60_000)
                rows.append((f"k{j}", t, rng.randint(0, 100), 0))
        rng.shuffle(rows)
        frame = pd.DataFrame(rows, columns=["k", "ts", "x", "g"])
        frame["ts"] = pd.to_datetime(frame["ts"], unit="ms", utc=True).astype("datetime64[us, UTC]")
        out.append(frame)
    return out


def complete(written: list[pd.DataFrame], fn: Any, **kwargs: Any) -> pa.Table:
    """The complete-data engine's windows of all the input written so far."""
    table = pa.Table.from_pandas(pd.concat(written, ignore_index=True), preserve_index=False)
    return fn(table, key="k", time="ts", **{"aggs": AGGS, **kwargs})


def run_sessions(spark: SparkSession, root: Path) -> Path:
    """Runs the sessions of ``frames()`` to the end of the files; returns the checkpoint."""
    write_files(frames(), root / "in")
    windows = session_windows(read_stream(spark, root / "in"), key="k", time="ts", gap=GAP,
                              grace=GRACE, aggs=AGGS)  # fmt: skip
    query = to_parquet(windows, root / "out", root / "checkpoint", availableNow=True)
    query.awaitTermination()
    assert sum(metrics(p).get("rejected_late", 0) for p in query.recentProgress) == 0
    return root / "checkpoint"


def check(spark: SparkSession, sink: Path, open_windows: DataFrame, want: pa.Table) -> pa.Table:
    """The sink's rows plus ``open_windows`` are ``want``; both parts hold windows, in the same
    columns and types. Returns the open windows."""
    done = spark.read.parquet(str(sink)).toArrow()
    held = open_windows.toArrow()
    assert [(f.name, f.type) for f in held.schema] == [(f.name, f.type) for f in done.schema]
    assert done.num_rows > 0
    assert held.num_rows > 0
    both = pa.concat_tables([done, held.cast(done.schema)])
    assert_same_windows(both, want, ["k", want.column_names[1]])
    return held


@pytest.fixture(params=["default", "rocksdb-log", "rocksdb-whole"])
def layout(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """The state store provider and the layout of the parameter, for queries defined here."""
    name: str = request.param
    if name.startswith("rocksdb"):
        spark.conf.set(PROVIDER, ROCKSDB)
        spark.conf.set(LAYOUT, name.removeprefix("rocksdb-"))
        # The log is kept (the default compacts these small snapshots at every call).
        spark.conf.set(COMPACT, "100")
    yield name
    for conf in (PROVIDER, LAYOUT, COMPACT):
        spark.conf.unset(conf)


def test_the_sink_and_the_open_windows_are_all_windows(
    spark: SparkSession, layout: str, tmp_path: Path
) -> None:
    checkpoint = run_sessions(spark, tmp_path)
    want = complete(frames(), windowstore.session_windows, gap=GAP)
    held = check(spark, tmp_path / "out", read_state(spark, checkpoint), want)
    assert held.num_rows >= 4


def test_the_open_windows_of_a_running_query(spark: SparkSession, tmp_path: Path) -> None:
    # Sliding windows with a udf (aggs= given), RocksDB's log layout, read between micro-batches.
    # No micro-batch runs without data: the sink and the state then stay at one micro-batch.
    spread = agg.udf(lambda x: x.to_pylist()[-1] - x.to_pylist()[0], "x", returns=pa.int64())
    aggs = [*AGGS, spread.alias("spread")]
    spark.conf.set(PROVIDER, ROCKSDB)
    spark.conf.set(COMPACT, "100")  # a log to replay
    spark.conf.set(NO_DATA_BATCHES, "false")
    every = frames()
    (tmp_path / "in").mkdir()
    windows = sliding_windows(read_stream(spark, tmp_path / "in"), key="k", time="ts",
                              time_difference="20s", grace=GRACE, aggs=aggs)  # fmt: skip
    checkpoint = tmp_path / "checkpoint"
    query = to_parquet(windows, tmp_path / "out", checkpoint)
    seen: list[tuple[int, pa.Table]] = []
    try:
        for first, written in ((0, 2), (2, 4)):
            write_files(every[first:written], tmp_path / "in", first=first)
            query.processAllAvailable()
            want = complete(every[:written], windowstore.sliding_windows, time_difference="20s",
                            aggs=aggs)  # fmt: skip
            held = check(spark, tmp_path / "out", read_state(spark, checkpoint, aggs=aggs), want)
            seen.append((committed(checkpoint) - 1, held))
        assert query.isActive
    finally:
        query.stop()
        for conf in (PROVIDER, COMPACT, NO_DATA_BATCHES):
            spark.conf.unset(conf)
    # An earlier micro-batch's open windows are those read while it was the latest.
    batch, held = seen[0]
    assert batch < seen[1][0]
    order = [("k", "ascending"), ("window_start", "ascending")]
    earlier = read_state(spark, checkpoint, batch, aggs=aggs).toArrow()
    assert earlier.sort_by(order).to_pylist() == held.sort_by(order).to_pylist()
    # The udf's function is not in the checkpoint: without aggs=, the call says so.
    with pytest.raises(InvalidWindowSpec, match="user-defined"):
        read_state(spark, tmp_path / "checkpoint")
    with pytest.raises(InvalidWindowSpec, match="aggs"):
        read_state(spark, tmp_path / "checkpoint", aggs=AGGS)


def test_a_checkpoint_without_windows_state_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    write_files(frames()[:1], tmp_path / "in")
    counts = read_stream(spark, tmp_path / "in").groupBy("k").count()
    query = (
        counts.writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .outputMode("update")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    with pytest.raises(SnapshotError, match="no windowstore state"):
        read_state(spark, tmp_path / "checkpoint")
    with pytest.raises(SnapshotError, match="no windowstore state"):
        read_state(spark, tmp_path / "nothing")


@pytest.mark.parametrize("layout", ["log", "whole"])
def test_tagged_rows_of_open_sessions(spark: SparkSession, layout: str, tmp_path: Path) -> None:
    # output="records" keeps the input's timestamp columns as such in the state, and the log
    # layout replays calls whose records carry them: read_state finds them there. Small entries
    # put the snapshots in chunks (the whole layout's rows too) and the log's calls in parts; a
    # high compaction ratio keeps the log (the default rewrites these small snapshots instead).
    conf = {PROVIDER: ROCKSDB, LAYOUT: layout, COMPACT: "100"}
    conf[MAX_ENTRY] = "2048" if layout == "log" else "1024"  # a record's IPC needs > 1 KiB
    for name, value in conf.items():
        spark.conf.set(name, value)
    try:
        write_files(frames(), tmp_path / "in")
        df = read_stream(spark, tmp_path / "in")
        tagged = session_windows(df, key="k", time="ts", gap=GAP, grace=GRACE, output="records")
        to_parquet(
            tagged, tmp_path / "out", tmp_path / "checkpoint", availableNow=True
        ).awaitTermination()
    finally:
        for name in conf:
            spark.conf.unset(name)
    table = pa.Table.from_pandas(pd.concat(frames(), ignore_index=True), preserve_index=False)
    want = windowstore.session_windows(table, key="k", time="ts", gap=GAP, output="records")
    held = check(spark, tmp_path / "out", read_state(spark, tmp_path / "checkpoint"), want)
    assert held.schema.field("ts").type == pa.timestamp("us", "UTC")
    state = spark.read.format("statestore").option("stateVarName", "windowstore_log")
    entries = state.load(str(tmp_path / "checkpoint")).select(
        "user_map_key.seq", "user_map_value.parts"
    )
    assert entries.where("seq < 0 and parts > 1").count() > 0  # snapshots in chunks
    if layout == "log":
        assert entries.where("seq >= 0").count() > 0  # a log replayed


def test_a_batch_the_checkpoint_does_not_hold_is_named(spark: SparkSession, tmp_path: Path) -> None:
    checkpoint = run_sessions(spark, tmp_path)
    latest = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    with pytest.raises(SnapshotError) as e:
        read_state(spark, checkpoint, batch_id=latest + 38)
    assert f"batch_id={latest + 38}: " in str(e.value)
    assert f"micro-batches 0 to {latest}" in str(e.value)
    assert read_state(spark, checkpoint, batch_id=latest).count() > 0
