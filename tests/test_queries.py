"""Reads of a running processor's open windows (`windows`, and for sessions Kafka's `fetch`,
`fetch_range`, `find_sessions`) against their model: in ``final`` mode, the windows a flush
would emit now; in the changelog modes, those of the same processor in ``final`` mode. Random
streams over every window kind and option, each emit mode, with snapshots and restores between
reads; reads never change the processor's bytes."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from windowstore import (
    InvalidWindowSpec,
    SchemaError,
    SessionStore,
    SessionWindowProcessor,
    SlidingWindowProcessor,
    agg,
)
from windowstore._processor import Emit, WindowProcessor

KEYS = ["a", "b", "c", "d", "e"]
AGGS = [agg.count(), agg.sum("x"), agg.max("x")]
UDFS = [agg.udf(lambda x: len(x), "x", returns=pa.int64()).alias("n"), agg.count()]
T0 = 1_700_000_000_000

Make = Callable[[Emit], WindowProcessor]

#: Each kind and option: how to make it in an emit mode, and its aggregates (for restores).
KINDS: dict[str, tuple[Make, list[Any]]] = {
    "fixed gap": (
        lambda emit: SessionWindowProcessor(
            key="k", time="t", gap=10, grace=15, emit=emit, aggs=AGGS
        ),
        AGGS,
    ),
    "dynamic gap": (
        lambda emit: SessionWindowProcessor(
            key="k", time="t", gap_column="g", max_gap=20, grace=10, emit=emit, aggs=AGGS
        ),
        AGGS,
    ),
    "max_duration": (
        lambda emit: SessionWindowProcessor(
            key="k", time="t", gap=8, grace=20, max_duration=15, emit=emit, aggs=AGGS
        ),
        AGGS,
    ),
    "sliding": (
        lambda emit: SlidingWindowProcessor(
            key="k", time="t", time_difference=10, grace=12, emit=emit, aggs=AGGS
        ),
        AGGS,
    ),
    "udf": (
        lambda emit: SessionWindowProcessor(
            key="k", time="t", gap=10, grace=15, emit=emit, aggs=UDFS
        ),
        UDFS,
    ),
}


def batch(rng: random.Random, start: int, n: int) -> pa.Table:
    times = [max(0, start + rng.randint(-25, 20)) for _ in range(n)]
    return pa.table(
        {
            "k": pa.array([rng.choice(KEYS) for _ in range(n)], pa.string()),
            "t": pa.array(times, pa.int64()),
            "g": pa.array([rng.randint(1, 25) for _ in range(n)], pa.int64()),
            "x": pa.array([rng.randint(0, 9) for _ in range(n)], pa.int64()),
        }
    )


def ordered(table: pa.Table, start: str) -> list[dict[str, Any]]:
    """Rows in the reads' order: by key, then start (tagged rows: then time; ties stay in
    arrival order, as the sort is stable)."""
    by = [("k", "ascending"), (start, "ascending")]
    if "session_id" in table.column_names:
        by.append(("t", "ascending"))
    rows: list[dict[str, Any]] = table.sort_by(by).to_pylist()
    return rows


def canonical(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(row.values()) for row in table.to_pylist())


def flushed_copy(p: WindowProcessor, aggs: list[Any] | None = None) -> pa.Table:
    """What a flush of ``p`` would emit now, from a copy (``p`` is not touched)."""
    return type(p).from_bytes(p.to_bytes(), aggs=aggs or []).flush()


def check_reads(p: WindowProcessor, model: pa.Table, start: str, end: str) -> None:
    """Every read of ``p`` against ``model`` (its open windows), and ``p``'s bytes untouched."""
    before = p.to_bytes()
    got = p.windows()
    assert got.schema == model.schema
    assert canonical(got) == canonical(model)
    assert got.to_pylist() == ordered(got, start), "not ordered by key, then start"
    for k in KEYS:
        assert p.windows(k).to_pylist() == got.filter(pc.equal(got["k"], k)).to_pylist()
    if isinstance(p, SessionWindowProcessor):
        assert p.fetch("b").to_pylist() == p.windows("b").to_pylist()
        in_range = got.filter(
            pc.and_(pc.greater_equal(got["k"], "b"), pc.less_equal(got["k"], "d"))
        )
        assert p.fetch_range("b", "d").to_pylist() == in_range.to_pylist()
        assert p.fetch_range("d", "b").num_rows == 0
        for earliest_end, latest_start in [(0, 10**6), (40, 60), (80, 80)]:
            want = got.filter(
                pc.and_(
                    pc.equal(got["k"], "c"),
                    pc.and_(
                        pc.greater_equal(got[end], earliest_end),
                        pc.less_equal(got[start], latest_start),
                    ),
                )
            )
            got_c = p.find_sessions("c", earliest_end, latest_start)
            assert got_c.to_pylist() == want.to_pylist()
    assert p.to_bytes() == before


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("emit", ["final", "updates", "changes"])
def test_reads_equal_what_a_flush_would_emit(kind: str, emit: Emit) -> None:
    make, aggs = KINDS[kind]
    sliding = kind == "sliding"
    start, end = ("window_start", "window_end") if sliding else ("session_start", "session_end")
    for seed in range(12):
        rng = random.Random(seed)
        p, twin = make(emit), make("final")
        clock = 0
        for call in range(8):
            data = batch(rng, clock, rng.randint(0, 12))
            clock += rng.randint(0, 30)
            p.process(data)
            twin.process(data)
            model = flushed_copy(twin, aggs)
            if emit == "final":
                assert canonical(model) == canonical(flushed_copy(p, aggs))
            check_reads(p, model, start, end)
            if call % 3 == 2:
                p = type(p).from_bytes(p.to_bytes(), aggs=aggs)
                check_reads(p, model, start, end)
        p.flush()
        assert p.windows().num_rows == 0


