"""Structured Streaming on the real clock, with both state store providers: processing-time
sessions and sliding windows that close through Spark's micro-batches without data while the
source is idle, and event-time streams (both kinds) whose windows an idle source leaves open
closed by ``idle_timeout``. The
waits are generous (the machine is shared); nothing asserts how long anything took."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession

from windowstore import InvalidWindowSpec, agg
from windowstore.spark import session_windows, sliding_windows

from .streams import read_stream, write_files

pytestmark = pytest.mark.spark

BASE_MS = 1_700_000_000_000


def frame(rows: list[tuple[str, int, int]]) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=["k", "ts", "x"])
    out["ts"] = pd.to_datetime(out["ts"], unit="ms", utc=True).astype("datetime64[us, UTC]")
    return out


def wait_for(what: str, done: Callable[[], bool], seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.5)


def first_file(spark: SparkSession, source: Path, rows: list[tuple[str, int, int]]) -> DataFrame:
    """``rows`` written as the first file of ``source``, and ``source`` read as a stream."""
    write_files([frame(rows)], source)
    return read_stream(spark, source, "k string, ts timestamp, x long")


@contextmanager
def running(df: DataFrame, name: str, checkpoint: Path) -> Iterator[Any]:
    """The stream ``df`` running into the memory table ``name`` (a micro-batch every 0.5 s,
    with or without data) until the block ends; yields the query."""
    query = (
        df.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .outputMode("append")
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        yield query
    finally:
        query.stop()


def test_processing_time_sessions_close_while_the_source_is_idle(
    spark: SparkSession, provider: str, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    windows = session_windows(
        first_file(spark, source, [("a", 0, 1), ("b", 0, 2), ("a", 0, 3)]),
        key="k", gap="2s", clock="processing", aggs=[agg.count(), agg.sum("x")],
    )  # fmt: skip
    name = f"ptime_{provider}"
    with running(windows, name, tmp_path / "checkpoint"):
        # No file arrives after the first: only micro-batches without data can close them.
        wait_for("the first sessions", lambda: spark.table(name).count() == 2)
        write_files([frame([("a", 0, 10)])], source, first=1)
        wait_for("the second session of a", lambda: spark.table(name).count() == 3)
    rows = spark.sql(
        f"select k, count, sum_x, session_start, session_end from {name} order by session_start, k"
    ).collect()
    assert [(r.k, r["count"], r.sum_x) for r in rows] == [("a", 2, 4), ("b", 1, 2), ("a", 1, 10)]
    first, _, second = rows
    # Arrival times: the first file's records share a micro-batch, the next file came later
    # (more than the gap later: its session is another one), and both are near the clock.
    assert first.session_start == first.session_end == rows[1].session_start
    assert (second.session_start - first.session_end).total_seconds() > 2
    assert abs(time.time() - second.session_end.timestamp()) < 3600
    assert windows.schema["session_start"].dataType.simpleString() == "timestamp"


def test_an_idle_event_time_stream_closes_its_windows(
    spark: SparkSession, provider: str, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    windows = session_windows(
        first_file(spark, source, [("a", BASE_MS, 1), ("b", BASE_MS + 5_000, 2)]),
        key="k", time="ts", gap="2s", grace="1s", idle_timeout="2s",
        aggs=[agg.count()], name="idle",
    )  # fmt: skip
    name = f"idle_{provider}"
    with running(windows, name, tmp_path / "checkpoint") as query:
        # Without idle_timeout nothing would close: no record ever passes b's session.
        wait_for("the idle windows", lambda: spark.table(name).count() == 2)
        # b again at 5000: not behind Spark's watermark (5000 - 1 s), but behind the advanced
        # stream time (5000 + more than 2 s of idle): late, counted. c is far ahead: accepted.
        write_files([frame([("b", BASE_MS + 5_000, 3), ("c", BASE_MS + 600_000, 4)])], source, 1)
        wait_for("c's window", lambda: spark.table(name).count() == 3)
    got = spark.sql(f"select k, count, unix_millis(session_start) s from {name}").collect()
    assert sorted((r.k, r["count"], r.s - BASE_MS) for r in got) == [
        ("a", 1, 0), ("b", 1, 5_000), ("c", 1, 600_000)
    ]  # fmt: skip
    metrics = [p["observedMetrics"]["idle"] for p in query.recentProgress if p["observedMetrics"]]
    assert sum(m["rejected_late"] for m in metrics) == 1


def test_processing_time_sliding_windows_close_while_the_source_is_idle(
    spark: SparkSession, provider: str, tmp_path: Path
) -> None:
    windows = sliding_windows(
        first_file(spark, tmp_path / "in", [("a", 0, 1), ("b", 0, 2), ("a", 0, 3)]),
        key="k", time_difference="2s", clock="processing", aggs=[agg.count(), agg.sum("x")],
    )  # fmt: skip
    name = f"ptime_sliding_{provider}"
    with running(windows, name, tmp_path / "checkpoint"):
        # One micro-batch's records share an arrival time: one left window per key, which only
        # micro-batches without data can close.
        wait_for("the first windows", lambda: spark.table(name).count() == 2)
    rows = spark.sql(
        f"select k, count, sum_x, window_start, window_end from {name} order by k"
    ).collect()
    assert [(r.k, r["count"], r.sum_x) for r in rows] == [("a", 2, 4), ("b", 1, 2)]
    assert all((r.window_end - r.window_start).total_seconds() == 2 for r in rows)
    assert abs(time.time() - rows[0].window_end.timestamp()) < 3600
    assert windows.schema["window_start"].dataType.simpleString() == "timestamp"


def test_an_idle_event_time_sliding_stream_closes_its_windows(
    spark: SparkSession, provider: str, tmp_path: Path
) -> None:
    windows = sliding_windows(
        first_file(spark, tmp_path / "in", [("a", BASE_MS, 1), ("b", BASE_MS + 5_000, 2)]),
        key="k", time="ts", time_difference="2s", grace="1s", idle_timeout="2s",
        aggs=[agg.count()], name="idle_sliding",
    )  # fmt: skip
    name = f"idle_sliding_{provider}"
    with running(windows, name, tmp_path / "checkpoint"):
        # Without idle_timeout b's window would never close: no record passes it.
        wait_for("the idle windows", lambda: spark.table(name).count() == 2)
    got = spark.sql(f"select k, count, unix_millis(window_end) e from {name}").collect()
    assert sorted((r.k, r["count"], r.e - BASE_MS) for r in got) == [("a", 1, 0), ("b", 1, 5_000)]


def test_wall_clock_options_are_checked_when_the_query_is_defined(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_files([frame([("a", 0, 1)])], tmp_path / "in")
    stream = read_stream(spark, tmp_path / "in", "k string, ts timestamp, x long")
    batch = spark.createDataFrame([("a", 1)], "k string, t long")
    cases: list[tuple[DataFrame, dict[str, Any], str, str]] = [
        (stream, {"clock": "processing", "time": "ts"}, "time", "no time column"),
        (stream, {"clock": "processing", "grace": "1s"}, "grace", "never late"),
        (stream, {"clock": "wall", "time": "ts", "grace": "1s"}, "clock", '"processing"'),
        (stream, {"time": "ts", "grace": "1s", "idle_timeout": "-1s"}, "idle_timeout", "> 0"),
        (stream, {"grace": "1s"}, "time", "needs its time column"),
        (batch, {"clock": "processing"}, "clock", "streaming DataFrame"),
        (batch, {"time": "t", "idle_timeout": "5s"}, "idle_timeout", "streaming DataFrame"),
    ]
    for df, kwargs, parameter, message in cases:
        with pytest.raises(InvalidWindowSpec, match=message) as e:
            session_windows(df, key="k", gap="2s", **kwargs)
        assert e.value.parameter == parameter, kwargs
    for df, kwargs, parameter, message in cases:
        with pytest.raises(InvalidWindowSpec, match=message) as e:
            sliding_windows(df, key="k", time_difference="2s", **kwargs)
        assert e.value.parameter == parameter, kwargs
