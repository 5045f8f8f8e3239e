"""A user-defined aggregate whose output name is taken (by another aggregate, a key column or a
window column) is refused on the driver, before any job, by every Spark entry point, as the
local API refuses it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from windowstore import InvalidWindowSpec, agg
from windowstore.spark import session_windows, sliding_windows

from .streams import GRACE, read_stream

pytestmark = pytest.mark.spark

UDF = agg.udf(len, "x", returns=pa.int64())


def batch(spark: SparkSession, _tmp: Path) -> DataFrame:
    return spark.createDataFrame([("a", 0, 1)], "k string, ts long, x long")


def stream(spark: SparkSession, tmp: Path) -> DataFrame:
    (tmp / "in").mkdir()
    return read_stream(spark, tmp / "in")


CALLS: dict[str, Callable[[DataFrame, list[agg.Agg]], Any]] = {
    "sessions": lambda df, aggs: session_windows(df, key="k", time="ts", gap=10, aggs=aggs),
    "capped": lambda df, aggs: session_windows(
        df, key="k", time="ts", gap=10, max_duration=100, aggs=aggs
    ),
    "sliding": lambda df, aggs: sliding_windows(
        df, key="k", time="ts", time_difference=10, aggs=aggs
    ),
    "stream-sessions": lambda df, aggs: session_windows(
        df, key="k", time="ts", gap="10s", grace=GRACE, aggs=aggs
    ),
    "stream-sliding": lambda df, aggs: sliding_windows(
        df, key="k", time="ts", time_difference="10s", grace=GRACE, aggs=aggs
    ),
}


@pytest.mark.parametrize(
    ("aggs", "message"),
    [
        ([UDF, UDF], 'duplicate output name "udf_x"'),
        ([agg.count(), UDF.alias("count")], 'duplicate output name "count"'),
        ([UDF.alias("k")], 'output column "k" appears twice'),
    ],
)
@pytest.mark.parametrize("call", list(CALLS))
def test_a_udf_name_taken_is_refused_before_any_job(
    spark: SparkSession, tmp_path: Path, call: str, aggs: list[agg.Agg], message: str
) -> None:
    df = (stream if call.startswith("stream") else batch)(spark, tmp_path)
    with pytest.raises(InvalidWindowSpec, match=message) as e:
        CALLS[call](df, aggs)
    assert e.value.parameter == "aggs"
