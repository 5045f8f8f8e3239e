"""Duration arguments: every spelling, exact conversion, clear errors."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pytest

from windowstore import InvalidWindowSpec, agg, session_windows
from windowstore._durations import DurationLike, to_duration

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


@pytest.mark.parametrize(
    ("value", "days"),
    [
        ("1d", 1),
        ("1 day", 1),
        ("3 days", 3),
        (timedelta(days=1), 1),
        (np.timedelta64(1, "D"), 1),
        ("2 weeks", 14),
        (np.timedelta64(1, "W"), 7),
    ],
)
def test_a_day_is_86400_seconds(value: DurationLike, days: int) -> None:
    """Fixed lengths, as Kafka's: a day is never a calendar day of some time zone."""
    assert to_duration(value, "gap") == ("nanos", days * 86_400 * S)


def test_a_one_day_gap_spans_a_daylight_saving_change_as_86400_seconds() -> None:
    """Two records 23.5 h apart across New York's spring change (a 23-hour calendar day) share a
    session with gap "1 day" (Spark's session_window(ts, "1 day") in that session time zone
    splits them); 24.5 h apart across the autumn change (a 25-hour day) they do not."""
    tz = ZoneInfo("America/New_York")
    for first, second, sessions in [
        (datetime(2024, 3, 9, 12, 0, tzinfo=tz), datetime(2024, 3, 10, 12, 30, tzinfo=tz), 1),
        (datetime(2024, 11, 2, 12, 0, tzinfo=tz), datetime(2024, 11, 3, 11, 30, tzinfo=tz), 2),
    ]:
        t = pa.table(
            {
                "k": ["a", "a"],
                "ts": pa.array([first, second], pa.timestamp("us", tz="America/New_York")),
            }
        )
        out = session_windows(t, key="k", time="ts", gap="1 day", aggs=[agg.count()])
        assert out.num_rows == sessions, (first, second)
