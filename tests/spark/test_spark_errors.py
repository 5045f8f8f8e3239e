"""Errors on Spark DataFrames speak Spark: Spark's type names, columns given as Columns, the
micro-batches a checkpoint holds, and a failed job's root cause in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from windowstore import InvalidWindowSpec, SchemaError, agg
from windowstore.spark import root_cause, session_windows, sliding_windows

from .streams import read_stream, write_files

pytestmark = pytest.mark.spark

SCHEMA = "user string, ts long, label string, amount double, st struct<a:int>, m map<string,int>"
#: Arrow's spellings, which a Spark user never sees.
ARROW_NAMES = ("Utf8", "Struct(", "Map(", "Int32", "Decimal128", "Float64")


@pytest.fixture
def df(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([("a", 0, "x", 1.0, (1,), {"k": 1})], SCHEMA)


@pytest.mark.parametrize("adapter", [session_windows, sliding_windows])
@pytest.mark.parametrize(
    ("kwargs", "column", "spark_type", "what"),
    [
        ({"aggs": [agg.sum("label")]}, "label", "string", "cannot be summed"),
        ({"aggs": [agg.mean("st")]}, "st", "struct<a:int>", "has no mean"),
        ({"aggs": [agg.min("m")]}, "m", "map<string,int>", "min"),
        ({"key": "st"}, "st", "struct<a:int>", "cannot be a key"),
    ],
)
def test_type_errors_name_spark_types(
    df: DataFrame, adapter: Any, kwargs: dict[str, Any], column: str, spark_type: str, what: str
) -> None:
    window = {"gap": 10} if adapter is session_windows else {"time_difference": 10}
    with pytest.raises(SchemaError) as e:
        adapter(df, **{"key": "user", "time": "ts", **window, **kwargs})
    message = str(e.value)
    assert e.value.column == column
    assert f'column "{column}": type {spark_type} ' in message
    assert what in message
    assert not [name for name in ARROW_NAMES if name in message], message


def test_a_gap_column_error_lists_the_spark_types_taken(df: DataFrame) -> None:
    with pytest.raises(SchemaError) as e:
        session_windows(df, key="user", time="ts", gap_column="label", max_gap=10)
    assert "type string cannot be a gap column" in str(e.value)
    assert "bigint" in str(e.value)
    assert "interval day to second" in str(e.value)


def test_a_stream_type_error_names_spark_types(spark: SparkSession, tmp_path: Path) -> None:
    write_files([], tmp_path / "in")
    stream = read_stream(spark, tmp_path / "in", "k string, ts timestamp, x long, s string")
    with pytest.raises(SchemaError) as e:
        session_windows(stream, key="k", time="ts", gap="1m", grace="1m", aggs=[agg.sum("s")])
    assert 'column "s": type string cannot be summed' in str(e.value)
    assert "Utf8" not in str(e.value)


def test_a_key_given_as_a_column(df: DataFrame) -> None:
    by_name = session_windows(df, key="user", time="ts", gap=10, aggs=[agg.count()])
    for key in (F.col("user"), df.user, df["user"], [F.col("user")]):
        by_column = session_windows(df, key=key, time=F.col("ts"), gap=10, aggs=[agg.count()])
        assert by_column.collect() == by_name.collect()
        assert sliding_windows(df, key=key, time="ts", time_difference=10).columns[0] == "user"


@pytest.mark.parametrize(
    "expression",
    [
        lambda: F.upper("user"),
        lambda: F.col("user").alias("label"),
        lambda: F.col("st.a"),
        lambda: F.col("nobody"),
    ],
)
def test_a_key_expression_is_refused_naming_key(df: DataFrame, expression: Any) -> None:
    key = expression()  # Columns need the session, which the fixture starts
    with pytest.raises(InvalidWindowSpec, match="pass a column name") as e:
        session_windows(df, key=key, time="ts", gap=10)
    assert e.value.parameter == "key"


def test_the_root_cause_of_a_failed_job_is_the_workers_error(spark: SparkSession) -> None:
    nulls = spark.createDataFrame([("a", 0), (None, 1)], "user string, ts long")
    with pytest.raises(Exception) as e:  # noqa: PT011 (whatever PySpark wraps it in)
        session_windows(nulls, key="user", time="ts", gap=10).collect()
    cause = root_cause(e.value)
    assert cause.startswith("InvalidRecordError: "), cause
    assert "null" in cause
    assert "\n" not in cause


def test_the_root_cause_of_a_driver_error_is_its_message(
    spark: SparkSession, tmp_path: Path
) -> None:
    with pytest.raises(Exception) as e:  # noqa: PT011
        spark.read.parquet(str(tmp_path / "nothing")).collect()
    cause = root_cause(e.value)
    assert cause.startswith("Path does not exist: "), cause
    assert "\n" not in cause


#: A bare integer duration per parameter (grace only in streams: a batch has none).
_BARE = [
    (session_windows, {"gap": 1_800_000}, "gap", False),
    (session_windows, {"gap": "30m", "max_duration": 5}, "max_duration", False),
    (sliding_windows, {"time_difference": 60_000}, "time_difference", False),
    (session_windows, {"gap": 1_800_000, "grace": "1m"}, "gap", True),
    (session_windows, {"gap": "30m", "grace": 60_000_000}, "grace", True),
    (session_windows, {"gap": "30m", "max_duration": 5, "grace": "1m"}, "max_duration", True),
    (sliding_windows, {"time_difference": 60_000, "grace": "1m"}, "time_difference", True),
]


def _empty(spark: SparkSession, tmp_path: Path, schema: str, streaming: bool) -> DataFrame:
    """An empty DataFrame of `schema`: a stream over an empty folder, or a batch."""
    if not streaming:
        return spark.createDataFrame([], schema)
    write_files([], tmp_path / "in")
    return read_stream(spark, tmp_path / "in", schema)


@pytest.mark.parametrize(("adapter", "kwargs", "parameter", "streaming"), _BARE)
def test_a_bare_integer_duration_on_a_timestamp_is_refused_before_any_job(
    spark: SparkSession,
    tmp_path: Path,
    adapter: Any,
    kwargs: dict[str, Any],
    parameter: str,
    streaming: bool,
) -> None:
    """A Spark timestamp counts microseconds: gap=1_800_000 would be 1.8 s, not 30 minutes.
    Refused when the DataFrame is defined, batch and stream alike."""
    df = _empty(spark, tmp_path, "k string, ts timestamp, x long", streaming)
    with pytest.raises(InvalidWindowSpec) as e:
        adapter(df, key="k", time="ts", aggs=[agg.count()], **kwargs)
    assert e.value.parameter == parameter
    message = str(e.value)
    assert "bare integer" in message
    assert '"ts"' in message
    assert "timestamp" in message
    assert '"30m"' in message


@pytest.mark.parametrize("streaming", [False, True])
def test_an_integer_gap_column_next_to_a_timestamp_is_refused_before_any_job(
    spark: SparkSession, tmp_path: Path, streaming: bool
) -> None:
    """The workers see a timestamp as epoch microseconds: an integer gap of 30 would be 30 µs.
    Refused when the DataFrame is defined, in Spark's types, batch and stream alike."""
    df = _empty(spark, tmp_path, "k string, ts timestamp, g long", streaming)
    grace = "1m" if streaming else None
    with pytest.raises(SchemaError) as e:
        session_windows(
            df, key="k", time="ts", gap_column="g", max_gap="1h", grace=grace, aggs=[agg.count()]
        )
    message = str(e.value)
    assert '"g"' in message
    assert "bigint" in message
    assert "interval day to second" in message
