"""Wall-clock session processors on a fake clock (``now=``): processing-time sessions (the tests
of Akka's session-window stage carried over) and idle event-time streams (``idle_timeout``);
argument errors, all-or-nothing calls and the clock settings across bytes and snapshots."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pytest

from windowstore import (
    InvalidRecordError,
    InvalidWindowSpec,
    SessionOverflowError,
    SessionWindowProcessor,
    SnapshotError,
    agg,
)

#: The fake clock's start (epoch milliseconds).
T0 = 1_700_000_000_000


def at(ms: int) -> pa.TimestampScalar:
    """The arrival time ``T0 + ms`` as the processor reports it."""
    return pa.scalar(T0 + ms, pa.timestamp("ms", "UTC"))


def processing(**kwargs: Any) -> SessionWindowProcessor:
    return SessionWindowProcessor(key="k", gap="1s", clock="processing", **kwargs)


# --- processing time: Akka's session-window stage -----------------------------------------------


def ten_elements(p: SessionWindowProcessor) -> None:
    """Akka's test input: elements 1..10 of one key, 100 ms apart (all within the 1 s gap)."""
    for i in range(1, 11):
        assert p.process(pa.table({"k": ["a"], "x": [i]}), now=T0 + 100 * i).num_rows == 0


@pytest.mark.parametrize(
    ("overflow", "kept"), [("drop_oldest", [6, 7, 8, 9, 10]), ("drop_newest", [1, 2, 3, 4, 5])]
)
def test_a_bounded_buffer_keeps_what_its_overflow_strategy_says(
    overflow: Literal["drop_oldest", "drop_newest"], kept: list[int]
) -> None:
    p = processing(aggs=[agg.collect("x", max_size=5, overflow=overflow), agg.count()])
    ten_elements(p)
    # The session closes once more than 1 s has passed since its last element (at 1000 ms).
    assert p.poll(now=T0 + 2_000).num_rows == 0
    out = p.poll(now=T0 + 2_001)
    assert out.to_pylist() == [
        {"k": "a", "session_start": at(100).as_py(), "session_end": at(1_000).as_py(),
         "collect_x": kept, "count": 10}
    ]  # fmt: skip
    assert out.schema.field("session_start").type == pa.timestamp("ms", "UTC")
    assert p.poll(now=T0 + 60_000).num_rows == 0
    assert p.flush().num_rows == 0


def test_fail_raises_and_the_call_changes_nothing() -> None:
    p = processing(aggs=[agg.collect("x", max_size=5, overflow="fail")])
    for i in range(1, 6):
        p.process(pa.table({"k": ["a"], "x": [i]}), now=T0 + 100 * i)
    before = p.to_bytes()
    with pytest.raises(SessionOverflowError, match="max_size 5"):
        p.process(pa.table({"k": ["a"], "x": [6]}), now=T0 + 600)
    assert p.to_bytes() == before
    assert p.metrics()["stream_time"] == T0 + 500


def test_the_upstream_end_emits_what_is_buffered() -> None:
    p = processing(aggs=[agg.collect("x", max_size=5, overflow="drop_oldest")])
    ten_elements(p)
    assert p.flush().column("collect_x").to_pylist() == [[6, 7, 8, 9, 10]]


def test_keys_close_on_their_own_silence_also_without_records() -> None:
    p = processing(aggs=[agg.count()])
    p.process(pa.table({"k": ["a", "b"]}), now=T0)
    p.process(pa.table({"k": ["b"]}), now=T0 + 900)
    # a is silent for more than 1 s: it closes at the next record of any key, or a poll.
    out = p.process(pa.table({"k": ["b"]}), now=T0 + 1_800)
    assert out.to_pylist() == [
        {"k": "a", "session_start": at(0).as_py(), "session_end": at(0).as_py(), "count": 1}
    ]
    assert p.next_close() == T0 + 2_801
    assert p.poll(now=T0 + 2_800).num_rows == 0
    assert p.poll(now=T0 + 2_801).column("count").to_pylist() == [3]
    # A record after the gap starts a new session.
    p.process(pa.table({"k": ["b"]}), now=T0 + 5_000)
    assert p.flush().column("session_start").to_pylist() == [at(5_000).as_py()]
    assert p.metrics()["rejected"] == 0


def test_a_clock_that_steps_back_is_held_at_its_latest_reading() -> None:
    p = processing(aggs=[agg.count()])
    p.process(pa.table({"k": ["a"]}), now=T0 + 5_000)
    # The clock steps back 10 s: the record arrives at 5000 all the same, never late.
    p.process(pa.table({"k": ["a"]}), now=T0 - 5_000)
    assert p.poll(now=T0).num_rows == 0
    assert p.flush().to_pylist() == [
        {"k": "a", "session_start": at(5_000).as_py(), "session_end": at(5_000).as_py(),
         "count": 2}
    ]  # fmt: skip
    assert p.metrics()["rejected_late"] == 0


