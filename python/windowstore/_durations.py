"""Durations as users write them: ``timedelta``, ``"30s"``, ``"5 minutes"``, or integer ticks.

A bare integer is a count of ticks, accepted only where the caller writes ticks as integers:
an integer time column (its ``time_unit``, default ms) or processing time (epoch ms). On a
timestamp column it is refused, naming the column's unit (docs/semantics.md section 1).
``check_session_durations`` and ``check_sliding_durations`` run that check, and every other
one the processor runs on its durations, against a time column's Arrow type before any data
(the Spark adapters at plan time, the CLI before reading its file).

Every unit has a fixed length, as Kafka Streams' durations do: a day (``"1d"``, ``"1 day"``,
``timedelta(days=1)``, ``numpy.timedelta64(1, "D")``) is 86,400 s and a week 604,800 s, never a
calendar day of some time zone. Spark's ``session_window(ts, "1 day")`` adds a calendar day of
the session time zone instead (23 or 25 hours across a daylight-saving change), so its sessions
differ from windowstore's around one (see docs/how-to/spark-batch.md).
"""

from __future__ import annotations

import operator
import re
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
import pyarrow as pa

from windowstore import _core
from windowstore.exceptions import InvalidWindowSpec

__all__ = [
    "DurationLike",
    "check_session_durations",
    "check_sliding_durations",
    "ticks_arg",
    "to_duration",
]

DurationLike = timedelta | str | int | np.integer[Any] | np.timedelta64

# The range of a tick count (the core's ``i64``).
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
# Nanoseconds are converted into ticks in an ``i128``.
_NANOS_LIMIT = 2**127
# A numpy timedelta64 unit as attoseconds (exact for every unit with a fixed length).
_NUMPY_ATTOS = {
    "W": 604_800 * 10**18,
    "D": 86_400 * 10**18,
    "h": 3_600 * 10**18,
    "m": 60 * 10**18,
    "s": 10**18,
    "ms": 10**15,
    "us": 10**12,
    "ns": 10**9,
    "ps": 10**6,
    "fs": 10**3,
    "as": 1,
}

_NANOS = {
    "ns": 1,
    "nanosecond": 1,
    "us": 1_000,
    "µs": 1_000,
    "microsecond": 1_000,
    "ms": 1_000_000,
    "millisecond": 1_000_000,
    "s": 1_000_000_000,
    "sec": 1_000_000_000,
    "second": 1_000_000_000,
    "m": 60_000_000_000,
    "min": 60_000_000_000,
    "minute": 60_000_000_000,
    "h": 3_600_000_000_000,
    "hr": 3_600_000_000_000,
    "hour": 3_600_000_000_000,
    "d": 86_400_000_000_000,
    "day": 86_400_000_000_000,
    "w": 604_800_000_000_000,
    "week": 604_800_000_000_000,
}
_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zµ]+)\s*", re.IGNORECASE)


