"""No unit guessing: a bare integer duration on a timestamp column is refused, every duration
parameter is checked alike, and at the earliest point its time column's type is known."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest

from windowstore import (
    InvalidWindowSpec,
    SchemaError,
    SessionWindowProcessor,
    SlidingWindowProcessor,
    agg,
    session_windows,
    sliding_windows,
)
from windowstore._durations import check_session_durations, check_sliding_durations

UNIT_MESSAGE = 'the time column "ts" is a timestamp[us]; give a length such as "30m"'


def _stamps(unit: str = "us") -> pa.Table:
    start = datetime(2026, 1, 1)
    times = [start + timedelta(minutes=m) for m in (0, 10, 100)]
    return pa.table(
        {
            "k": ["a", "a", "a"],
            "g": pa.array([timedelta(minutes=30)] * 3, pa.duration(unit)),
            "ts": pa.array(times, pa.timestamp(unit)),
        }
    )


def _ints() -> pa.Table:
    return pa.table({"k": ["a", "a", "a"], "ts": pa.array([0, 10, 100], pa.int64())})


def _refused(info: pytest.ExceptionInfo[InvalidWindowSpec], parameter: str) -> None:
    assert info.value.parameter == parameter
    assert str(info.value).startswith(f"invalid {parameter}: ")
    assert UNIT_MESSAGE in str(info.value)


# Complete mode: the call itself refuses, before computing.


@pytest.mark.parametrize(
    ("parameter", "kwargs"),
    [
        ("gap", {"gap": 1_800_000}),
        ("max_gap", {"gap_column": "g", "max_gap": 1_800_000}),
        ("max_duration", {"gap": "30m", "max_duration": 3_600_000}),
    ],
)
def test_complete_sessions_refuse_a_bare_integer_on_a_timestamp(
    parameter: str, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        session_windows(_stamps(), key="k", time="ts", aggs=[agg.count()], **kwargs)
    _refused(info, parameter)


def test_complete_sliding_refuses_a_bare_integer_on_a_timestamp() -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        sliding_windows(_stamps(), key="k", time="ts", time_difference=60_000_000)
    _refused(info, "time_difference")


def test_lengths_on_a_timestamp_and_integers_on_an_integer_column_still_work() -> None:
    by_length = session_windows(_stamps(), key="k", time="ts", gap="30m", aggs=[agg.count()])
    assert by_length.column("count").to_pylist() == [2, 1]
    by_ticks = session_windows(_ints(), key="k", time="ts", gap=30, aggs=[agg.count()])
    assert by_ticks.column("count").to_pylist() == [2, 1]
    # An integer column takes both forms: "30ms" is 30 ticks of its (default) milliseconds.
    both = session_windows(_ints(), key="k", time="ts", gap="30ms", aggs=[agg.count()])
    assert both.equals(by_ticks)
    windows = sliding_windows(_ints(), key="k", time="ts", time_difference=10)
    assert windows.num_rows > 0


# Processors: the first call refuses, inside its transaction.


def _sessions(**kwargs: Any) -> SessionWindowProcessor:
    args: dict[str, Any] = {"key": "k", "time": "ts", "gap": "30m", "grace": 0}
    return SessionWindowProcessor(**{**args, **kwargs}, aggs=[agg.count()])


def _sliding(**kwargs: Any) -> SlidingWindowProcessor:
    args: dict[str, Any] = {"key": "k", "time": "ts", "time_difference": "30m", "grace": 0}
    return SlidingWindowProcessor(**{**args, **kwargs}, aggs=[agg.count()])


PROCESSORS = [
    ("gap", lambda: _sessions(gap=1_800_000)),
    ("grace", lambda: _sessions(grace=5)),
    ("retention", lambda: _sessions(retention=10_000_000_000)),
    ("max_gap", lambda: _sessions(gap=None, gap_column="g", max_gap=1_800_000)),
    ("max_duration", lambda: _sessions(max_duration=3_600_000_000)),
    ("idle_timeout", lambda: _sessions(idle_timeout=5_000_000)),
    ("time_difference", lambda: _sliding(time_difference=1_800_000)),
    ("grace", lambda: _sliding(grace=5)),
    ("idle_timeout", lambda: _sliding(idle_timeout=5_000_000)),
]


@pytest.mark.parametrize(("parameter", "make"), PROCESSORS)
def test_a_processor_refuses_a_bare_integer_at_its_first_call_changing_nothing(
    parameter: str, make: Any
) -> None:
    p = make()
    before = p.to_bytes()
    with pytest.raises(InvalidWindowSpec) as info:
        p.process(_stamps(), now=0)
    _refused(info, parameter)
    assert p.to_bytes() == before


def test_a_refused_first_call_leaves_the_processor_usable_with_other_data() -> None:
    """The refusal is about the column: the same processor takes an integer time column."""
    p = _sessions(gap=30)
    before = p.to_bytes()
    with pytest.raises(InvalidWindowSpec):
        p.process(_stamps())
    assert p.to_bytes() == before
    out = p.process(_ints())
    assert out.num_rows == 1  # the session [0, 10] closed at stream time 100


@pytest.mark.parametrize("make", [lambda: _sessions(gap=30), lambda: _sliding(time_difference=30)])
def test_processors_on_an_integer_column_accept_integers(make: Any) -> None:
    p = make()
    assert p.process(_ints()).num_rows > 0


# Every duration obeys the same whole-ticks rule.


@pytest.mark.parametrize(
    ("parameter", "kwargs"),
    [
        ("gap", {"gap": "1.5ms"}),
        ("grace", {"grace": "1.5ms"}),
        ("retention", {"retention": "1h0.5ms"}),
        ("idle_timeout", {"idle_timeout": "1.5ms"}),
        ("max_duration", {"max_duration": "1h0.5ms"}),
    ],
)
def test_every_duration_must_be_whole_ticks(parameter: str, kwargs: dict[str, Any]) -> None:
    p = _sessions(**kwargs)
    before = p.to_bytes()
    with pytest.raises(InvalidWindowSpec) as info:
        p.process(_ints(), now=0)
    assert info.value.parameter == parameter
    assert "is not a whole number of ms ticks" in str(info.value)
    assert p.to_bytes() == before


def test_sliding_idle_timeout_must_be_whole_ticks_too() -> None:
    p = _sliding(time_difference=30, idle_timeout="1.5ms")
    with pytest.raises(InvalidWindowSpec, match="invalid idle_timeout: 1500 us is not a whole"):
        p.process(_ints(), now=0)


# What is decidable without the column is refused at construction.


@pytest.mark.parametrize(
    "kwargs",
    [
        {"gap": "30s", "grace": "10s", "retention": "20s"},
        {"gap": timedelta(seconds=30), "grace": "10s", "retention": timedelta(seconds=39)},
        {"gap": 30_000, "grace": "10s", "retention": 39_999},
        {"gap": 30, "grace": 10, "retention": 39, "time_unit": "s"},
    ],
)
def test_retention_below_its_minimum_is_refused_at_construction(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidWindowSpec, match="is below the minimum") as info:
        _sessions(**kwargs)
    assert info.value.parameter == "retention"


def test_retention_at_its_minimum_constructs() -> None:
    _sessions(gap="30s", grace="10s", retention="40s")
    _sessions(gap=30, grace=10, retention=40, time_unit="s")


def test_sliding_overflow_of_lengths_is_refused_at_construction() -> None:
    """3 x time_difference overflows 64-bit ticks of any unit (seconds included)."""
    with pytest.raises(InvalidWindowSpec, match="overflows") as info:
        _sliding(time_difference=f"{2**62}s")
    assert info.value.parameter == "time_difference"
    _sliding(time_difference=f"{2**60}s")  # fits in seconds; a column's unit decides later


# Processing time: ticks are epoch milliseconds by contract, so integers are milliseconds.


def test_processing_time_takes_integers_as_milliseconds() -> None:
    ints = SessionWindowProcessor(key="k", gap=30_000, clock="processing", aggs=[agg.count()])
    lengths = SessionWindowProcessor(key="k", gap="30s", clock="processing", aggs=[agg.count()])
    for p in (ints, lengths):
        p.process(pa.table({"k": ["a"]}), now=0)
        assert p.poll(now=30_000).num_rows == 0
        assert p.poll(now=30_001).num_rows == 1


def test_processing_time_refuses_what_it_cannot_use_at_construction() -> None:
    with pytest.raises(InvalidWindowSpec, match="whole number of ms ticks") as info:
        SessionWindowProcessor(key="k", gap="1.5ms", clock="processing")
    assert info.value.parameter == "gap"


# The entry point for the Spark adapters and the CLI.


def test_check_session_durations_raises_what_the_processor_would() -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        check_session_durations(pa.timestamp("us"), time="ts", gap=1_800_000)
    _refused(info, "gap")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("grace", {"grace": 5}),
        ("retention", {"retention": 10**12}),
        ("max_duration", {"max_duration": 10**10}),
        ("idle_timeout", {"idle_timeout": 5}),
    ]
    for parameter, kwargs in cases:
        with pytest.raises(InvalidWindowSpec) as info:
            check_session_durations(pa.timestamp("us"), time="ts", gap="30m", **kwargs)
        _refused(info, parameter)
    with pytest.raises(InvalidWindowSpec, match="is below the minimum"):
        check_session_durations(pa.timestamp("us"), time="ts", gap="30s", retention="20s")
    with pytest.raises(InvalidWindowSpec, match="1500 us is not a whole number of ms"):
        check_session_durations(pa.timestamp("ms"), time="ts", gap="30s", idle_timeout="1.5ms")


def test_check_session_durations_accepts_what_the_processor_accepts() -> None:
    check_session_durations(pa.timestamp("us", tz="UTC"), time="ts", gap="30m", grace=0)
    check_session_durations(pa.int64(), time="ts", gap=30, grace=5, retention=100)
    check_session_durations(pa.int32(), time="ts", gap=30, time_unit="s", max_duration=60)
    check_session_durations(None, gap=30_000, clock="processing")
    check_session_durations(pa.timestamp("us"), time="ts", gap_column="g", max_gap="1h")


def test_check_session_durations_refuses_a_type_that_is_no_time_column() -> None:
    with pytest.raises(SchemaError, match="string"):
        check_session_durations(pa.string(), time="ts", gap="30m")


def test_check_sliding_durations() -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        check_sliding_durations(pa.timestamp("us"), time="ts", time_difference=10)
    _refused(info, "time_difference")
    with pytest.raises(InvalidWindowSpec) as info:
        check_sliding_durations(pa.timestamp("us"), time="ts", time_difference="1m", grace=5)
    _refused(info, "grace")
    check_sliding_durations(pa.timestamp("us"), time="ts", time_difference="1m", grace="5s")
    check_sliding_durations(pa.int64(), time="ts", time_difference=10, grace=5)


# time_unit is the tick of an integer time column: with a timestamp column it is refused, not
# silently ignored.

TIME_UNIT_MESSAGE = (
    'invalid time_unit: time_unit="s" is the tick of an integer time column only; the time '
    'column "ts" is a timestamp[us], which has its own unit: leave time_unit out'
)


def test_complete_mode_refuses_a_time_unit_with_a_timestamp_column() -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        session_windows(_stamps(), key="k", time="ts", gap="30m", time_unit="s")
    assert (info.value.parameter, str(info.value)) == ("time_unit", TIME_UNIT_MESSAGE)
    with pytest.raises(InvalidWindowSpec) as info:
        sliding_windows(_stamps(), key="k", time="ts", time_difference="30m", time_unit="s")
    assert (info.value.parameter, str(info.value)) == ("time_unit", TIME_UNIT_MESSAGE)


@pytest.mark.parametrize(
    "make", [lambda: _sessions(time_unit="s"), lambda: _sliding(time_unit="s")]
)
def test_a_processor_refuses_a_time_unit_with_a_timestamp_at_its_first_call(make: Any) -> None:
    p = make()
    before = p.to_bytes()
    with pytest.raises(InvalidWindowSpec) as info:
        p.process(_stamps(), now=0)
    assert (info.value.parameter, str(info.value)) == ("time_unit", TIME_UNIT_MESSAGE)
    assert p.to_bytes() == before
    assert p.process(_ints()).num_rows >= 0  # still usable: an integer column takes it


def test_check_durations_refuse_a_time_unit_with_a_timestamp() -> None:
    with pytest.raises(InvalidWindowSpec, match="time_unit") as info:
        check_session_durations(pa.timestamp("us"), time="ts", gap="30m", time_unit="s")
    assert str(info.value) == TIME_UNIT_MESSAGE
    with pytest.raises(InvalidWindowSpec) as info:
        check_sliding_durations(pa.timestamp("us"), time="ts", time_difference="1m", time_unit="s")
    assert str(info.value) == TIME_UNIT_MESSAGE
    check_session_durations(pa.int64(), time="ts", gap="30m", time_unit="s")


# An integer gap column next to a timestamp would silently be ticks of its unit: refused.


def test_an_integer_gap_column_on_a_timestamp_is_refused_naming_it() -> None:
    table = _stamps().set_column(1, "g", pa.array([1_800_000_000] * 3, pa.int64()))
    expected = (
        'column "g": type Int64 cannot be a gap column next to the time column "ts", a '
        "timestamp[us]: its integers would silently be us ticks; give gaps as an Arrow duration "
        "(Spark: interval day to second), or use an integer time column"
    )
    with pytest.raises(SchemaError) as info:
        session_windows(table, key="k", time="ts", gap_column="g", max_gap="1h", aggs=[agg.count()])
    assert (info.value.column, str(info.value)) == ("g", expected)
    p = _sessions(gap=None, gap_column="g", max_gap="1h")
    before = p.to_bytes()
    with pytest.raises(SchemaError) as info:
        p.process(table)
    assert (info.value.column, str(info.value)) == ("g", expected)
    assert p.to_bytes() == before


def test_gap_columns_accepted_where_their_unit_is_known() -> None:
    """A duration column on a timestamp, integer ticks on an integer time column."""
    out = session_windows(
        _stamps(), key="k", time="ts", gap_column="g", max_gap="1h", aggs=[agg.count()]
    )
    assert out.column("count").to_pylist() == [2, 1]
    ints = _ints().append_column("g", pa.array([30, 30, 30], pa.int64()))
    out = session_windows(ints, key="k", time="ts", gap_column="g", max_gap=60, aggs=[agg.count()])
    assert out.column("count").to_pylist() == [2, 1]
