"""The Kafka oracle must reproduce facts known from Kafka Streams' own tests.

These tests check the oracle itself (not windowstore): if one fails, the oracle's topology or
I/O is wrong, and no conformance comparison built on it can be trusted.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from .kafka_oracle import OracleError, OracleRecord, run_oracle
from .rows import session, sliding

pytestmark = pytest.mark.conformance

Window = tuple[str, int, int]


def last_by_start(records: Sequence[OracleRecord]) -> dict[int, int | str | None]:
    """Last value written per window start (single-key outputs)."""
    last: dict[int, int | str | None] = {}
    for r in records:
        last[r["start"]] = r["value"]
    return last


def last_by_window(records: Sequence[OracleRecord]) -> dict[Window, int | str | None]:
    last: dict[Window, int | str | None] = {}
    for r in records:
        last[(r["key"], r["start"], r["end"])] = r["value"]
    return last


def as_set(value: int | str | None) -> set[int]:
    assert isinstance(value, str), value
    return {int(v) for v in value.split(",")}


def test_sliding_three_records() -> None:
    # Kafka's KStreamSlidingWindowAggregateTest: time difference 5 s, records at 8000, 9200,
    # 12400 give exactly five windows.
    records: list[list[Any]] = [["A", 8000, 1], ["A", 9200, 2], ["A", 12400, 3]]
    (out,) = run_oracle([sliding(5000, 60000, "concat", "update", records)])
    last = last_by_start(out)
    assert {s: as_set(v) for s, v in last.items()} == {
        3000: {1},
        4200: {1, 2},
        7400: {1, 2, 3},
        8001: {2, 3},
        9201: {3},
    }
    # The reported end is the inclusive end start + time_difference.
    assert all(r["end"] == r["start"] + 5000 for r in out)
    assert {r["key"] for r in out} == {"A"}


def test_sliding_early_and_overlapping_records() -> None:
    # Time difference 10, grace 5, values 1..7 at 10, 10, 14, 15, 20, 22, 30 (includes the
    # "early" window [0, 10] for records whose time is below the time difference).
    times = [10, 10, 14, 15, 20, 22, 30]
    records: list[list[Any]] = [["k", t, v] for v, t in enumerate(times, start=1)]
    (out,) = run_oracle([sliding(10, 5, "concat", "update", records)])
    last = last_by_start(out)
    assert {s: as_set(v) for s, v in last.items()} == {
        0: {1, 2},
        4: {1, 2, 3},
        5: {1, 2, 3, 4},
        10: {1, 2, 3, 4, 5},
        11: {3, 4, 5},
        12: {3, 4, 5, 6},
        15: {4, 5, 6},
        16: {5, 6},
        20: {5, 6, 7},
        21: {6, 7},
        23: {7},
    }
    # Some windows are forwarded more than once (updated after creation).
    assert len(out) > len(last)
    assert all(r["end"] == r["start"] + 10 for r in out)


def test_session_merge_emits_tombstone() -> None:
    # Records at 0 and 10 touch (gap 10 is inclusive) and merge; 21 > 10 + 10 starts anew.
    records: list[list[Any]] = [["k", 0, 1], ["k", 10, 1], ["k", 21, 1]]
    (out,) = run_oracle([session(10, 0, "count", "update", records)])
    windows = [(r["start"], r["end"], r["value"]) for r in out]
    assert windows == [(0, 0, 1), (0, 0, None), (0, 10, 2), (21, 21, 1)]
    assert last_by_window(out) == {("k", 0, 0): None, ("k", 0, 10): 2, ("k", 21, 21): 1}
    # Session updates and tombstones carry the window end as timestamp.
    assert [r["timestamp"] for r in out] == [0, 0, 10, 21]


def test_session_emit_final_once_per_closed_session() -> None:
    # gap 10, grace 5: [0,5] closes once stream time passes 5 + 10 + 5 = 20 (here at 100);
    # [100,105] stays open, so it is never emitted (Kafka has no end-of-input flush).
    records: list[list[Any]] = [
        ["k", 0, 1],
        ["k", 5, 1],
        ["k", 100, 1],
        ["k", 104, 1],
        ["k", 105, 1],
    ]
    count_final, sum_final = run_oracle(
        [
            session(10, 5, "count", "final", records),
            session(10, 5, "sum", "final", [[k, t, t + 1] for k, t, _ in records]),
        ]
    )
    # Emitted while processing the record at 100 (input 2), the first to close [0,5].
    closed = {"key": "k", "start": 0, "end": 5, "timestamp": 5, "input": 2}
    assert count_final == [{**closed, "value": 2}]
    assert sum_final == [{**closed, "value": 1 + 6}]


def test_session_emit_final_close_boundary() -> None:
    # A session [0,0] with gap 10, grace 5 is closed when end < stream_time - gap - grace:
    # stream time 15 does not close it, 16 does.
    not_yet, closed = run_oracle(
        [
            session(10, 5, "count", "final", [["k", 0, 1], ["j", 15, 1]]),
            session(10, 5, "count", "final", [["k", 0, 1], ["j", 16, 1]]),
        ]
    )
    assert not_yet == []
    assert closed == [{"key": "k", "start": 0, "end": 0, "value": 1, "timestamp": 0, "input": 1}]


def test_session_tombstone_rule_observations() -> None:
    # Observed Kafka behaviour the comparison layer relies on:
    # - a record at time t joining the single-point session [t,t] updates it in place, with
    #   no tombstone (the merged window equals the new record's own window);
    # - a record inside an existing multi-point session deletes it (tombstone) and re-emits
    #   the same window with the new aggregate.
    (out,) = run_oracle(
        [
            session(
                10,
                0,
                "concat",
                "update",
                [["k", 5, 1], ["k", 5, 2], ["k", 0, 3], ["k", 2, 4]],
            )
        ]
    )
    assert [(r["start"], r["end"], r["value"], r["timestamp"]) for r in out] == [
        (5, 5, "1", 5),
        (5, 5, "1,2", 5),
        (5, 5, None, 5),
        (0, 5, "1,2,3", 5),
        (0, 5, None, 5),
        (0, 5, "1,2,3,4", 5),
    ]


def test_late_records_are_dropped() -> None:
    # Session: a record is dropped when its (merged) session end < stream_time - gap - grace.
    # Sliding: a record is dropped when t + time_difference < stream_time - grace.
    late_session: list[list[Any]] = [["k", 100, 1], ["k", 84, 1], ["k", 85, 1]]
    session_out, sliding_out = run_oracle(
        [
            session(10, 5, "count", "update", late_session),
            sliding(10, 5, "count", "update", [["k", 100, 1], ["k", 84, 1]]),
        ]
    )
    assert [(r["start"], r["end"], r["value"]) for r in session_out] == [
        (100, 100, 1),
        (85, 85, 1),
    ]
    assert [(r["start"], r["end"], r["value"]) for r in sliding_out] == [(90, 100, 1)]


def test_sliding_emit_final() -> None:
    # onWindowClose works for sliding windows too: windows whose (inclusive) end is below
    # stream_time - grace are emitted once; open ones are not.
    (out,) = run_oracle(
        [sliding(10, 0, "count", "final", [["k", 0, 1], ["k", 10, 1], ["k", 21, 1], ["k", 40, 1]])]
    )
    assert [(r["start"], r["end"], r["value"], r["timestamp"]) for r in out] == [
        (0, 10, 2, 10),
        (1, 11, 1, 10),
        (11, 21, 1, 21),
    ]


def test_malformed_case_fails_loudly() -> None:
    with pytest.raises(OracleError, match="time_difference"):
        run_oracle(
            [
                {
                    "window": "sliding",
                    "grace": 0,
                    "agg": "count",
                    "emit": "update",
                    "records": [],
                }
            ]
        )


def _expected_sessions(times: list[int], gap: int) -> list[tuple[int, int, int]]:
    sessions: list[tuple[int, int, int]] = []
    for t in sorted(times):
        if sessions and t - sessions[-1][1] <= gap:
            start, _, n = sessions[-1]
            sessions[-1] = (start, t, n + 1)
        else:
            sessions.append((t, t, 1))
    return sessions


def test_many_cases_in_one_jvm() -> None:
    rng = random.Random(20240521)
    cases: list[dict[str, Any]] = []
    for i in range(50):
        keys = ["a", "b", "c"][: rng.randint(1, 3)]
        t = 0
        records: list[list[Any]] = []
        for _ in range(rng.randint(1, 12)):
            t += rng.randint(0, 15)
            records.append([rng.choice(keys), t, rng.randint(1, 9)])
        if i % 2 == 0:
            gap = rng.randint(1, 10)
            cases.append(session(gap, 1_000_000, "count", "update", records))
        elif i % 4 == 1:
            d = rng.randint(1, 10)
            agg = rng.choice(["count", "sum", "concat"])
            emit = rng.choice(["update", "final"])
            cases.append(sliding(d, 1_000_000, agg, emit, records))
        else:
            agg = rng.choice(["count", "sum", "concat"])
            emit = rng.choice(["update", "final"])
            gap, grace = rng.randint(1, 10), rng.randint(0, 20)
            cases.append(session(gap, grace, agg, emit, records))

    results = run_oracle(cases)
    assert len(results) == 50

    checked = 0
    for case, out in zip(cases, results, strict=True):
        assert isinstance(out, list)
        kind = (case["window"], case["agg"], case["emit"])
        if kind != ("session", "count", "update"):
            continue
        live = {w: v for w, v in last_by_window(out).items() if v is not None}
        times_by_key: dict[str, list[int]] = {}
        for key, ts, _ in case["records"]:
            times_by_key.setdefault(key, []).append(ts)
        for (key, start, end), value in live.items():
            assert value == sum(1 for ts in times_by_key[key] if start <= ts <= end)
        # With large grace and in-order input the live windows are exactly the gap-split
        # sessions (records merge when t - previous_end <= gap).
        expected = {
            (key, s, e): n
            for key, times in times_by_key.items()
            for s, e, n in _expected_sessions(times, case["gap"])
        }
        assert live == expected
        checked += 1
    assert checked >= 25