def to_duration(value: DurationLike, parameter: str) -> tuple[str, int]:
    """Converts a duration argument into ``("ticks", n)`` or ``("nanos", n)``.

    Integers (Python's or numpy's) are ticks of the time column, which the core accepts only
    on an integer column or with processing time; ``timedelta``, ``numpy.timedelta64`` and
    strings are wall-clock lengths, converted into ticks exactly once the time unit is known.
    Strings are one or more ``<number><unit>`` parts (``"90s"``, ``"1h30m"``, ``"5 minutes"``,
    ``"1.5s"``); ``d``/``day`` is 86,400 s and ``w``/``week`` 604,800 s, whatever the date.

    Raises:
        InvalidWindowSpec: the value cannot be read as a duration, or is out of the 64-bit
            range of ticks (names ``parameter``).
        TypeError: the value is of another type.

    Examples:
        >>> to_duration("1h30m", "gap")
        ('nanos', 5400000000000)
    """
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{parameter} must be a timedelta, a string or int ticks, not bool")
    # Before integers: numpy's timedelta64 is a numpy integer type.
    if isinstance(value, np.timedelta64):
        return ("nanos", _checked_nanos(_numpy_nanos(value, parameter), parameter))
    if isinstance(value, int | np.integer):
        return ("ticks", ticks_arg(value, parameter))
    if isinstance(value, timedelta):
        nanos = ((value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds) * 1_000
        # pandas.Timedelta is a timedelta with nanoseconds beyond its microseconds.
        nanos += int(getattr(value, "nanoseconds", 0))
        return ("nanos", _checked_nanos(nanos, parameter))
    if isinstance(value, str):
        return ("nanos", _checked_nanos(_parse(value, parameter), parameter))
    raise TypeError(
        f"{parameter} must be a timedelta, a string like '30s' or int ticks, "
        f"not {type(value).__name__}"
    )


def check_session_durations(
    time_type: pa.DataType | None,
    *,
    time: str | None = None,
    time_unit: str | None = None,
    gap: DurationLike | None = None,
    gap_column: str | None = None,
    max_gap: DurationLike | None = None,
    grace: DurationLike = 0,
    retention: DurationLike | None = None,
    max_duration: DurationLike | None = None,
    clock: str = "event",
    idle_timeout: DurationLike | None = None,
) -> None:
    """Checks session durations against a time column of Arrow type ``time_type``.

    Raises what ``SessionWindowProcessor(...)`` and its first ``process()`` would raise about
    the durations, now: for complete mode (``session_windows``), leave ``grace`` and
    ``retention`` at their defaults. ``time_type`` is ``None`` only with
    ``clock="processing"`` (no time column; durations are epoch milliseconds).

    Raises:
        InvalidWindowSpec: a duration is out of its domain, not a whole number of the column's
            ticks, or a bare integer on a timestamp column (names the parameter, the column and
            its unit).
        SchemaError: ``time_type`` cannot be a time column.

    Examples:
        >>> check_session_durations(pa.timestamp("us"), time="ts", gap="30m")
        >>> check_session_durations(pa.timestamp("us"), time="ts", gap=1_800_000)
        Traceback (most recent call last):
        ...
        windowstore.exceptions.InvalidWindowSpec: invalid gap: 1800000 is a bare integer, \
but the time column "ts" is a timestamp[us]; give a length such as "30m" or \
timedelta(minutes=30)
    """
    _core.check_session_durations(
        time_type,
        time=time,
        time_unit=time_unit,
        gap=None if gap is None else to_duration(gap, "gap"),
        gap_column=gap_column,
        max_gap=None if max_gap is None else to_duration(max_gap, "max_gap"),
        grace=to_duration(grace, "grace"),
        retention=None if retention is None else to_duration(retention, "retention"),
        max_duration=None if max_duration is None else to_duration(max_duration, "max_duration"),
        clock=clock,
        idle_timeout=None if idle_timeout is None else to_duration(idle_timeout, "idle_timeout"),
    )


def check_sliding_durations(
    time_type: pa.DataType | None,
    *,
    time: str | None = None,
    time_unit: str | None = None,
    time_difference: DurationLike,
    grace: DurationLike = 0,
    clock: str = "event",
    idle_timeout: DurationLike | None = None,
) -> None:
    """Checks sliding-window durations against a time column of Arrow type ``time_type``.

    As :func:`check_session_durations`, for ``SlidingWindowProcessor`` and
    ``sliding_windows`` (complete mode: leave ``grace`` at 0).

    Raises:
        InvalidWindowSpec: as :func:`check_session_durations`.
        SchemaError: ``time_type`` cannot be a time column.

    Examples:
        >>> check_sliding_durations(pa.int64(), time="ts", time_difference=10_000)
        >>> check_sliding_durations(pa.timestamp("ms"), time="ts", time_difference="10s")
    """
    _core.check_sliding_durations(
        time_type,
        time=time,
        time_unit=time_unit,
        time_difference=to_duration(time_difference, "time_difference"),
        grace=to_duration(grace, "grace"),
        clock=clock,
        idle_timeout=None if idle_timeout is None else to_duration(idle_timeout, "idle_timeout"),
    )


def ticks_arg(value: Any, parameter: str) -> int:
    """``value`` as an integer tick count (a Python or numpy integer) in the 64-bit range.

    Raises:
        InvalidWindowSpec: out of range (names ``parameter``).
        TypeError: not an integer.

    Examples:
        >>> ticks_arg(5, "t")
        5
    """
    if type(value) is int and _I64_MIN <= value <= _I64_MAX:
        return value  # the common case, checked in one step
    if isinstance(value, bool | np.bool_ | np.timedelta64) or not isinstance(
        value, int | np.integer
    ):
        raise TypeError(f"{parameter} must be int ticks, not {type(value).__name__}")
    ticks = operator.index(value)
    if not _I64_MIN <= ticks <= _I64_MAX:
        raise InvalidWindowSpec(
            f"invalid {parameter}: {ticks} is outside the 64-bit range of ticks "
            f"[{_I64_MIN}, {_I64_MAX}]",
            parameter,
        )
    return ticks


def _checked_nanos(nanos: int, parameter: str) -> int:
    if not -_NANOS_LIMIT < nanos < _NANOS_LIMIT:
        raise InvalidWindowSpec(
            f"invalid {parameter}: {nanos} ns is beyond any 64-bit count of ticks", parameter
        )
    return nanos


def _numpy_nanos(value: np.timedelta64, parameter: str) -> int:
    if np.isnat(value):
        raise InvalidWindowSpec(f"invalid {parameter}: NaT is not a duration", parameter)
    unit, count = np.datetime_data(value.dtype)
    if unit not in _NUMPY_ATTOS:
        raise InvalidWindowSpec(
            f"invalid {parameter}: numpy unit {unit!r} (years, months) has no fixed length",
            parameter,
        )
    attos = int(value.astype(np.int64)) * count * _NUMPY_ATTOS[unit]
    if attos % 10**9:
        raise InvalidWindowSpec(
            f"invalid {parameter}: {value!r} is not a whole number of nanoseconds", parameter
        )
    return attos // 10**9


def _parse(text: str, parameter: str) -> int:
    sign = -1 if text.strip().startswith("-") else 1
    rest = text.strip().lstrip("-")
    pos, total, parts = 0, Decimal(0), 0
    while pos < len(rest):
        match = _PART.match(rest, pos)
        if match is None:
            break
        unit = match.group(2).lower()
        if unit not in _NANOS and unit.endswith("s") and unit[:-1] in _NANOS:
            unit = unit[:-1]  # plural names: "minutes", "secs"
        if unit not in _NANOS:
            raise InvalidWindowSpec(
                f"invalid {parameter}: unknown unit {match.group(2)!r} in {text!r} "
                f"(use ns, us, ms, s, m, h, d, w or their names)",
                parameter,
            )
        try:
            total += Decimal(match.group(1)) * _NANOS[unit]
        except InvalidOperation as e:  # pragma: no cover - the regex admits only numbers
            raise InvalidWindowSpec(f"invalid {parameter}: {text!r}", parameter) from e
        pos, parts = match.end(), parts + 1
    if parts == 0 or pos != len(rest):
        raise InvalidWindowSpec(
            f"invalid {parameter}: cannot read {text!r} as a duration (try '30s' or '5 minutes')",
            parameter,
        )
    if total != total.to_integral_value():
        raise InvalidWindowSpec(
            f"invalid {parameter}: {text!r} is not a whole number of nanoseconds", parameter
        )
    return sign * int(total)
