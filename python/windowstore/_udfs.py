"""User-defined aggregates (``agg.udf``): what the core computes for them, and how the output
becomes the functions' values.

The core cannot run Python per record, so a udf over columns ``c1..ck`` becomes k hidden
``collect_all`` aggregates (every record's value, nulls included, in event-time order: the
lists line up record by record). After the core has built a call's output, `Finisher` calls
the function once per output row with the rows' lists as Arrow arrays and puts its values in
place of the hidden columns. The streaming processors run the finisher inside the call's
transaction (the core's ``then`` hook), so a function that raises leaves the processor as it
was.

The core checks the output names of the built-ins, but sees a udf only as its hidden columns,
so the udfs' names are checked here, with the core's messages: against the other aggregates
before the core is called (`core_aggs`), and against the key, window and ``op`` columns when
the finisher first sees the core's output, as the core checks the built-ins when it binds the
input.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from windowstore.agg import Agg, Udf
from windowstore.exceptions import AggregateFunctionError, InvalidWindowSpec

__all__ = ["HIDDEN", "Finisher", "core_aggs"]

#: The prefix of the hidden columns that carry a udf's lists through the core.
HIDDEN = "__windowstore_udf"

_CoreAgg = tuple[str, str | None, str | None, int | None, str | None]


def _hidden(index: int, column: int) -> str:
    return f"{HIDDEN}{index}_{column}"


def _udf_places(hidden: Sequence[str]) -> str:
    """Where in ``aggs`` the udfs of ``hidden`` columns stand, for people: "aggs[1], aggs[3]"
    (with how many columns each reads)."""
    places: dict[int, int] = {}
    for name in hidden:
        index = int(name[len(HIDDEN) :].split("_")[0])
        places[index] = places.get(index, 0) + 1
    return ", ".join(
        f"aggs[{i}] (over {n} column{'s' if n > 1 else ''})" for i, n in sorted(places.items())
    )


def _mismatch(hidden: Sequence[str], expected: Sequence[str]) -> str:
    """Why the udfs of a restored processor (its ``hidden`` columns) do not match the aggs it
    was given (their ``expected`` columns), and what to do."""
    if not expected:
        return (
            "invalid aggs: the snapshot was taken with user-defined aggregates (agg.udf) at "
            f"{_udf_places(hidden)}, and a snapshot holds no Python function: restore it with "
            "restore(..., aggs=[...]) / from_bytes(..., aggs=[...]) given the same aggs it was "
            "made with, udfs included"
        )
    if not hidden:
        return (
            f"invalid aggs: the aggs given have user-defined aggregates at {_udf_places(expected)}"
            ", but the processor (or the snapshot it was restored from) has none; give the aggs "
            "it was made with"
        )
    return (
        f"invalid aggs: the processor computes user-defined aggregates at {_udf_places(hidden)}, "
        f"the aggs given have them at {_udf_places(expected)}; restore it with the same "
        "aggs=[...] it was made with"
    )


def core_aggs(aggs: Sequence[Agg]) -> list[_CoreAgg]:
    """The core's aggregates for ``aggs``: built-ins as they are, each udf as its hidden
    ``collect_all`` columns (at the udf's place, so the output keeps the order of ``aggs``).

    Raises:
        InvalidWindowSpec: a udf's output name is another aggregate's (names ``aggs``).
    """
    names = [a.output_name for a in aggs]
    for a in aggs:
        if isinstance(a, Udf) and names.count(a.output_name) > 1:
            raise InvalidWindowSpec(
                f"invalid aggs: duplicate output name {_quoted(a.output_name)}; give one of the "
                "aggregations an alias",
                "aggs",
            )
    out: list[_CoreAgg] = []
    for i, a in enumerate(aggs):
        if isinstance(a, Udf):
            for j, c in enumerate(a.columns):
                out.append(("collect_all", c, _hidden(i, j), a.max_size, a.overflow))
        else:
            out.append(a.to_core())
    return out


@dataclass(frozen=True)
class _Planned:
    udf: Udf
    hidden: tuple[str, ...]


class Finisher:
    """Turns a core output table into the user's: each udf's hidden lists into its values.

    ``window`` names the output's start and end columns (the key columns come before them),
    for error messages. Built from the aggregates the processor was made with (or restored
    with).
    """

    def __init__(self, aggs: Sequence[Agg], window: tuple[str, str]) -> None:
        self._planned = [
            _Planned(a, tuple(_hidden(i, j) for j in range(len(a.columns))))
            for i, a in enumerate(aggs)
            if isinstance(a, Udf)
        ]
        self._window = window

    @staticmethod
    def needed(aggs: Sequence[Agg]) -> bool:
        """Whether ``aggs`` has a udf (else the core's output is the user's)."""
        return any(isinstance(a, Udf) for a in aggs)

    def __call__(self, table: pa.Table) -> pa.Table:
        hidden = [n for n in table.column_names if n.startswith(HIDDEN)]
        expected = [n for p in self._planned for n in p.hidden]
        if sorted(hidden) != sorted(expected):
            raise InvalidWindowSpec(_mismatch(hidden, expected), "aggs")
        taken = {n for n in table.column_names if not n.startswith(HIDDEN)}
        for p in self._planned:
            if p.udf.output_name in taken:
                raise InvalidWindowSpec(
                    f"invalid aggs: output column {_quoted(p.udf.output_name)} appears twice (a "
                    "key column, a window column or an aggregate); give the aggregate another "
                    "name with .alias()",
                    "aggs",
                )
            taken.add(p.udf.output_name)
        for p in self._planned:
            values = self._values(table, p)
            at = table.column_names.index(p.hidden[0])
            for name in p.hidden:
                table = table.drop_columns([name])
            table = table.add_column(at, pa.field(p.udf.output_name, p.udf.returns), values)
        return table

    def _values(self, table: pa.Table, p: _Planned) -> pa.Array:
        lists = [_list_array(table.column(n)) for n in p.hidden]
        offsets = [a.offsets.to_pylist() for a in lists]
        children = [a.values for a in lists]
        out: list[Any] = []
        for row in range(table.num_rows):
            args = [
                child.slice(off[row], off[row + 1] - off[row])
                for child, off in zip(children, offsets, strict=True)
            ]
            try:
                value = p.udf.fn(*args)
                if isinstance(value, pa.Scalar):
                    value = value.as_py()
                out.append(value)
            except Exception as e:
                raise self._error(table, p, row, f"raised {type(e).__name__}: {e}") from e
        try:
            return _to_array(out, p.udf.returns)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            row = _first_bad(out, p.udf.returns)
            value = reprlib.repr(out[row]) if row < len(out) else "?"
            raise self._error(
                table, p, row, f"returned a value not of {p.udf.returns} ({value}: {e})"
            ) from e

    def _error(self, table: pa.Table, p: _Planned, row: int, what: str) -> AggregateFunctionError:
        names = table.column_names
        key = names[: names.index(self._window[0])] if self._window[0] in names else []
        keys = {k: table.column(k)[row].as_py() for k in key}
        start, end = (
            table.column(c)[row].as_py() if c in table.column_names else None for c in self._window
        )
        return AggregateFunctionError(
            f"aggregate {p.udf.output_name!r} {what} in the window [{start}, {end}] of key "
            f"{keys}; the call changed nothing",
            p.udf.output_name,
            keys,
            start,
            end,
        )


def _list_array(column: pa.ChunkedArray) -> pa.ListArray:
    """The column's chunks as one ListArray (an empty one for a table without rows)."""
    if column.num_chunks == 1:
        chunk: pa.ListArray = column.chunk(0)
        return chunk
    combined: pa.ListArray = column.combine_chunks()
    return combined


def _quoted(name: str) -> str:
    """``name`` in double quotes, as the core's messages quote column names."""
    return json.dumps(name, ensure_ascii=False)


def _to_array(values: list[Any], returns: pa.DataType) -> pa.Array:
    """``values`` as an array of ``returns``, refusing a value that ``returns`` cannot hold
    exactly.

    ``pa.array(values, type=returns)`` refuses a value of another kind (a string for an
    integer, an integer out of range) but truncates some: a float into an integer or temporal
    type (1.5 -> 1), a ``Decimal`` into an integer, a datetime, time or timedelta into a
    coarser unit. So where ``returns`` has such a field, the values, read with their own type,
    must also survive pyarrow's safe cast to ``returns``: 2.0 into int64 is 2, 1.5 fails. Floats
    into a float type round as floats do.

    Raises:
        pyarrow.ArrowInvalid, pyarrow.ArrowTypeError, OverflowError: a value ``returns`` cannot
            hold.
    """
    array = pa.array(values, type=returns)
    if _truncates(returns):
        _check_exact(values, returns)
    return array


def _check_exact(values: list[Any], returns: pa.DataType) -> None:
    """Raises if ``values``, as pyarrow reads them without a type, lose data in a safe cast to
    ``returns`` (see `_to_array`)."""
    try:
        own = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        # No one type for them all (mixed kinds, an int beyond int64): one value at a time. A
        # single value pyarrow cannot read alone is left to the typed build, which took it.
        if len(values) > 1:
            for v in values:
                _check_exact([v], returns)
        return
    try:
        own.cast(returns, safe=True)
    except pa.ArrowNotImplementedError:
        # No cast from floats into a temporal or dictionary type: whole numbers only.
        if pa.types.is_floating(own.type):
            own.cast(pa.int64(), safe=True)


def _truncates(returns: pa.DataType) -> bool:
    """Whether building an array of ``returns`` can truncate a value: it has an integer or
    temporal field. Not with a decimal field: building one already refuses a lossy value, and a
    safe cast of integers into a decimal would refuse some that fit."""
    leaves = list(_leaves(returns))
    return not any(pa.types.is_decimal(t) for t in leaves) and any(
        pa.types.is_integer(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_duration(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
        for t in leaves
    )


def _leaves(t: pa.DataType) -> Iterator[pa.DataType]:
    """The types of ``t``'s values, through lists, structs, maps and dictionaries (not a
    dictionary's indices)."""
    if pa.types.is_dictionary(t):
        yield from _leaves(t.value_type)
    elif pa.types.is_map(t):
        yield from _leaves(t.key_type)
        yield from _leaves(t.item_type)
    elif pa.types.is_struct(t) or pa.types.is_union(t):
        for i in range(t.num_fields):
            yield from _leaves(t.field(i).type)
    elif hasattr(t, "value_type"):  # list, large list, fixed-size list, list views
        yield from _leaves(t.value_type)
    else:
        yield t


def _first_bad(values: list[Any], returns: pa.DataType) -> int:
    """The first row whose value ``returns`` cannot hold."""
    for i, v in enumerate(values):
        try:
            _to_array([v], returns)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return i
    return 0
