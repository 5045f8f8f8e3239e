"""Driver-side checks: Spark schemas as Arrow schemas, and the engines' output types for Spark.

Everything here runs on the driver before any Spark job: a missing column, an unusable type or a
bad parameter raises the package's own exception (naming the column or parameter) at the call,
not inside an executor later. The engines validate an empty table of the input's Arrow schema,
so the driver applies exactly the rules the executors will.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
from pyspark.sql.types import (
    ByteType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from windowstore.agg import Agg
from windowstore.exceptions import SchemaError

__all__ = ["arrow_schema", "check_time", "keys", "spark_schema", "used_columns"]

_TIME_TYPES = (TimestampType, TimestampNTZType, ByteType, ShortType, IntegerType, LongType)


def keys(key: str | Sequence[str]) -> list[str]:
    """The key column names as a list (one name, or a non-empty sequence of names)."""
    if isinstance(key, str):
        return [key]
    names = list(key)
    if not names or not all(isinstance(k, str) for k in names):
        raise TypeError(f"key must be a column name or a non-empty list of names, not {key!r}")
    return names


def used_columns(
    key: list[str], time: str | None, extra: Iterable[str | None], aggs: Sequence[Agg]
) -> list[str]:
    """The input columns a window function reads, each once, in a stable order."""
    names: list[str] = []
    read = [c for a in aggs if isinstance(a, Agg) for c in a.input_columns]
    for name in [*key, time, *extra, *read]:
        if name is not None and name not in names:
            names.append(name)
    return names


def field(df: DataFrame, name: str) -> StructField:
    """The field ``name`` of ``df`` (exact spelling), or a SchemaError naming it."""
    for f in df.schema.fields:
        if f.name == name:
            return f
    have = ", ".join(f.name for f in df.schema.fields)
    raise SchemaError(f'column "{name}": no such column; the DataFrame has {have}', name)


def check_time(df: DataFrame, time: str) -> None:
    """Refuses a time column that is not a timestamp or an integer, with a hint for strings."""
    dt = field(df, time).dataType
    if isinstance(dt, StringType):
        raise SchemaError(
            f'column "{time}": the time column is a string; parse it into a timestamp first '
            f"(pyspark.sql.functions.to_timestamp) or give integer epoch ticks",
            time,
        )
    if not isinstance(dt, _TIME_TYPES):
        raise SchemaError(
            f'column "{time}": type {dt.simpleString()} cannot be a time column; use a '
            f"timestamp, timestamp_ntz or an integer of epoch ticks",
            time,
        )


def arrow_schema(df: DataFrame, names: Sequence[str]) -> pa.Schema:
    """The Arrow schema of columns ``names`` of ``df``, as executors will see them."""
    fields = []
    for name in names:
        f = field(df, name)
        try:
            arrow_type = to_arrow_type(f.dataType, timezone="UTC")
        except Exception as e:  # pyspark raises its own error classes for unsupported types
            raise SchemaError(
                f'column "{name}": type {f.dataType.simpleString()} has no Arrow form: {e}', name
            ) from e
        fields.append(pa.field(name, arrow_type, f.nullable))
    return pa.schema(fields)


def spark_schema(arrow: pa.Schema) -> StructType:
    """The Spark schema of an engine's output (tz-aware timestamps: TimestampType; naive:
    TimestampNTZType; lists: arrays)."""
    return StructType(
        [
            StructField(f.name, from_arrow_type(f.type, prefer_timestamp_ntz=True), True)
            for f in arrow
        ]
    )
