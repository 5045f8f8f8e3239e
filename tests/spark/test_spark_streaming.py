"""Structured Streaming on real Spark, with the default state store provider
(applyInPandasWithState) and RocksDB (transformWithStateInPandas): file-source streams of 13
micro-batches, out of order within the grace, against the batch adapter on the same events;
restarts from the checkpoint, after a clean stop and after SIGKILL of the driver; changelog
replay; late and invalid records; errors raised when the query is defined."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from windowstore import InvalidWindowSpec, SchemaError, agg
from windowstore.spark import session_windows, sliding_windows

from .compare import assert_same_windows
from .streams import (
    GRACE,
    KINDS,
    PROVIDERS,
    SCHEMA,
    SENTINEL,
    Kind,
    committed,
    events,
    kill_after_commits,
    read_stream,
    start_to_parquet,
    to_memory,
    write_files,
)

pytestmark = pytest.mark.spark

FRAMES = events(seed=7)


def batch_result(spark: SparkSession, kind: Kind) -> pa.Table:
    """The batch adapter's windows over the same events (the sentinel left out)."""
    every = pd.concat(FRAMES, ignore_index=True)
    every = every[every["k"] != SENTINEL]
    return kind.windows(spark.createDataFrame(every, SCHEMA)).toArrow()


def sink_rows(spark: SparkSession, sink: Path) -> pa.Table:
    """The committed rows of a Parquet sink (read through its metadata log), sentinel out."""
    df = spark.read.parquet(str(sink))
    return df.filter(df.k != SENTINEL).toArrow()


_RUNS: dict[tuple[str, str], tuple[pa.Table, list[dict[str, Any]]]] = {}