def test_records_mode_reads_the_rows_a_flush_would_emit() -> None:
    for seed in range(20):
        rng = random.Random(seed)
        p = SessionWindowProcessor(key="k", time="t", gap=10, grace=15, output="records")
        clock = 0
        for call in range(8):
            p.process(batch(rng, clock, rng.randint(0, 12)))
            clock += rng.randint(0, 30)
            model = flushed_copy(p)
            check_reads(p, model, "session_start", "session_end")
            if call % 3 == 2:
                p = SessionWindowProcessor.from_bytes(p.to_bytes())
                check_reads(p, model, "session_start", "session_end")


def test_processing_time_and_idle_clocks() -> None:
    p = SessionWindowProcessor(key="k", gap=100, clock="processing", aggs=[agg.count()])
    p.process(pa.table({"k": ["a", "b"]}), now=T0)
    p.process(pa.table({"k": ["a"]}), now=T0 + 50)
    assert [(r["k"], r["count"]) for r in p.windows().to_pylist()] == [("a", 2), ("b", 1)]
    p.poll(now=T0 + 120)  # b's session closed; a's is open until T0 + 150
    assert [(r["k"], r["count"]) for r in p.windows().to_pylist()] == [("a", 2)]
    when = p.windows("a").column("session_start")[0].as_py()
    assert p.find_sessions("a", when, when).num_rows == 1

    s = SlidingWindowProcessor(
        key="k", time="t", time_difference=10, grace=0, idle_timeout="1s", aggs=[agg.count()]
    )
    s.process(pa.table({"k": ["a"], "t": [T0]}), now=T0)
    assert s.windows().num_rows == 1
    s.poll(now=T0 + 2_000)  # idle: stream time runs on, the window closes
    assert s.windows().num_rows == 0


def test_keys_of_several_columns_and_timestamps() -> None:
    ts = pa.timestamp("ms", "UTC")
    p = SessionWindowProcessor(
        key=["user", "shop"], time="ts", gap="10s", grace=0, aggs=[agg.count()]
    )
    p.process(
        pa.table(
            {
                "user": pa.array([1, 1, 2], pa.int32()),
                "shop": ["x", "y", "x"],
                "ts": pa.array([T0, T0 + 1_000, T0 + 2_000], ts),
            }
        )
    )
    assert p.windows((1, "y")).column("count").to_pylist() == [1]
    assert p.fetch_range((1, "y"), (2, "x")).column("user").to_pylist() == [1, 2]
    start = pa.scalar(T0, ts).as_py()
    assert p.find_sessions((1, "x"), start, start).num_rows == 1
    later = pa.scalar(T0 + 1, ts).as_py()
    assert p.find_sessions((1, "x"), later, later).num_rows == 0
    assert p.windows((3, "x")).num_rows == 0


