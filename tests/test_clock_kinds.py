"""The core's clocks on every window kind: processing time and idle timeouts for sliding windows
as for sessions, random processing-time streams against complete mode over their arrival
times, all-or-nothing calls that read the clock, and the errors of the clock's arguments."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from windowstore import (
    InvalidRecordError,
    InvalidWindowSpec,
    SessionWindowProcessor,
    SlidingWindowProcessor,
    agg,
    session_windows,
    sliding_windows,
)

T0 = 1_700_000_000_000
MS = pa.timestamp("ms", "UTC")


def sliding(**kwargs: Any) -> SlidingWindowProcessor:
    return SlidingWindowProcessor(key="k", time_difference=100, aggs=[agg.count()], **kwargs)


def rows(table: pa.Table, *names: str) -> list[tuple[Any, ...]]:
    return sorted(zip(*(table.column(n).to_pylist() for n in names), strict=True))


# --- sliding windows on the wall clock -----------------------------------------------------------


def test_sliding_processing_time_closes_windows_on_the_clock_alone() -> None:
    p = sliding(clock="processing")
    assert p.process(pa.table({"k": ["a", "a"]}), now=T0).num_rows == 0
    # Stream time moves to T0 + 50 before the record: [T0 - 100, T0] has closed.
    out = p.process(pa.table({"k": ["a"]}), now=T0 + 50)
    assert out.schema.field("window_start").type == MS
    assert [(r["window_end"], r["count"]) for r in out.to_pylist()] == [
        (pa.scalar(T0, MS).as_py(), 2)
    ]
    assert p.poll(now=T0 + 50).num_rows == 0
    assert rows(p.poll(now=T0 + 51), "count") == [(3,)]  # [T0 - 50, T0 + 50]
    assert p.poll(now=T0 + 101).num_rows == 0
    assert rows(p.poll(now=T0 + 102), "count") == [(1,)]  # [T0 + 1, T0 + 101]
    assert p.metrics()["stream_time"] == T0 + 102
    assert p.flush().num_rows == 0


def test_sliding_processing_time_refuses_time_grace_and_idle_timeout() -> None:
    for kwargs, parameter in [
        ({"time": "t"}, "time"),
        ({"grace": "1s"}, "grace"),
        ({"idle_timeout": "1s"}, "idle_timeout"),
        ({"time_unit": "s"}, "time_unit"),
    ]:
        with pytest.raises(InvalidWindowSpec) as e:
            sliding(clock="processing", **kwargs)
        assert e.value.parameter == parameter
    with pytest.raises(InvalidWindowSpec) as e:
        sliding(clock="wall")
    assert e.value.parameter == "clock"
    with pytest.raises(InvalidWindowSpec) as e:
        sliding(grace=0)
    assert e.value.parameter == "time"
    with pytest.raises(InvalidWindowSpec) as e:
        sliding(time="t")
    assert e.value.parameter == "grace"


def test_an_idle_sliding_stream_runs_on_the_wall_clock() -> None:
    p = sliding(time="t", grace=10, idle_timeout="1s")
    assert p.process(pa.table({"k": ["a"], "t": [1_000]}), now=T0).num_rows == 0
    assert p.poll(now=T0 + 999).num_rows == 0  # not idle yet
    # Idle for 1 s: stream time runs from 1000 with the clock; the window [900, 1000] closes
    # once stream time passes 1000 + 10.
    out = p.poll(now=T0 + 1_011)
    assert [(r["window_start"], r["window_end"]) for r in out.to_pylist()] == [(900, 1_000)]
    assert p.metrics()["stream_time"] == 2_011
    # A record judged against the advanced stream time: its left window ended before 2001.
    p.process(pa.table({"k": ["b"], "t": [1_500]}), now=T0 + 1_012)
    assert p.rejected().column("reason").to_pylist() == ["late"]


def test_an_idle_advance_and_the_records_of_a_call_are_one_transaction() -> None:
    p = sliding(time="t", grace=0, idle_timeout=5, on_invalid="error")
    p.process(pa.table({"k": ["a"], "t": [10]}), now=T0)
    before = p.to_bytes()
    bad = pa.table({"k": pa.array([None], pa.string()), "t": [20]})
    with pytest.raises(InvalidRecordError):
        p.process(bad, now=T0 + 60_000)  # idle: the advance comes first, then the bad record
    assert p.to_bytes() == before
    assert p.metrics()["stream_time"] == 10
    out = p.poll(now=T0 + 60_000)
    assert out.num_rows == 1
    assert p.metrics()["stream_time"] == 10 + 60_000


def test_records_mode_idle_call_that_fails_changes_no_byte() -> None:
    # Issue 38, D7: a failed call after an idle advance used to change the held rows' bytes.
    p = SessionWindowProcessor(
        key="k", time="t", gap=10, grace=0, output="records", idle_timeout=5, on_invalid="error"
    )
    p.process(pa.table({"k": ["a", "a"], "t": [0, 3], "x": [1, 2]}), now=T0)
    before = p.to_bytes()
    with pytest.raises(InvalidRecordError):
        p.process(pa.table({"k": ["a"], "t": pa.array([None], pa.int64()), "x": [3]}), now=T0 + 9)
    assert p.to_bytes() == before
    assert p.metrics()["held_rows"] == 2


def test_a_processing_time_call_without_usable_records_still_moves_stream_time() -> None:
    # Issue 38, D3: every call first advances stream time to max(now, stream time).
    p = SessionWindowProcessor(key="k", gap=2, clock="processing", aggs=[agg.count()])
    assert p.poll(now=1).num_rows == 0
    assert p.metrics()["stream_time"] == 1
    p.process(pa.table({"k": ["a"]}), now=4)
    out = p.process(pa.table({"k": pa.array([None], pa.string())}), now=9)
    assert out.column("count").to_pylist() == [1]
    assert p.metrics()["stream_time"] == 9
    assert p.process(pa.table({"k": pa.array([], pa.string())}), now=20).num_rows == 0
    assert p.metrics()["stream_time"] == 20


@pytest.mark.parametrize("kind", ["sessions", "sliding"])
def test_the_clock_and_idle_mark_come_back_with_the_bytes(kind: str) -> None:
    p: SessionWindowProcessor | SlidingWindowProcessor
    if kind == "sessions":
        p = SessionWindowProcessor(
            key="k", time="t", gap=2, grace=0, idle_timeout=5, aggs=[agg.count()]
        )
    else:
        p = sliding(time="t", grace=0, idle_timeout=5)
    p.process(pa.table({"k": ["a"], "t": [0]}), now=T0)
    q = type(p).from_bytes(p.to_bytes())
    assert q._inner.clock == "idle"
    # A restore starts the idle period again at its first call ...
    assert q.poll(now=T0 + 1_000).num_rows == 0
    assert q.poll(now=T0 + 1_004).num_rows == 0
    assert q.poll(now=T0 + 1_005).num_rows == 1
    # ... unless the run that wrote the mark resumes it (the Spark adapter's micro-batches).
    p._resume_idle("run-1")
    r = type(p).from_bytes(p.to_bytes())
    r._resume_idle("run-1")
    assert r.poll(now=T0 + 5).num_rows == 1
    s = type(p).from_bytes(p.to_bytes())
    s._resume_idle("run-2")
    assert s.poll(now=T0 + 5).num_rows == 0


# --- random processing-time streams against complete mode ---------------------------------------


@pytest.mark.parametrize("kind", ["sessions", "sliding"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("seed", range(12))
def test_processing_time_streams_equal_complete_mode_over_arrival_times(
    kind: str, batched: bool, seed: int
) -> None:
    rng = random.Random(seed)
    aggs = [agg.count(), agg.sum("x")]
    if kind == "sessions":
        p: Any = SessionWindowProcessor(key="k", gap=20, clock="processing", aggs=aggs)
        window = ("session_start", "session_end")
    else:
        p = SlidingWindowProcessor(key="k", time_difference=20, clock="processing", aggs=aggs)
        window = ("window_start", "window_end")
    p._inner._set_batched(batched)
    now, stream_time = T0, None
    seen: list[tuple[str, int, int]] = []
    out: list[pa.Table] = []
    for _ in range(rng.randint(1, 30)):
        now += rng.choice([-15, 0, 1, 5, 19, 20, 21, 60])  # the clock may step back
        arrival = now if stream_time is None else max(now, stream_time)
        stream_time = arrival
        if rng.random() < 0.2:
            out.append(p.poll(now=now))
        else:
            n = rng.choice([0, 1, 3, 20, 40])
            keys = [rng.choice("abcd") for _ in range(n)]
            xs = [rng.randint(0, 9) for _ in range(n)]
            batch = pa.table({"k": pa.array(keys, pa.string()), "x": pa.array(xs, pa.int64())})
            out.append(p.process(batch, now=now))
            seen.extend((k, arrival, x) for k, x in zip(keys, xs, strict=True))
        if rng.random() < 0.2:
            p = type(p).from_bytes(p.to_bytes())
            p._inner._set_batched(batched)
    out.append(p.flush())
    got = [t for t in out if t.num_rows]
    table = pa.table(
        {
            "k": pa.array([r[0] for r in seen], pa.string()),
            "t": pa.array([r[1] for r in seen], pa.int64()).cast(MS),
            "x": pa.array([r[2] for r in seen], pa.int64()),
        }
    )
    if kind == "sessions":
        want = session_windows(table, key="k", time="t", gap="20ms", aggs=aggs)
    else:
        want = sliding_windows(table, key="k", time="t", time_difference="20ms", aggs=aggs)
    names = ("k", *window, "count", "sum_x")
    merged = [r for t in got for r in rows(t, *names)]
    assert sorted(merged) == rows(want, *names)


def test_processing_time_calls_take_the_batched_path() -> None:
    # The clock's advance comes before the records in both paths: a call with it batches
    # (sessions: sliding windows have one path).
    p = SessionWindowProcessor(key="k", gap=20, clock="processing", aggs=[agg.count()])
    for i in range(3):
        p.process(pa.table({"k": [f"k{j % 4}" for j in range(64)]}), now=T0 + 30 * i)
    assert p._inner._batched_calls() == 3
