"""Sessions with a maximum duration on Spark batch DataFrames (the rows shuffled whole by key)
against windowstore's complete mode on the same rows. The streaming path runs in
test_spark_streaming.py (kind ``max_duration``) against this batch path."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import windowstore
from windowstore import agg
from windowstore.spark import session_windows

from .conftest import sort_rows, to_spark

pytestmark = pytest.mark.spark

AGGS = [agg.count(), agg.collect("x"), agg.first("x"), agg.sum("x")]


def rows() -> pa.Table:
    """Dense records of 6 keys (a session would run for the whole table without the cap), out
    of time order, with a few invalid rows."""
    n = 600
    return pa.table(
        {
            "k": [None if i % 97 == 0 else f"k{i % 6}" for i in range(n)],
            "ts": pa.array([(i * 53) % 3000 for i in range(n)], pa.int64()),
            "x": pa.array([i for i in range(n)], pa.int64()),
        }
    )


def test_batch_sessions_equal_complete_mode(spark: SparkSession) -> None:
    t = rows()
    kwargs: dict[str, Any] = dict(key="k", time="ts", gap=40, max_duration=250, on_invalid="drop")
    got, rejected = session_windows(to_spark(spark, t), aggs=AGGS, return_rejected=True, **kwargs)
    want, want_rejected = windowstore.session_windows(t, aggs=AGGS, return_rejected=True, **kwargs)
    # The cap cuts: without it each key would be one session.
    assert want.num_rows > 6 * 3000 // 250
    by = ["k", "session_start"]
    assert sort_rows(got.toArrow(), by).to_pylist() == sort_rows(want, by).to_pylist()
    assert sorted(r["x"] for r in rejected.collect()) == sorted(
        want_rejected.column("x").to_pylist()
    )


def test_tagged_rows_equal_complete_mode(spark: SparkSession) -> None:
    t = rows().filter(pa.compute.is_valid(rows().column("k")))
    kwargs: dict[str, Any] = dict(key="k", time="ts", gap=40, max_duration=250, output="records")
    got = session_windows(to_spark(spark, t), **kwargs).toArrow()
    want = windowstore.session_windows(t, **kwargs)
    by = ["k", "ts", "x"]
    assert sort_rows(got, by).to_pylist() == sort_rows(want, by).to_pylist()
