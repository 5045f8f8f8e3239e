"""Aggregations of window records, computed in Rust: ``count``, ``sum``, ``min``, ``max``,
``mean``, ``first``, ``last`` and bounded ``collect``.

Every aggregate is mergeable, so sessions merge exactly. Nulls in a value column are skipped as
in SQL; ``count`` counts records. ``first``/``last`` go by event time, ties by arrival.

Examples:
    >>> from windowstore import agg
    >>> [a.output_name for a in (agg.count(), agg.sum("amount"), agg.max("amount").alias("top"))]
    ['count', 'sum_amount', 'top']
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from windowstore.exceptions import InvalidWindowSpec

__all__ = ["Agg", "collect", "count", "first", "last", "max", "mean", "min", "sum"]

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

    def to_core(self) -> tuple[str, str | None, str | None, int | None, str | None]:
        """The tuple the compiled core takes."""
        return (self.func, self.column, self.name, self.max_size, self.overflow)


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
    """Sum of the non-null values (integers: exact Int64; floats: Float64)."""
    return _column("sum", column)


def min(column: str) -> Agg:
    """Smallest non-null value, of the column's type."""
    return _column("min", column)


def max(column: str) -> Agg:
    """Largest non-null value, of the column's type."""
    return _column("max", column)


def mean(column: str) -> Agg:
    """Mean of the non-null values (Float64)."""
    return _column("mean", column)


def first(column: str) -> Agg:
    """The non-null value with the earliest event time (ties: first to arrive)."""
    return _column("first", column)


def last(column: str) -> Agg:
    """The non-null value with the latest event time (ties: last to arrive)."""
    return _column("last", column)


def collect(column: str, max_size: int | None = None, overflow: Overflow = "drop_oldest") -> Agg:
    """The non-null values in event-time order, as a list, at most ``max_size`` of them.

    ``overflow`` says what to keep beyond ``max_size``: ``drop_oldest`` keeps the newest
    values, ``drop_newest`` keeps the oldest, ``fail`` raises ``SessionOverflowError``.
    """
    if max_size is not None:
        _check_max_size(max_size)
    if overflow not in _OVERFLOWS:
        raise InvalidWindowSpec(
            f"invalid overflow: {overflow!r}; expected one of {', '.join(_OVERFLOWS)}", "overflow"
        )
    return replace(_column("collect", column), max_size=max_size, overflow=overflow)
