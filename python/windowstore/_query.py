"""Arguments of the processors' reads of their open windows: key values as a batch of the key
columns, and time bounds as ticks (the core selects and orders the windows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from windowstore._durations import ticks_arg
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
            columns.append(pa.array(values, type=field.type))
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise SchemaError(
                f"invalid {parameter}: {values[0]!r} is not a value of key column "
                f"{field.name!r} ({field.type}): {e}",
                field.name,
            ) from e
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def time_ticks(value: Any, time_type: pa.DataType, parameter: str) -> int | None:
    """``value`` (a time of the output's window columns: int ticks, or a ``datetime`` for a
    timestamp column) as ticks; None stays None."""
    if value is None:
        return None
    if isinstance(value, int) or not pa.types.is_timestamp(time_type):
        return ticks_arg(value, parameter)
    try:
        ticks = pa.scalar(value, type=time_type).cast(pa.int64()).as_py()
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise InvalidWindowSpec(
            f"invalid {parameter}: {value!r} is not a time of type {time_type}: {e}", parameter
        ) from e
    return ticks_arg(ticks, parameter)
