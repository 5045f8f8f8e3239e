"""What the streaming window processors share: argument checks and the processor methods."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal, TypeVar

import pyarrow as pa

from windowstore import _core
from windowstore._durations import ticks_arg
from windowstore._udfs import Finisher, core_aggs
from windowstore.agg import Agg

__all__ = [
    "Emit",
    "OnInvalid",
    "TimeUnit",
    "WindowProcessor",
    "aggs_arg",
    "check_aggs",
    "finisher",
    "keys_arg",
]

Emit = Literal["final", "updates", "changes"]
OnInvalid = Literal["drop", "error"]
TimeUnit = Literal["s", "ms", "us", "ns"]

_P = TypeVar("_P", bound="WindowProcessor")


def keys_arg(key: str | Sequence[str]) -> list[str]:
    """The key column names as a list; refuses anything that is not one or more names."""
    if isinstance(key, str):
        return [key]
    message = f"key must be a column name or a non-empty list of names, not {key!r}"
    if isinstance(key, bytes | bytearray) or not isinstance(key, Iterable):
        raise TypeError(message)
    keys = list(key)
    if not keys or not all(isinstance(k, str) for k in keys):
        raise TypeError(message)
    return keys


def check_aggs(aggs: Sequence[Agg]) -> list[Agg]:
    """The aggregations as a list, refusing anything that is not a ``windowstore.agg``."""
    if isinstance(aggs, Agg | str) or not isinstance(aggs, Iterable):
        raise TypeError(f"aggs must be a list of windowstore.agg aggregations, not {aggs!r}")
    out = list(aggs)
    for a in out:
        if not isinstance(a, Agg):
            raise TypeError(f"aggs must be windowstore.agg aggregations, not {a!r}")
    return out


def aggs_arg(
    aggs: Sequence[Agg],
) -> list[tuple[str, str | None, str | None, int | None, str | None]]:
    """The aggregations in the form the compiled core takes (a udf as its hidden lists)."""
    return core_aggs(check_aggs(aggs))


def finisher(aggs: Sequence[Agg], window: tuple[str, str]) -> Finisher | None:
    """What turns the core's output into the user's, if ``aggs`` has a udf."""
    return Finisher(aggs, window) if Finisher.needed(aggs) else None


class WindowProcessor:
    """The methods every streaming processor has, over its compiled ``_inner`` processor."""

    _kind: ClassVar[str]
    #: The output's window start and end columns.
    _window: ClassVar[tuple[str, str]]
    _inner: _core.Processor
    #: Computes the udfs of the output inside each call's transaction (None: no udf).
    _finish: Finisher | None = None

    def process(self, data: Any) -> pa.Table:
        """Processes a batch, table or stream (anything with the Arrow PyCapsule interface:
        pyarrow, polars, duckdb), record by record; returns the windows it emits.

        The call is all or nothing: if it raises, the processor (windows, stream time,
        counters, rejected rows) is exactly as it was before. Calls from several threads
        serialize on the processor."""
        return self._inner.process(data, self._finish)

    def flush(self) -> pa.Table:
        """Ends the input: in ``final`` mode, returns every window not emitted yet."""
        out = self._inner.flush(self._finish)
        return pa.table({}) if out is None else out

    def rejected(self) -> pa.Table:
        """Takes the rejected input rows so far, with a ``reason`` column."""
        out = self._inner.rejected()
        return pa.table({}) if out is None else out

    def metrics(self) -> dict[str, int | None]:
        """Counters: records, accepted, rejected by reason, emitted, stream time, store sizes."""
        return self._inner.metrics()

    def snapshot(self, path: str | os.PathLike[str]) -> None:
        """Writes the whole state (windows, stream time, counters) atomically to ``path``."""
        self._inner.snapshot(path)

    @classmethod
    def restore(cls: type[_P], path: str | os.PathLike[str], *, aggs: Sequence[Agg] = ()) -> _P:
        """A processor restored from `snapshot()`; refuses a damaged file whole.

        A snapshot holds no Python function: a processor with user-defined aggregates
        (``agg.udf``) needs the ``aggs`` it was made with again (its calls fail, changing
        nothing, until they match)."""
        self = cls.__new__(cls)
        self._inner = _core.Processor.restore(path, cls._kind)
        self._finish = Finisher(check_aggs(aggs), cls._window)
        return self

    def to_bytes(self) -> bytes:
        """The whole state as bytes: what `snapshot()` writes, for a store of your own."""
        return self._inner.to_bytes()

    @classmethod
    def from_bytes(cls: type[_P], data: bytes, *, aggs: Sequence[Agg] = ()) -> _P:
        """A processor restored from `to_bytes()`; refuses damaged bytes whole. ``aggs``: as
        for `restore()`."""
        self = cls.__new__(cls)
        self._inner = _core.Processor.from_bytes(data, cls._kind)
        self._finish = Finisher(check_aggs(aggs), cls._window)
        return self

    def advance(self, t: int) -> pa.Table:
        """Advances stream time to ``t`` (ticks of the time column) without a record, as an
        outside clock such as a watermark says; returns the windows that closes (``final``)."""
        out = self._inner.advance(ticks_arg(t, "t"), self._finish)
        return pa.table({}) if out is None else out

    def next_close(self) -> int | None:
        """In ``final`` mode, the earliest stream time at which a held window closes (so
        ``advance(next_close())`` emits it); ``None`` if none is held or in changelog modes."""
        return self._inner.next_close()