def uninterrupted(
    spark: SparkSession, provider: str, kind: Kind, root: Path
) -> tuple[pa.Table, list[dict[str, Any]]]:
    """One uninterrupted run's sink rows and progress, per provider and kind (shared by the
    tests that compare with it)."""
    if (provider, kind.name) not in _RUNS:
        run = root / f"uninterrupted-{provider}-{kind.name}"
        write_files(FRAMES, run / "in")
        query = start_to_parquet(
            spark, kind, run / "in", run / "out", run / "checkpoint", availableNow=True
        )
        query.awaitTermination()
        _RUNS[(provider, kind.name)] = (sink_rows(spark, run / "out"), query.recentProgress)
    return _RUNS[(provider, kind.name)]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_final_windows_equal_the_batch_adapter(
    spark: SparkSession, provider: str, kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    k = KINDS[kind]
    got, progress = uninterrupted(spark, provider, k, tmp_path_factory.getbasetemp())
    with_data = [p for p in progress if p["numInputRows"] > 0]
    assert len(with_data) >= 10
    want = batch_result(spark, k)
    assert want.num_rows > 40
    assert_same_windows(got, want, k.by)
    metrics = [p["observedMetrics"]["windowstore"] for p in progress]
    assert sum(m["windows"] for m in metrics) == want.num_rows
    assert all(m["rejected_late"] == 0 for m in metrics)
    # Windows come out as the watermark passes them, spread over the micro-batches.
    assert sum(1 for m in metrics if m["windows"] > 0) >= 5


@dataclass(frozen=True)
class Restart:
    """A query of ``kind`` that runs again from its checkpoint, and what it must end with: an
    uninterrupted run's rows, ``want``."""

    spark: SparkSession
    kind: Kind
    want: pa.Table
    source: Path
    sink: Path
    checkpoint: Path

    def resume(self) -> None:
        """Runs the query from its checkpoint over all the data available."""
        start_to_parquet(
            self.spark, self.kind, self.source, self.sink, self.checkpoint, availableNow=True
        ).awaitTermination()

    def assert_uninterrupted(self) -> None:
        """The sink holds exactly the windows of the uninterrupted run."""
        assert_same_windows(sink_rows(self.spark, self.sink), self.want, self.kind.by)


def restart(spark: SparkSession, provider: str, kind: str, tmp_path: Path) -> Restart:
    """A query of ``KINDS[kind]`` to restart, its folders in ``tmp_path``."""
    k = KINDS[kind]
    want, _ = uninterrupted(spark, provider, k, tmp_path.parent.parent)
    return Restart(spark, k, want, tmp_path / "in", tmp_path / "out", tmp_path / "checkpoint")


def test_restart_from_the_checkpoint_after_a_clean_stop(
    spark: SparkSession, provider: str, tmp_path: Path
) -> None:
    run = restart(spark, provider, "fixed_gap", tmp_path)
    write_files(FRAMES[:5], run.source)
    run.resume()
    first = sink_rows(spark, run.sink).num_rows
    assert 0 < first < run.want.num_rows
    write_files(FRAMES[5:], run.source, first=5)
    run.resume()
    run.assert_uninterrupted()


def test_restart_after_the_driver_is_killed(
    spark: SparkSession, provider: str, tmp_path: Path
) -> None:
    run = restart(spark, provider, "sliding", tmp_path)
    write_files(FRAMES, run.source)
    job = Path(__file__).with_name("streams.py")
    command = [sys.executable, str(job), run.kind.name, str(run.source), str(run.sink),
               str(run.checkpoint), PROVIDERS[provider] or "default"]  # fmt: skip
    done = kill_after_commits(command, run.checkpoint, 4, tmp_path / "job.log")
    assert done < len(FRAMES), "the driver finished before it was killed"
    run.resume()
    assert committed(run.checkpoint) > done
    run.assert_uninterrupted()


@pytest.mark.parametrize("kind", ["fixed_gap", "sliding"])
def test_updates_replay_to_the_final_windows(
    spark: SparkSession, provider: str, kind: str, tmp_path: Path
) -> None:
    k = KINDS[kind]
    write_files(FRAMES, tmp_path / "in")
    windows = k.windows(read_stream(spark, tmp_path / "in"), grace=GRACE, emit="updates")
    assert windows.columns[-1] == "op"
    batches: list[tuple[int, list[dict[str, Any]]]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        batches.append((batch_id, [r.asDict() for r in df.collect()]))

    query = (
        windows.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .outputMode("update")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    current: dict[tuple[Any, ...], dict[str, Any]] = {}
    deletes = 0
    for _, rows in sorted(batches, key=lambda b: b[0]):
        for row in rows:
            op = row.pop("op")
            window = (*[row[c] for c in k.by], row[k.by[1].replace("start", "end")])
            if op == "delete":
                deletes += 1
                assert current.pop(window, None) is not None, f"delete of an unknown {window}"
            else:
                current[window] = row
    assert deletes > 0 or kind == "sliding"
    got = pa.Table.from_pylist([r for r in current.values() if r["k"] != SENTINEL])
    want = batch_result(spark, k)
    assert_same_windows(got.select(want.column_names).cast(want.schema), want, k.by)


def small_stream(spark: SparkSession, folder: Path) -> DataFrame:
    """Three micro-batches: a late record (``a`` 50 s behind) and a null key in the second;
    ``seen``, a second timestamp, is each record's time plus an hour."""
    base = 1_700_000_000_000
    files: list[list[tuple[str | None, int, int]]] = [
        [("a", base, 1), ("b", base, 2)],
        [("a", base + 100_000, 3), ("a", base - 50_000, 4), (None, base + 1, 5)],
        [("c", base + 500_000, 6)],
    ]
    frames = []
    for rows in files:
        frame = pd.DataFrame(rows, columns=["k", "ts", "x"])
        ts = pd.to_datetime(frame["ts"], unit="ms", utc=True).astype("datetime64[us, UTC]")
        seen = (ts + pd.Timedelta(hours=1)).astype("datetime64[us, UTC]")
        frames.append(frame.assign(ts=ts, seen=seen))
    write_files(frames, folder)
    return read_stream(spark, folder, "k string, ts timestamp, x long, seen timestamp")


@pytest.fixture
def kolkata(spark: SparkSession) -> Iterator[None]:
    """A session time zone that is not UTC: timestamps must not shift on their way."""
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    yield
    spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_late_and_invalid_records_are_counted_and_returned(
    spark: SparkSession, tmp_path: Path, kolkata: None
) -> None:
    windows, rejected = session_windows(
        small_stream(spark, tmp_path / "in"), key="k", time="ts", gap="30s", grace="10s",
        aggs=[agg.count(), agg.max("seen")], on_invalid="drop", return_rejected=True,
        name="clicks",
    )  # fmt: skip
    queries = to_memory({"ws_windows": windows, "ws_rejected": rejected}, tmp_path)
    metrics = [p["observedMetrics"]["clicks"] for p in queries[0].recentProgress]
    assert sum(m["rejected_late"] for m in metrics) == 1
    assert sum(m["rejected_null_key"] for m in metrics) == 1
    assert spark.table("ws_rejected").columns == ["k", "ts", "x", "seen", "reason"]
    got = spark.sql(
        "select k, x, reason, unix_micros(seen) - unix_micros(ts) from ws_rejected order by x"
    ).collect()
    hour = 3_600_000_000
    assert [tuple(r) for r in got] == [("a", 4, "late", hour), (None, 5, "null_key", hour)]
    rows = spark.sql(
        "select k, count, unix_micros(max_seen) - unix_micros(session_end) from ws_windows"
    ).collect()
    assert sorted(r[0] for r in rows) == ["a", "a", "b"]
    assert all(r[2] == hour for r in rows)
    # Every record is in a window or rejected; c's session stays open (nothing closes it).
    assert sum(r[1] for r in rows) + len(got) == 6 - 1


def test_a_timestamp_key_comes_back_as_a_timestamp(spark: SparkSession, tmp_path: Path) -> None:
    windows = session_windows(
        small_stream(spark, tmp_path / "in"), key=["k", "seen"], time="ts", gap="30s",
        grace="10s", aggs=[agg.count(), agg.collect_all("seen")], on_invalid="drop",
    )  # fmt: skip
    to_memory({"ws_ts_key": windows}, tmp_path)
    table = spark.table("ws_ts_key")
    types = dict(table.dtypes)
    assert types["seen"] == "timestamp"
    assert types["collect_all_seen"] == "array<timestamp>"
    rows = table.select("k", "seen", "session_start", "collect_all_seen").collect()
    assert rows
    for r in rows:
        assert r["seen"] - r["session_start"] == pd.Timedelta(hours=1)
        assert r["collect_all_seen"] == [r["seen"]]


def test_an_invalid_record_fails_the_query_by_default(spark: SparkSession, tmp_path: Path) -> None:
    windows = session_windows(
        small_stream(spark, tmp_path / "in"), key="k", time="ts", gap="30s", grace="10s"
    )
    query = (
        windows.writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(StreamingQueryException, match="null_key"):
        query.awaitTermination()


def test_a_restart_with_other_parameters_fails_loudly(spark: SparkSession, tmp_path: Path) -> None:
    write_files(FRAMES[:3], tmp_path / "in")
    k = KINDS["fixed_gap"]
    start_to_parquet(
        spark, k, tmp_path / "in", tmp_path / "out", tmp_path / "ck", availableNow=True
    ).awaitTermination()
    write_files(FRAMES[3:4], tmp_path / "in", first=3)
    for changed in ({"gap": "31s"}, {"gap": "30s", "buckets": 3}):
        other = Kind("other", changed)
        query = start_to_parquet(
            spark, other, tmp_path / "in", tmp_path / "out", tmp_path / "ck", availableNow=True
        )
        with pytest.raises(StreamingQueryException, match="other parameters"):
            query.awaitTermination()


@pytest.fixture
def stream(spark: SparkSession, tmp_path: Path) -> DataFrame:
    write_files(FRAMES[:1], tmp_path / "in")
    return read_stream(spark, tmp_path / "in")


def test_a_stream_needs_grace_or_a_watermark(stream: DataFrame) -> None:
    with pytest.raises(InvalidWindowSpec, match="withWatermark") as e:
        session_windows(stream, key="k", time="ts", gap="30s")
    assert e.value.parameter == "grace"
    # A watermark on the time column is the event-time basis, and its delay the grace.
    marked = stream.withWatermark("ts", "20 seconds")
    assert marked.isStreaming
    assert session_windows(marked, key="k", time="ts", gap="30s").isStreaming
    with pytest.raises(InvalidWindowSpec, match="watermark delay of 20000 ms") as e:
        session_windows(marked, key="k", time="ts", gap="30s", grace="5s")
    assert e.value.parameter == "grace"


def test_a_watermark_on_another_column_is_refused(stream: DataFrame) -> None:
    other = stream.withColumn("at", stream.ts)
    other = other.withWatermark("at", "1 minute")
    with pytest.raises(SchemaError, match='watermark is on "at"') as e:
        sliding_windows(other, key="k", time="ts", time_difference="1m", grace="1m")
    assert e.value.column == "at"


@pytest.mark.parametrize(
    ("kwargs", "parameter", "message"),
    [
        ({"emit": "changes"}, "emit", "output mode update"),
        ({"grace": "-1s"}, "grace", ">= 0"),
        ({"grace": "1500us"}, "grace", "whole milliseconds"),
        ({"buckets": 0}, "buckets", "positive int"),
        ({"gap": "0s"}, "gap", "gap"),
        ({"aggs": [agg.sum("nope")]}, "nope", "nope"),
    ],
)
def test_bad_parameters_fail_when_the_query_is_defined(
    stream: DataFrame, kwargs: dict[str, Any], parameter: str, message: str
) -> None:
    call: dict[str, Any] = {"key": "k", "time": "ts", "gap": "30s", "grace": "10s", **kwargs}
    with pytest.raises((InvalidWindowSpec, SchemaError), match=message) as e:
        session_windows(stream, **call)
    named = getattr(e.value, "parameter", None) or getattr(e.value, "column", None)
    assert named == parameter


def test_a_stream_needs_a_timestamp_time_column(spark: SparkSession, stream: DataFrame) -> None:
    longs = stream.withColumn("ts", stream.x)
    with pytest.raises(SchemaError, match="timestamp_millis") as e:
        session_windows(longs, key="k", time="ts", gap=30, grace=10)
    assert e.value.column == "ts"


def test_updates_need_a_stream(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1)], "k string, t long")
    with pytest.raises(InvalidWindowSpec, match="needs a streaming DataFrame") as e:
        session_windows(df, key="k", time="t", gap=10, emit="updates")
    assert e.value.parameter == "emit"


@pytest.mark.parametrize("adapter", [session_windows, sliding_windows])
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("grace", "10s"),
        ("buckets", 4),
        ("name", "clicks"),
        ("idle_timeout", "1m"),
        ("emit", "updates"),
    ],
)
def test_a_batch_refuses_each_streaming_option_by_name(
    spark: SparkSession, adapter: Any, option: str, value: object
) -> None:
    """Streaming-only options on a batch DataFrame are refused, never ignored."""
    df = spark.createDataFrame([("a", 1)], "k string, t long")
    window = {"gap": 10} if adapter is session_windows else {"time_difference": 10}
    with pytest.raises(InvalidWindowSpec, match="needs a streaming DataFrame") as e:
        adapter(df, key="k", time="t", **window, **{option: value})
    assert e.value.parameter == option


