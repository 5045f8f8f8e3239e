"""Bad input is refused on the driver before any Spark job, naming the column or parameter;
unusable rows are never lost silently."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import windowstore
from windowstore import InvalidWindowSpec, SchemaError, agg
from windowstore.spark import session_windows

from .compare import assert_same_windows

pytestmark = pytest.mark.spark


@pytest.fixture
def df(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [("a", 0, 1.0, "x", 5), ("a", 5, 2.0, "y", 5), ("b", 1, 3.0, "z", 5)],
        "user string, ts long, amount double, label string, g long",
    )


@pytest.fixture
def no_job(spark: SparkSession) -> Iterator[None]:
    """Asserts that the test body starts no Spark job."""
    sc = spark.sparkContext
    sc.setJobGroup("windowstore-no-job", "checks must not start jobs")
    yield
    jobs = sc.statusTracker().getJobIdsForGroup("windowstore-no-job")
    sc.setJobGroup("other", "after the check")
    assert list(jobs) == []


def raises_naming(error: type[Exception], attr: str, name: str, call: Callable[[], Any]) -> None:
    with pytest.raises(error) as info:
        call()
    assert getattr(info.value, attr) == name
    assert name in str(info.value)


@pytest.mark.usefixtures("no_job")
@pytest.mark.parametrize(
    ("kwargs", "column"),
    [
        ({"key": "nobody", "time": "ts", "gap": 10}, "nobody"),
        ({"key": "user", "time": "when", "gap": 10}, "when"),
        ({"key": "user", "time": "ts", "gap": 10, "aggs": [agg.sum("missing")]}, "missing"),
        ({"key": "user", "time": "ts", "gap": 10, "aggs": [agg.sum("label")]}, "label"),
        ({"key": "user", "time": "label", "gap": 10}, "label"),
        ({"key": "user", "time": "amount", "gap": 10}, "amount"),
        ({"key": "user", "time": "ts", "gap_column": "nogap", "max_gap": 10}, "nogap"),
        ({"key": "user", "time": "ts", "gap_column": "label", "max_gap": 10}, "label"),
    ],
)
def test_schema_errors_name_the_column(df: DataFrame, kwargs: dict[str, Any], column: str) -> None:
    raises_naming(SchemaError, "column", column, lambda: session_windows(df, **kwargs))


def test_a_string_time_column_says_to_parse_it(df: DataFrame) -> None:
    with pytest.raises(SchemaError, match="to_timestamp"):
        session_windows(df, key="user", time="label", gap=10)


@pytest.mark.usefixtures("no_job")
@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"gap": "thirty minutes-ish"}, "gap"),
        ({"gap": "5 fortnights"}, "gap"),
        ({"gap": 0}, "gap"),
        ({"gap": "1.5ms", "time_unit": "ms"}, "gap"),
        ({"gap_column": "g", "max_gap": "soon"}, "max_gap"),
        ({"gap_column": "g"}, "max_gap"),
        ({"gap": 10, "gap_column": "g", "max_gap": 10}, "gap"),
        ({}, "gap"),
        ({"gap": 10, "on_invalid": "ignore"}, "on_invalid"),
        ({"gap": 10, "partitions": 0}, "partitions"),
        ({"gap": 10, "aggs": ["count"]}, "aggs"),
        ({"gap": 10, "aggs": [agg.count(), agg.count()]}, "aggs"),
    ],
)
def test_invalid_parameters_name_the_parameter(
    df: DataFrame, kwargs: dict[str, Any], parameter: str
) -> None:
    raises_naming(
        InvalidWindowSpec,
        "parameter",
        parameter,
        lambda: session_windows(df, key="user", time="ts", **kwargs),
    )


def test_rejected_rows_are_returned_with_their_reason(spark: SparkSession) -> None:
    df = spark.createDataFrame(
        [("a", 0, 5), (None, 1, 5), ("a", None, 5), ("a", 2, None), ("a", 3, -1), ("b", 4, 5)],
        "user string, ts long, g long",
    ).repartition(2)
    kw: dict[str, Any] = dict(key="user", time="ts", gap_column="g", max_gap=10, aggs=[agg.count()])
    windows, rejected = session_windows(df, **kw, on_invalid="drop", return_rejected=True)
    # The complete-data engine's windows and rejected rows, whatever the partitions.
    want, want_rejected = windowstore.session_windows(
        df.toArrow(), **kw, on_invalid="drop", return_rejected=True
    )
    assert_same_windows(windows.toArrow(), want, ["user", "session_start"])
    assert_same_windows(rejected.toArrow(), want_rejected, ["ts", "g"])
    assert sorted((r.user, r.session_start, r["count"]) for r in windows.collect()) == [
        ("a", 0, 1),
        ("b", 4, 1),
    ]
    assert rejected.columns == ["user", "ts", "g", "reason"]
    reasons = {r.reason: r.asDict() for r in rejected.collect()}
    assert sorted(reasons) == ["invalid_gap", "null_key", "null_time"]
    assert rejected.groupBy("reason").count().where("reason = 'invalid_gap'").first()[1] == 2  # type: ignore[index]
    assert reasons["null_key"]["ts"] == 1


def test_by_default_an_unusable_row_fails_the_job_naming_its_problem(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 0), (None, 7)], "user string, ts long")
    windows = session_windows(df, key="user", time="ts", gap=10)
    with pytest.raises(Exception, match="null_key") as info:
        windows.collect()
    assert "on_invalid='drop'" in str(info.value)


def test_timestamps_from_spark_sql(spark: SparkSession) -> None:
    df = spark.sql(
        "SELECT * FROM VALUES ('a', TIMESTAMP'2024-01-01 00:00:00'), "
        "('a', TIMESTAMP'2024-01-01 00:20:00'), ('a', TIMESTAMP'2024-01-01 02:00:00') AS t(u, ts)"
    )
    out = session_windows(df, key="u", time="ts", gap="30m", aggs=[agg.count()])
    assert dict(out.dtypes)["session_start"] == "timestamp"
    rows = sorted(out.select(F.col("count"), F.minute("session_end").alias("m")).collect())
    assert [(r["count"], r.m) for r in rows] == [(1, 0), (2, 20)]


def test_importing_windowstore_does_not_import_pyspark() -> None:
    code = "import sys, windowstore; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_arrow_types_without_a_spark_form_name_the_column(spark: SparkSession) -> None:
    df = spark.createDataFrame(pa.table({"u": ["a"], "ts": [1]})).withColumn(
        "m", F.create_map(F.lit("k"), F.lit(1))
    )
    raises_naming(
        SchemaError,
        "column",
        "m",
        lambda: session_windows(df, key="m", time="ts", gap=10),
    )


def test_batch_workers_need_no_pandas() -> None:
    # Executors of batch jobs import windowstore.spark to run its Arrow functions; only streams
    # need pandas (and protobuf), so a batch-only cluster environment may lack them.
    code = (
        "import sys, windowstore.spark, windowstore.spark._udf; "
        "assert 'pandas' not in sys.modules and 'google.protobuf' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
