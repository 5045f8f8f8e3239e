"""Aggregations of window records, computed in Rust: ``count``, ``sum``, ``min``, ``max``,
``mean``, ``first``, ``last``, ``count_distinct``, bounded ``collect`` and ``collect_all``; and
``udf``, your own Python function over a window's records.

Every aggregate is mergeable, so sessions merge exactly. Nulls in a value column are skipped as
in SQL (except by ``collect_all`` and ``udf``, which see every record); ``count`` counts
records. ``first``/``last`` go by event time, ties by arrival.

Examples:
    >>> from windowstore import agg
    >>> [a.output_name for a in (agg.count(), agg.sum("amount"), agg.max("amount").alias("top"))]
    ['count', 'sum_amount', 'top']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pyarrow as pa

from windowstore.exceptions import InvalidWindowSpec

__all__ = [
    "Agg",
    "Udf",
    "collect",
    "collect_all",
    "count",
    "count_distinct",
    "first",
    "last",
    "max",
    "mean",
    "min",
    "sum",
    "udf",
]

Overflow = Literal["drop_oldest", "drop_newest", "fail"]
_OVERFLOWS = ("drop_oldest", "drop_newest", "fail")


@dataclass(frozen=True)
class Agg:
    """One aggregation: a function, its input column, and its output name."""

    func: str
    column: str | None = None
    name: str | None = None
    max_size: int | None = None
    overflow: Overflow | None = None

    def __post_init__(self) -> None:
        if self.max_size is not None:
            _check_max_size(self.max_size)

    def alias(self, name: str) -> Agg:
        """The same aggregation, output under ``name``."""
        if not isinstance(name, str) or not name:
            raise InvalidWindowSpec("invalid alias: a non-empty string is required", "aggs")
        return replace(self, name=name)

    @property
    def output_name(self) -> str:
        """The output column name: the alias, else ``count`` or ``<func>_<column>``."""
        if self.name is not None:
            return self.name
        return "count" if self.column is None else f"{self.func}_{self.column}"

    @property
    def input_columns(self) -> tuple[str, ...]:
        """The input columns the aggregation reads."""
        return () if self.column is None else (self.column,)

    def to_core(self) -> tuple[str, str | None, str | None, int | None, str | None]:
        """The tuple the compiled core takes."""
        return (self.func, self.column, self.name, self.max_size, self.overflow)


@dataclass(frozen=True)
class Udf(Agg):
    """A user-defined aggregate (see [`udf`][windowstore.agg.udf]): the core keeps each input
    column with ``collect_all``, and the function turns the window's lists into one value."""

    fn: Callable[..., Any] = field(default=lambda: None, compare=False, repr=False)
    columns: tuple[str, ...] = ()
    returns: pa.DataType = field(default_factory=pa.null)

    @property
    def output_name(self) -> str:
        """The alias, else ``udf_<columns>``."""
        return self.name if self.name is not None else "udf_" + "_".join(self.columns)

    @property
    def input_columns(self) -> tuple[str, ...]:
        """The input columns the function receives."""
        return self.columns

    def to_core(self) -> tuple[str, str | None, str | None, int | None, str | None]:
        """Not one core aggregate: see ``windowstore._udfs``."""
        raise TypeError("a udf is computed in Python: expand it with windowstore._udfs")


# The largest max_size: the core counts collected values in 64-bit machine words.
_MAX_SIZE_LIMIT = 2**63 - 1


def _check_max_size(max_size: object) -> None:
    if (
        isinstance(max_size, bool)
        or not isinstance(max_size, int)
        or not 0 < max_size <= _MAX_SIZE_LIMIT
    ):
        raise InvalidWindowSpec(
            f"invalid max_size: must be a positive int up to 2**63 - 1, got {max_size!r}",
            "max_size",
        )


def _column(func: str, column: str) -> Agg:
    if not isinstance(column, str) or not column:
        raise TypeError(f"{func}() takes a column name (a non-empty str), not {column!r}")
    return Agg(func, column)


def count() -> Agg:
    """Number of records in the window."""
    return Agg("count")


def sum(column: str) -> Agg:
    """Sum of the non-null values (integers: exact Int64; floats: Float64; decimal(p, s): exact
    decimal(min(38, p + 10), s), an error if it does not fit)."""
    return _column("sum", column)


def min(column: str) -> Agg:
    """Smallest non-null value, of the column's type."""
    return _column("min", column)


def max(column: str) -> Agg:
    """Largest non-null value, of the column's type."""
    return _column("max", column)


def mean(column: str) -> Agg:
    """Mean of the non-null values (Float64; decimal(p, s): decimal(min(38, p + 4), min(38, s + 4)),
    rounded half away from zero)."""
    return _column("mean", column)