@pytest.mark.parametrize("adapter", [session_windows, sliding_windows])
@pytest.mark.parametrize(("option", "value"), [("partitions", 4), ("time_unit", "ms")])
def test_a_stream_refuses_each_batch_option_by_name(
    stream: DataFrame, adapter: Any, option: str, value: object
) -> None:
    window = {"gap": "30s"} if adapter is session_windows else {"time_difference": "30s"}
    with pytest.raises(InvalidWindowSpec, match="batch DataFrames only") as e:
        adapter(stream, key="k", time="ts", grace="10s", **window, **{option: value})
    assert e.value.parameter == option


PARTITIONS = "spark.sql.shuffle.partitions"


@pytest.fixture
def spark_default_partitions(spark: SparkSession) -> Iterator[SparkSession]:
    """The session with spark.sql.shuffle.partitions left at Spark's default."""
    before = spark.conf.get(PARTITIONS)
    assert before is not None
    spark.conf.unset(PARTITIONS)
    yield spark
    spark.conf.set(PARTITIONS, before)


def test_a_local_session_at_the_default_partitions_gets_its_parallelism(
    spark_default_partitions: SparkSession, stream: DataFrame
) -> None:
    """Spark's Python stateful operators run a task per state partition in every micro-batch:
    200 of them make a small local stream slow (benches/bench_small_stream.py)."""
    spark = spark_default_partitions
    with pytest.raises(InvalidWindowSpec):  # a call that raises changes nothing
        session_windows(stream, key="k", time="ts", gap="0s", grace="10s")
    assert spark.conf.get(PARTITIONS) == "200"
    session_windows(stream, key="k", time="ts", gap="30s", grace="10s")
    assert spark.conf.get(PARTITIONS) == str(spark.sparkContext.defaultParallelism)


def test_a_session_that_chose_its_partitions_keeps_them(
    spark: SparkSession, stream: DataFrame
) -> None:
    spark.conf.set(PARTITIONS, "3")
    try:
        session_windows(stream, key="k", time="ts", gap="30s", grace="10s")
        assert spark.conf.get(PARTITIONS) == "3"
    finally:
        spark.conf.set(PARTITIONS, "4")