def test_now_takes_an_aware_datetime_and_defaults_to_the_system_clock() -> None:
    p = processing(aggs=[agg.count()])
    start = datetime(2024, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    p.process(pa.table({"k": ["a"]}), now=start)
    out = p.poll(now=start + timedelta(seconds=1, milliseconds=1))
    assert out.column("session_start").to_pylist() == [start]
    # The system clock is far beyond 2024: a default poll closes a new session of 2024.
    p.process(pa.table({"k": ["b"]}), now=start)
    assert p.poll().column("k").to_pylist() == ["b"]


def test_records_output_tags_rows_with_arrival_times() -> None:
    p = processing(output="records")
    p.process(pa.table({"k": ["a", "b"], "x": [1, 2]}), now=T0)
    p.process(pa.table({"k": ["a"], "x": [3]}), now=T0 + 500)
    out = p.poll(now=T0 + 1_600).drop_columns("session_id")
    assert out.to_pylist() == [
        {"k": "a", "x": 1, "session_start": at(0).as_py(), "session_end": at(500).as_py()},
        {"k": "a", "x": 3, "session_start": at(0).as_py(), "session_end": at(500).as_py()},
        {"k": "b", "x": 2, "session_start": at(0).as_py(), "session_end": at(0).as_py()},
    ]
    assert p.flush().num_rows == 0


def test_rejected_rows_keep_the_input_columns_only() -> None:
    p = processing(aggs=[agg.count()])
    p.process(pa.table({"k": ["a", None], "x": [1, 2]}), now=T0)
    assert p.rejected().to_pylist() == [{"k": None, "x": 2, "reason": "null_key"}]


@pytest.mark.parametrize(
    ("kwargs", "parameter", "message"),
    [
        ({"clock": "wall"}, "clock", '"event"'),
        ({"time": "ts"}, "time", "reads no time column"),
        ({"time_unit": "ms"}, "time_unit", "reads no time column"),
        ({"gap": None, "gap_column": "g", "max_gap": "5s"}, "gap_column", "fixed gap"),
        ({"grace": "1s"}, "grace", "never late"),
        ({"idle_timeout": "5s"}, "idle_timeout", "event time"),
    ],
)
def test_processing_time_refuses_what_it_cannot_use(
    kwargs: dict[str, Any], parameter: str, message: str
) -> None:
    call: dict[str, Any] = {"key": "k", "gap": "1s", "clock": "processing", **kwargs}
    with pytest.raises(InvalidWindowSpec, match=message) as e:
        SessionWindowProcessor(**call)
    assert e.value.parameter == parameter


def test_processing_time_accepts_a_zero_grace_and_refuses_a_naive_now() -> None:
    p = processing(grace=0)
    with pytest.raises(InvalidWindowSpec, match="no time zone") as e:
        p.process(pa.table({"k": ["a"]}), now=datetime(2024, 1, 1))
    assert e.value.parameter == "now"
    with pytest.raises(TypeError, match="epoch milliseconds"):
        p.poll(now=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="epoch milliseconds"):
        p.poll(now=True)


def test_any_input_column_name_is_kept_as_it_is() -> None:
    # Arrival times live in the core, not in a hidden input column: no name is reserved.
    p = processing(output="records")
    p.process(pa.table({"k": ["a"], "__windowstore_arrival": [1]}), now=T0)
    out = p.flush()
    assert out.column("__windowstore_arrival").to_pylist() == [1]
    assert out.column("session_start").to_pylist() == [at(0).as_py()]


def test_event_time_still_needs_time_and_grace() -> None:
    with pytest.raises(InvalidWindowSpec, match="needs its time column") as e:
        SessionWindowProcessor(key="k", gap="1s", grace=0)
    assert e.value.parameter == "time"
    with pytest.raises(InvalidWindowSpec, match="needs grace") as e:
        SessionWindowProcessor(key="k", time="t", gap="1s")
    assert e.value.parameter == "grace"


@pytest.mark.parametrize(("how", "mode"), [("bytes", "windows"), ("snapshot", "records")])
def test_the_clock_comes_back_with_the_state(how: str, mode: str, tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"output": mode} if mode == "records" else {"aggs": [agg.count()]}
    p = processing(**kwargs)
    p.process(pa.table({"k": ["a"], "x": [1]}), now=T0)
    if how == "bytes":
        q = SessionWindowProcessor.from_bytes(p.to_bytes())
    else:
        p.snapshot(tmp_path / "p.snap")
        q = SessionWindowProcessor.restore(tmp_path / "p.snap")
    assert q.metrics() == p.metrics()
    if mode == "windows":
        assert q.to_bytes() == p.to_bytes()
    q.process(pa.table({"k": ["a"], "x": [2]}), now=T0 + 900)
    out = q.poll(now=T0 + 1_901)
    assert out.num_rows == (2 if mode == "records" else 1)
    assert out.column("session_end").to_pylist()[0] == at(900).as_py()


def test_damaged_clock_bytes_are_refused_whole() -> None:
    p = processing()
    p.process(pa.table({"k": ["a"]}), now=T0)
    data = bytearray(p.to_bytes())
    data[20] ^= 1
    with pytest.raises(SnapshotError, match="checksum"):
        SessionWindowProcessor.from_bytes(bytes(data))
    with pytest.raises(SnapshotError):
        SessionWindowProcessor.from_bytes(bytes(data[:-3]))


# --- idle event-time streams ------------------------------------------------------------------


def idle(**kwargs: Any) -> SessionWindowProcessor:
    """Event time (epoch ms), gap 10 s, grace 2 s, idle after 5 s of wall-clock silence."""
    return SessionWindowProcessor(
        key="k", time="t", gap="10s", grace="2s", idle_timeout="5s", aggs=[agg.count()], **kwargs
    )


def rows(*records: tuple[str, int]) -> pa.Table:
    return pa.table({"k": [k for k, _ in records], "t": [T0 + t for _, t in records]})


def test_an_idle_stream_runs_on_the_wall_clock_and_closes_its_windows() -> None:
    p = idle()
    # Event times 0 and 1000 arrive at wall time 500: T = 1000, w = 500.
    assert p.process(rows(("a", 0), ("b", 1_000)), now=T0 + 500).num_rows == 0
    assert p.poll(now=T0 + 5_499).num_rows == 0  # not idle for 5 s yet
    assert p.metrics()["stream_time"] == T0 + 1_000
    assert p.poll(now=T0 + 5_500).num_rows == 0  # idle: stream time 1000 + 5000
    assert p.metrics()["stream_time"] == T0 + 6_000
    # a's session [0, 0] closes once stream time passes 0 + 10 s gap + 2 s grace.
    assert p.poll(now=T0 + 11_500).num_rows == 0
    assert p.metrics()["stream_time"] == T0 + 12_000
    out = p.poll(now=T0 + 11_501)
    assert out.column("k").to_pylist() == ["a"]
    assert p.metrics()["stream_time"] == T0 + 12_001
    # Records after the idle period are judged by the advanced stream time: at wall time 14500
    # stream time is 15000 first, so b's session [1000, 1000] closes (reach 11000 + 2000), b's
    # record at 1000 is late; c's at 12000 is not (its session stays open until 24000).
    out = p.process(rows(("b", 1_000), ("c", 12_000)), now=T0 + 14_500)
    assert out.to_pylist() == [
        {"k": "b", "session_start": T0 + 1_000, "session_end": T0 + 1_000, "count": 1}
    ]
    assert p.metrics()["rejected_late"] == 1
    assert p.rejected().to_pylist() == [{"k": "b", "t": T0 + 1_000, "reason": "late"}]
    # The records reset the idle clock: T = 15000, w = 14500.
    assert p.poll(now=T0 + 19_499).num_rows == 0
    assert p.metrics()["stream_time"] == T0 + 15_000
    assert p.flush().column("k").to_pylist() == ["c"]


def test_no_idle_advance_while_records_keep_arriving() -> None:
    p = idle()
    for i in range(20):
        p.process(rows(("a", 1_000 * i)), now=T0 + 4_000 * i)
        assert p.poll(now=T0 + 4_000 * i + 4_999).num_rows == 0
    assert p.metrics()["stream_time"] == T0 + 19_000


def test_an_idle_call_whose_records_fail_changes_nothing() -> None:
    p = idle(on_invalid="error")
    p.process(rows(("a", 0)), now=T0)
    before = p.to_bytes()
    bad = pa.table({"k": ["b", None], "t": [T0 + 20_000, T0 + 20_000]})
    with pytest.raises(InvalidRecordError):
        p.process(bad, now=T0 + 30_000)  # idle: the advance alone would close a's session
    assert p.to_bytes() == before
    assert p.metrics()["stream_time"] == T0
    assert p.poll(now=T0 + 30_000).column("k").to_pylist() == ["a"]


def test_an_advance_that_raises_stream_time_counts_as_a_record() -> None:
    p = idle()
    p.process(rows(("a", 0)), now=T0)
    p.advance(T0 + 3_000, now=T0 + 4_000)  # a watermark: the stream is alive
    assert p.poll(now=T0 + 8_999).num_rows == 0
    assert p.poll(now=T0 + 9_000).num_rows == 0
    assert p.metrics()["stream_time"] == T0 + 3_000 + 5_000


def test_an_advance_applies_the_idle_rule_at_its_own_reading() -> None:
    # As a record at 11 arriving at 100 would: the stream was idle for 100 ms (timeout 5), so
    # stream time is 10 + 100 first; the advance to 11 is behind it.
    def make() -> SessionWindowProcessor:
        p = SessionWindowProcessor(
            key="k", time="t", gap=5, grace=0, idle_timeout=5, aggs=[agg.count()]
        )
        p.process(pa.table({"k": ["a"], "t": [10]}), now=0)
        return p

    by_record = make()
    out = by_record.process(pa.table({"k": ["b"], "t": [11]}), now=100)
    assert out.column("k").to_pylist() == ["a"]
    assert by_record.metrics()["stream_time"] == 110
    p = make()
    assert p.advance(11, now=100).column("k").to_pylist() == ["a"]
    assert p.metrics()["stream_time"] == 110
    # The idle period starts again at 100 from stream time 110.
    assert p.poll(now=104).num_rows == 0
    assert p.metrics()["stream_time"] == 110
    p.poll(now=105)
    assert p.metrics()["stream_time"] == 115


def test_the_idle_rule_runs_before_the_first_batch() -> None:
    p = SessionWindowProcessor(key="k", time="t", gap=5, grace=0, idle_timeout=10)
    p.advance(100, now=0)
    assert p.poll(now=9).num_rows == 0
    assert p.metrics()["stream_time"] == 100
    p.poll(now=50)  # idle for 50 ms of an integer column in ms
    assert p.metrics()["stream_time"] == 150


def test_now_takes_numpy_integers() -> None:
    p = idle()
    p.process(rows(("a", 0)), now=np.int64(T0))
    p.poll(now=np.int32(6_000) + np.int64(T0))
    assert p.metrics()["stream_time"] == T0 + 6_000
    with pytest.raises(TypeError, match="now must be"):
        p.poll(now=np.float64(T0))


def test_the_idle_clock_starts_again_after_a_restore(tmp_path: Path) -> None:
    p = idle()
    p.process(rows(("a", 0)), now=T0)
    q = SessionWindowProcessor.from_bytes(p.to_bytes())
    # The time spent down is not idle: the first call after the restore starts the period.
    assert q.poll(now=T0 + 100_000).num_rows == 0
    assert q.metrics()["stream_time"] == T0
    assert q.poll(now=T0 + 104_999).num_rows == 0
    out = q.poll(now=T0 + 112_001)
    assert out.column("k").to_pylist() == ["a"]
    assert q.metrics()["stream_time"] == T0 + 12_001
    p.snapshot(tmp_path / "p.snap")
    r = SessionWindowProcessor.restore(tmp_path / "p.snap")
    assert r.metrics() == p.metrics()
    assert r.poll(now=T0 + 100_000).num_rows == 0
    assert r.poll(now=T0 + 112_001).num_rows == 1


def test_idle_with_records_output_and_integer_ticks() -> None:
    p = SessionWindowProcessor(
        key="k", time="t", time_unit="s", gap=10, grace=0, idle_timeout=5, output="records"
    )
    p.process(pa.table({"k": ["a"], "t": [100], "x": [7]}), now=T0)
    # idle_timeout=5 is 5 ticks of the time column: 5 s; stream time runs from 100 s.
    assert p.poll(now=T0 + 10_999).num_rows == 0
    out = p.poll(now=T0 + 11_000)
    assert out.drop_columns("session_id").to_pylist() == [
        {"k": "a", "t": 100, "x": 7, "session_start": 100, "session_end": 100}
    ]


@pytest.mark.parametrize("value", ["-1s", 0, "0s", -5])
def test_idle_timeout_must_be_positive(value: Any) -> None:
    with pytest.raises(InvalidWindowSpec) as e:
        SessionWindowProcessor(key="k", time="t", gap="1s", grace=0, idle_timeout=value)
    assert e.value.parameter == "idle_timeout"


def test_poll_without_a_wall_clock_feature_does_nothing() -> None:
    p = SessionWindowProcessor(key="k", time="t", gap="1s", grace=0)
    p.process(rows(("a", 0)))
    before = p.to_bytes()
    assert p.poll(now=T0 + 10**9).num_rows == 0
    assert p.to_bytes() == before
