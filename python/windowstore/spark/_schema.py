"""Driver-side checks: Spark schemas as Arrow schemas, and the engines' output types for Spark.

Everything here runs on the driver before any Spark job: a missing column, an unusable type or a
bad parameter raises the package's own exception (naming the column or parameter) at the call,
not inside an executor later. The engines validate an empty table of the input's Arrow schema,
so the driver applies exactly the rules the executors will.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from windowstore.agg import Agg
from windowstore.exceptions import InvalidWindowSpec, SchemaError

__all__ = [
    "arrow_schema",
    "check_markers",
    "check_time",
    "in_spark_terms",
    "keys",
    "spark_schema",
    "used_columns",
]

_TIME_TYPES = (TimestampType, TimestampNTZType, ByteType, ShortType, IntegerType, LongType)
#: The Spark types an engine's type error lists as accepted, if the engine takes them there.
_CANDIDATES: tuple[DataType, ...] = (
    ByteType(),
    ShortType(),
    IntegerType(),
    LongType(),
    FloatType(),
    DoubleType(),
    DecimalType(10, 2),
    StringType(),
    BinaryType(),
    BooleanType(),
    DateType(),
    TimestampType(),
    TimestampNTZType(),
    DayTimeIntervalType(),
)
#: An engine's type error: ``type <Arrow type> <what it cannot do>; <Arrow types it takes>``.
_TYPE_ERROR = re.compile(
    r"type (?P<arrow>.+?) (?P<what>(?:cannot be|has no|is not supported by|is not) [^;]*)"
)


def keys(df: DataFrame, key: str | Column | Sequence[str | Column]) -> list[str]:
    """The key column names as a list (one name or column, or a non-empty sequence of them)."""
    if isinstance(key, (str, Column)):
        return [column_name(df, key, "key")]
    names = list(key)
    if not names or not all(isinstance(k, (str, Column)) for k in names):
        raise TypeError(f"key must be a column name or a non-empty list of names, not {key!r}")
    return [column_name(df, k, "key") for k in names]


def column_name(df: DataFrame, given: str | Column, parameter: str) -> str:
    """The name of column ``given``: a name, or a Column that only refers to a column of
    ``df`` (``F.col("user_id")``, ``df.user_id``); any other expression is refused, naming
    ``parameter``."""
    if not isinstance(given, Column):
        return given
    text = str(given)
    inner = text[len("Column<'") : -len("'>")] if text.startswith("Column<'") else text
    try:
        name = df.select(given).schema.fields[0].name
    except Exception:  # not resolvable against df: not one of its columns
        name = None
    quoted = None if name is None else "`" + name.replace("`", "``") + "`"
    if name is None or name not in df.columns or inner not in (name, quoted):
        raise InvalidWindowSpec(
            f"invalid {parameter}: {text} is not a column of the DataFrame; pass a column name "
            f'({parameter}="user_id"), and compute an expression into a column first '
            f'(df.withColumn("name", expression))',
            parameter,
        )
    return name


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


def check_markers(df: DataFrame, markers: dict[str, str]) -> None:
    """Refuses a session marker column (``markers``: parameter to column name) that is missing
    or not a boolean (or Spark's ``void``, all null, which the engine takes too), in Spark's
    words: the engine's own error would name the column's Arrow type."""
    for parameter, name in markers.items():
        dt = field(df, name).dataType
        if not isinstance(dt, BooleanType | NullType):
            raise SchemaError(
                f'{parameter} column "{name}" is {dt.simpleString()}; give a boolean column '
                "(true marks the record; null is false)",
                name,
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


def engine_arrow_type(dt: DataType) -> pa.DataType:
    """The Arrow type a batch engine sees for Spark type ``dt``."""
    return to_arrow_type(dt, timezone="UTC")


def in_spark_terms(
    df: DataFrame,
    schema: pa.Schema,
    check: Callable[[pa.Schema], object],
    arrow_of: Callable[[DataType], pa.DataType] = engine_arrow_type,
) -> None:
    """Runs ``check`` (an engine call on an empty table) on ``schema``, the Arrow form of
    columns of ``df``; an engine's type error about one of them is raised again in Spark's
    terms: the column's Spark type and the Spark types the engine takes there (found by running
    ``check`` with each candidate, ``arrow_of`` giving its Arrow form)."""
    try:
        check(schema)
    except SchemaError as e:
        name = e.column
        found = _TYPE_ERROR.search(str(e))
        if name is None or name not in schema.names or found is None:
            raise
        spark_type = field(df, name).dataType.simpleString()
        at = schema.get_field_index(name)
        taken = []
        for candidate in _CANDIDATES:
            try:
                arrow = arrow_of(candidate)
            except Exception:  # no Arrow form in this PySpark
                continue
            if _passes(check, schema.set(at, pa.field(name, arrow)), name):
                label = "decimal(p,s)" if isinstance(candidate, DecimalType) else None
                taken.append(label or candidate.simpleString())
        listed = ", ".join(taken) if taken else "none of Spark's atomic types"
        raise SchemaError(
            f'column "{name}": type {spark_type} {found["what"]}; Spark types taken here: {listed}',
            name,
        ) from None


def _passes(check: Callable[[pa.Schema], object], schema: pa.Schema, name: str) -> bool:
    """Whether ``check`` takes ``schema`` as far as column ``name`` goes."""
    try:
        check(schema)
    except SchemaError as e:
        return e.column != name
    except Exception:  # another parameter's error: the column's type is not at fault
        return True
    return True