def first(column: str) -> Agg:
    """The non-null value with the earliest event time (ties: first to arrive)."""
    return _column("first", column)


def last(column: str) -> Agg:
    """The non-null value with the latest event time (ties: last to arrive)."""
    return _column("last", column)


def count_distinct(column: str) -> Agg:
    """The number of distinct non-null values (exact; Int64, 0 for a window without values).

    Floats count ``-0.0`` and ``0.0`` as one value and every NaN as one value, as Spark's
    ``count(DISTINCT ...)`` and Polars' ``n_unique`` do. Its state holds each distinct value
    once, so it grows with the distinct values of a window, like ``collect``.
    """
    return _column("count_distinct", column)


def _overflow(overflow: object) -> None:
    if overflow not in _OVERFLOWS:
        raise InvalidWindowSpec(
            f"invalid overflow: {overflow!r}; expected one of {', '.join(_OVERFLOWS)}", "overflow"
        )


def collect_all(
    column: str, max_size: int | None = None, overflow: Overflow = "drop_oldest"
) -> Agg:
    """Every record's value, nulls included, in event-time order: one element per record.

    ``max_size`` and ``overflow`` work as in [`collect`][windowstore.agg.collect].
    """
    if max_size is not None:
        _check_max_size(max_size)
    _overflow(overflow)
    return replace(_column("collect_all", column), max_size=max_size, overflow=overflow)


def udf(
    fn: Callable[..., Any],
    *columns: str,
    returns: pa.DataType,
    max_size: int | None = None,
    overflow: Overflow = "drop_oldest",
) -> Udf:
    """Your own aggregate: ``fn`` receives, per window, one Arrow array per column in
    ``columns`` (every record of the window, nulls included, in event-time order, ties in
    arrival order) and returns one value of type ``returns`` (a Python value or a pyarrow
    scalar). The output column is ``udf_<columns>`` unless aliased.

    It works wherever the built-ins do (complete mode, the streaming processors, Spark batch
    and Spark streaming). Cost: like ``collect``, a window keeps its records' values until it is
    emitted (``max_size`` and ``overflow`` bound them as in [`collect`][windowstore.agg.collect]:
    beyond the bound the function sees the newest or the oldest records), and ``fn`` runs once
    per output row, in Python. A function that raises, or returns a value ``returns`` cannot
    hold exactly (as pyarrow's safe cast has it: 1.5 for an integer type, where 2.0 gives 2),
    fails the call with an ``AggregateFunctionError`` naming the aggregate, the key and the
    window (its cause is the function's exception), and the call changes nothing. The output
    name must be unique among the aggregates, key and window columns, as a built-in's. A
    processor's snapshot cannot hold a
    function: restore it with the same aggregates (``restore(path, aggs=...)``). In Spark,
    ``fn`` is pickled to the workers, and timestamps reach it in streaming queries as epoch
    microseconds (Int64).

    Examples:
        >>> import pyarrow as pa, pyarrow.compute as pc
        >>> from windowstore import agg, session_windows
        >>> spread = agg.udf(lambda x: pc.max(x).as_py() - pc.min(x).as_py(), "x",
        ...                  returns=pa.int64()).alias("spread")
        >>> t = pa.table({"k": ["a", "a"], "ts": [0, 5], "x": [3, 10]})
        >>> session_windows(t, key="k", time="ts", gap=10, aggs=[spread])["spread"].to_pylist()
        [7]
    """
    if not callable(fn):
        raise TypeError(f"udf() takes a callable first, not {fn!r}")
    if not columns:
        raise InvalidWindowSpec("invalid aggs: udf() needs at least one column", "aggs")
    for c in columns:
        if not isinstance(c, str) or not c:
            raise TypeError(f"udf() takes column names (non-empty str), not {c!r}")
    if not isinstance(returns, pa.DataType):
        raise InvalidWindowSpec(
            f"invalid returns: a pyarrow DataType is required, got {returns!r}", "returns"
        )
    if max_size is not None:
        _check_max_size(max_size)
    _overflow(overflow)
    return Udf(
        "udf",
        None,
        max_size=max_size,
        overflow=overflow,
        fn=fn,
        columns=tuple(columns),
        returns=returns,
    )


def collect(column: str, max_size: int | None = None, overflow: Overflow = "drop_oldest") -> Agg:
    """The non-null values in event-time order, as a list, at most ``max_size`` of them.

    ``overflow`` says what to keep beyond ``max_size``: ``drop_oldest`` keeps the newest
    values, ``drop_newest`` keeps the oldest, ``fail`` raises ``SessionOverflowError``.
    """
    if max_size is not None:
        _check_max_size(max_size)
    _overflow(overflow)
    return replace(_column("collect", column), max_size=max_size, overflow=overflow)
