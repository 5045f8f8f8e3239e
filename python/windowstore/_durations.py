"""Durations as users write them: ``timedelta``, ``"30s"``, ``"5 minutes"``, or integer ticks."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal, InvalidOperation

from windowstore.exceptions import InvalidWindowSpec

__all__ = ["DurationLike", "to_duration"]

DurationLike = timedelta | str | int

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

    Integers are ticks of the time column; ``timedelta`` and strings are wall-clock lengths,
    converted into ticks exactly once the time unit is known. Strings are one or more
    ``<number><unit>`` parts (``"90s"``, ``"1h30m"``, ``"5 minutes"``, ``"1.5s"``).

    Raises:
        InvalidWindowSpec: the value cannot be read as a duration (names ``parameter``).
        TypeError: the value is of another type.

    Example:
        >>> to_duration("1h30m", "gap")
        ('nanos', 5400000000000)
    """
    if isinstance(value, bool):
        raise TypeError(f"{parameter} must be a timedelta, a string or int ticks, not bool")
    if isinstance(value, int):
        return ("ticks", value)
    if isinstance(value, timedelta):
        nanos = ((value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds) * 1_000
        return ("nanos", nanos)
    if isinstance(value, str):
        return ("nanos", _parse(value, parameter))
    raise TypeError(
        f"{parameter} must be a timedelta, a string like '30s' or int ticks, "
        f"not {type(value).__name__}"
    )


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
