"""Arguments of the processors' reads of their open windows: key values as a batch of the key
columns, and time bounds as ticks (the core selects and orders the windows).

Nothing is rounded into another answer: a key value the key column cannot hold exactly (``2.5``
for an integer column) is refused, and a time bound between two ticks selects what the contract
says of the exact time (a window ends at or after ``earliest_end``: the bound rounds up; it
starts at or before ``latest_start``: the bound rounds down). Bounds beyond the 64-bit range of
ticks are clamped to it, which selects the same windows, as `SessionStore`'s lookups do."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from windowstore._durations import _NUMPY_ATTOS
from windowstore.exceptions import InvalidWindowSpec, SchemaError

__all__ = ["key_batch", "time_ticks"]


def key_batch(schema: pa.Schema, keys: Sequence[Any], parameter: str) -> pa.RecordBatch:
    """A batch of the key columns ``schema`` with one row per key of ``keys``: a value for a
    processor of one key column, a tuple of values (in key order) for several.

    Raises:
        InvalidWindowSpec: a key is not a tuple of as many values as there are key columns.
        SchemaError: a value the key column's type cannot hold, or a null (names the column).
    """
    width = len(schema)
    rows: list[tuple[Any, ...]] = []
    for key in keys:
        if width == 1:
            rows.append((key,))
        elif isinstance(key, tuple) and len(key) == width:
            rows.append(key)
        else:
            raise InvalidWindowSpec(
                f"invalid {parameter}: {key!r}; the processor's key has {width} columns "
                f"({', '.join(schema.names)}): give a tuple of {width} values in that order",
                parameter,
            )
    columns = []
    for i, field in enumerate(schema):
        values = [row[i] for row in rows]
        if any(v is None for v in values):
            raise SchemaError(
                f"invalid {parameter}: key column {field.name!r} cannot be null in a lookup",
                field.name,
            )
        try:
            column = pa.array(values, type=field.type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise SchemaError(
                f"invalid {parameter}: {values[0]!r} is not a value of key column "
                f"{field.name!r} ({field.type}): {e}",
                field.name,
            ) from e
        if pa.types.is_integer(field.type):
            # pyarrow truncates 2.5 into 2: a lookup must match the value given, or refuse it.
            for value, held in zip(values, column.to_pylist(), strict=True):
                if value != held:
                    raise SchemaError(
                        f"invalid {parameter}: {value!r} is not a value of key column "
                        f"{field.name!r} ({field.type}); give an integer",
                        field.name,
                    )
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


#: Whether a bound rounds up (``earliest_end``: a window ends at or after it) or down.
_ROUNDS_UP = {"earliest_end": True, "latest_start": False}
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: Ticks per nanosecond of each timestamp unit.
_PER_NANO = {
    "s": Fraction(1, 10**9),
    "ms": Fraction(1, 10**6),
    "us": Fraction(1, 10**3),
    "ns": Fraction(1),
}


def time_ticks(value: Any, time_type: pa.DataType, parameter: str) -> int | None:
    """``value`` (a time of the output's window columns: int ticks, or a ``datetime`` for a
    timestamp column) as ticks; None stays None. A time between two ticks rounds up for
    ``earliest_end`` and down for ``latest_start`` (see the module doc); a bound beyond the
    64-bit range is clamped to it.

    Raises:
        InvalidWindowSpec: a value that is not a time of ``time_type`` (names ``parameter``).
        TypeError: neither an integer nor, for a timestamp column, a time.
    """
    if value is None:
        return None
    up = _ROUNDS_UP[parameter]
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{parameter} must be int ticks or a datetime, not {type(value).__name__}")
    if isinstance(value, int | np.integer):
        return _clamped(operator.index(value))
    if not pa.types.is_timestamp(time_type):
        raise TypeError(f"{parameter} must be int ticks, not {type(value).__name__}")
    exact = _nanos(value, time_type, parameter) * _PER_NANO[time_type.unit]
    return _clamped(math.ceil(exact) if up else math.floor(exact))


def _nanos(value: Any, time_type: pa.TimestampType, parameter: str) -> Fraction:
    """``value`` as exact nanoseconds since the epoch (a naive ``datetime`` reads as UTC, as
    pyarrow reads it)."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        micros = (aware - _EPOCH) // timedelta(microseconds=1)
        return Fraction(micros * 1000 + int(getattr(value, "nanosecond", 0)))
    if isinstance(value, np.datetime64) and not np.isnat(value):
        unit, count = np.datetime_data(value.dtype)
        if unit in _NUMPY_ATTOS:
            return Fraction(int(value.astype(np.int64)) * count * _NUMPY_ATTOS[unit], 10**9)
    try:
        as_nanos = pa.scalar(value, type=pa.timestamp("ns", time_type.tz))
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise InvalidWindowSpec(
            f"invalid {parameter}: {value!r} is not a time of type {time_type}: {e}", parameter
        ) from e
    return Fraction(int(as_nanos.cast(pa.int64()).as_py()))


def _clamped(ticks: int) -> int:
    return min(max(ticks, _I64_MIN), _I64_MAX)
