"""Marker sessions (``starts_session=`` / ``ends_session=``) on real Spark: a batch DataFrame (the
rows shuffled whole by key, as for max_duration) and a Structured Streaming query whose records
arrive out of order within the grace, against windowstore's complete mode on the same rows. The
definition itself is checked against a brute-force model in tests/test_marked_sessions.py."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from test_marked_sessions import AGGS, MARKS, random_rows, table

import windowstore
from windowstore.spark import session_windows

from .compare import assert_same_windows
from .conftest import to_spark
from .streams import AGGS as STREAM_AGGS
from .streams import GRACE, SCHEMA, events, read_stream, to_memory, write_files

pytestmark = pytest.mark.spark

#: count, sum, min and max of ``v`` (not collect: Spark's shuffle changes the arrival order, by
#: which collect orders records at equal times).
BATCH_AGGS = AGGS[:4]
BATCH_PARAMS: list[dict[str, Any]] = [
    {"gap": 25, **MARKS},
    {"gap_column": "g", "max_gap": 40, "max_duration": 150, "starts_session": "s"},
    {"gap": 25, "max_duration": 100, "ends_session": "e"},
]


def test_batch_sessions_and_tagged_rows_equal_complete_mode(spark: SparkSession) -> None:
    rows = random_rows(random.Random(52), 2_000, spans=(4_000,), keys=("abcdef",))
    data = table(rows)
    df = to_spark(spark, data)
    for params in BATCH_PARAMS:
        kwargs: dict[str, Any] = {"key": "k", "time": "t", **params}
        got = session_windows(df, aggs=BATCH_AGGS, **kwargs).toArrow()
        want = windowstore.session_windows(data, aggs=BATCH_AGGS, **kwargs)
        assert_same_windows(got, want, ["k", "session_start"])
        tagged = session_windows(df, output="records", **kwargs).toArrow().sort_by("i")
        want_tagged = windowstore.session_windows(data, output="records", **kwargs)
        assert tagged.to_pylist() == want_tagged.sort_by("i").to_pylist()
    # The markers matter here: without them there are fewer sessions.
    unmarked = windowstore.session_windows(data, key="k", time="t", gap=25)
    marked = windowstore.session_windows(data, key="k", time="t", **BATCH_PARAMS[0])
    assert marked.num_rows > unmarked.num_rows + 50


def test_a_stream_out_of_order_within_the_grace_gives_complete_mode(
    spark: SparkSession, tmp_path: Path
) -> None:
    rng = random.Random(9)

    def flags(n: int) -> pd.Series:
        values = [True if rng.random() < 0.1 else rng.choice([False, None]) for _ in range(n)]
        return pd.Series(values, dtype="boolean")

    # The streaming tests' events (each at most the grace behind the largest time before it;
    # the last file's sentinel, far ahead, closes every other session), with markers.
    frames = [f.assign(s=flags(len(f)), e=flags(len(f))) for f in events(9, 5, 60, keys=5)]
    write_files(frames, tmp_path / "in")
    kwargs: dict[str, Any] = {"key": "k", "time": "ts", "gap": "30s", "aggs": STREAM_AGGS}
    stream = read_stream(spark, tmp_path / "in", f"{SCHEMA}, s boolean, e boolean")
    (query,) = to_memory(
        {"marked_sessions": session_windows(stream, grace=GRACE, **kwargs, **MARKS)}, tmp_path
    )
    got = spark.table("marked_sessions").toArrow()
    every = pa.Table.from_pandas(pd.concat(frames[:-1], ignore_index=True), preserve_index=False)
    want = windowstore.session_windows(every, **kwargs, **MARKS)
    assert_same_windows(got, want, ["k", "session_start"])
    assert want.num_rows > windowstore.session_windows(every, **kwargs).num_rows + 20
    metrics = [p["observedMetrics"]["windowstore"] for p in query.recentProgress]
    assert sum(m["rejected_late"] for m in metrics) == 0
    assert sum(m["windows"] for m in metrics) == want.num_rows