def test_bad_keys_are_named_and_change_nothing() -> None:
    p = SessionWindowProcessor(key=["k", "j"], time="t", gap=10, grace=0, aggs=[agg.count()])
    assert p.windows(("a", 1)).num_columns == 0  # nothing bound yet: no schema
    p.process(pa.table({"k": ["a"], "j": pa.array([1], pa.int8()), "t": [0]}))
    before = p.to_bytes()
    with pytest.raises(InvalidWindowSpec, match="key has 2 columns"):
        p.windows("a")
    with pytest.raises(SchemaError, match="'j'") as e:
        p.windows(("a", "one"))
    assert e.value.column == "j"
    with pytest.raises(SchemaError, match="'j'"):
        p.windows(("a", 300))  # beyond int8
    with pytest.raises(SchemaError, match="null"):
        p.windows((None, 1))
    with pytest.raises(SchemaError, match=r"2\.5 is not a value of key column 'j'"):
        p.windows(("a", 2.5))  # pyarrow would truncate it into key 2
    assert p.to_bytes() == before


def test_a_key_value_is_matched_exactly_never_truncated() -> None:
    p = SessionWindowProcessor(key="n", time="t", gap=5, grace=0, aggs=[agg.count()])
    p.process(pa.table({"n": [2, 3], "t": [1, 2]}))
    with pytest.raises(SchemaError, match=r"2\.5 is not a value of key column 'n'"):
        p.fetch(2.5)
    with pytest.raises(SchemaError, match="'n'"):
        p.fetch_range(2, 3.5)
    assert p.fetch(2.0).column("n").to_pylist() == [2]
    assert p.fetch(np.int8(3)).column("n").to_pylist() == [3]


def test_time_bounds_between_ticks_select_what_the_exact_time_selects() -> None:
    second = pa.timestamp("s")
    p = SessionWindowProcessor(key="a", time="t", gap="1s", grace="10s", aggs=[agg.count()])
    p.process(pa.table({"a": ["a", "a"], "t": pa.array([0, 5], second)}))
    at = [pa.scalar(t, second).as_py() for t in (0, 5)]
    half = timedelta(milliseconds=500)
    # Ends at or after 0.5 s: not the session ending at 0 s (the bound rounds up to 1 s).
    starts = p.find_sessions("a", at[0] + half, at[1]).column("session_start")
    assert starts.to_pylist() == [at[1]]
    # Starts at or before 4.5 s: not the session starting at 5 s (the bound rounds down).
    starts = p.find_sessions("a", at[0], at[1] - half).column("session_start")
    assert starts.to_pylist() == [at[0]]
    # The same of numpy's datetimes, whatever their unit.
    half_s = np.datetime64(500, "ms")
    assert p.find_sessions("a", half_s, np.datetime64(5, "s")).num_rows == 1
    assert p.find_sessions("a", np.datetime64(0, "ns"), half_s).num_rows == 1
    # Whole ticks select as before.
    assert p.find_sessions("a", at[0], at[1]).num_rows == 2


def test_bounds_beyond_64_bits_are_clamped_as_session_store_clamps() -> None:
    p = SessionWindowProcessor(key="k", time="t", gap=5, grace=100, aggs=[agg.count()])
    p.process(pa.table({"k": ["a", "a"], "t": [0, 50]}))
    assert p.find_sessions("a", 2**63, 2**63).num_rows == 0
    assert p.find_sessions("a", -(2**70), 2**70).num_rows == 2
    store = SessionStore(1_000)
    store.put("a", 0, 0, b"x")
    assert len(store.find_sessions("a", -(2**70), 2**70)) == 1
    with pytest.raises(TypeError, match="earliest_end"):
        p.find_sessions("a", 0.5, 0)


def test_reads_beside_process_in_another_thread() -> None:
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=1_000_000, aggs=[agg.count()])
    done = threading.Event()
    seen: list[int] = []

    def read() -> None:
        while not done.is_set():
            table = p.windows()
            seen.append(sum(table.column("count").to_pylist()) if table.num_columns else 0)

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(200):
        p.process(pa.table({"k": [KEYS[i % 5]] * 50, "t": list(range(i * 50, i * 50 + 50))}))
    done.set()
    reader.join()
    # Each read saw a whole call or none of it: counts move in steps of 50 records.
    assert all(n % 50 == 0 for n in seen)
    assert seen == sorted(seen)
    assert sum(p.windows().column("count").to_pylist()) == 10_000
