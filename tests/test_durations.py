"""Duration arguments: every spelling, exact conversion, clear errors."""

from __future__ import annotations

from datetime import timedelta

import pytest

from windowstore import InvalidWindowSpec
from windowstore._durations import to_duration

S = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("30s", 30 * S),
        ("30 s", 30 * S),
        ("30sec", 30 * S),
        ("30 seconds", 30 * S),
        ("1500ms", 1_500_000_000),
        ("1500 milliseconds", 1_500_000_000),
        ("250us", 250_000),
        ("250µs", 250_000),
        ("7ns", 7),
        ("5m", 300 * S),
        ("5 minutes", 300 * S),
        ("5min", 300 * S),
        ("1h", 3600 * S),
        ("2 hours", 7200 * S),
        ("1h30m", 5400 * S),
        ("1d", 86_400 * S),
        ("1w", 604_800 * S),
        ("1.5s", 1_500_000_000),
        ("-5s", -5 * S),
    ],
)
def test_strings(text: str, nanos: int) -> None:
    assert to_duration(text, "gap") == ("nanos", nanos)


def test_timedelta_and_ticks() -> None:
    assert to_duration(timedelta(minutes=1, microseconds=3), "gap") == ("nanos", 60 * S + 3000)
    assert to_duration(42, "grace") == ("ticks", 42)


@pytest.mark.parametrize("text", ["", "s", "5", "5 parsecs", "1.0000000001ns", "5s and more"])
def test_unreadable_strings_name_the_parameter(text: str) -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        to_duration(text, "grace")
    assert info.value.parameter == "grace"


@pytest.mark.parametrize("value", [1.5, None, True, [1]])
def test_other_types(value: object) -> None:
    with pytest.raises(TypeError, match="max_gap"):
        to_duration(value, "max_gap")  # type: ignore[arg-type]
