"""The batched path of the session processors (a call whose records are all within the grace
applies each key's records at once) against the record-by-record path it must equal (sliding
windows have one path): the same output, rejected rows, metrics and snapshot bytes after every
call, on random streams with disorder within and beyond the grace, invalid records, fixed and
dynamic gaps, every emit mode (the changelog modes' rows in record order, coalesced per call),
float aggregates whose result depends on the order of addition, and snapshots at random
points."""

from __future__ import annotations

from typing import Any, TypeVar

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowstore import SessionWindowProcessor, agg
from windowstore._processor import Emit
from windowstore.agg import Agg

GRACE = 20

# Aggregates of fixed width only (a record folds into a state in place)...
FIXED = [agg.count(), agg.sum("x"), agg.mean("x"), agg.min("x"), agg.first("x"), agg.last("ts")]
# ... or with lists and sets.
AGGS = [
    agg.count(),
    agg.sum("x"),
    agg.mean("x"),
    agg.first("x"),
    agg.last("x"),
    agg.collect("x", max_size=4),
    agg.count_distinct("page"),
]


# What the calls cost, not what they computed: heap bytes and bytes written or journaled differ
# between the paths by design (the batched path writes a session once per call).
COSTS = {"store_bytes", "store_bytes_written", "store_bytes_journaled"}


def results(p: SessionWindowProcessor) -> dict[str, int | None]:
    return {k: v for k, v in p.metrics().items() if k not in COSTS}


def make(
    batched: bool, dynamic: bool, gap: int, aggs: list[Agg] = AGGS, emit: Emit = "final"
) -> SessionWindowProcessor:
    gap_args: dict[str, Any] = {"gap_column": "g", "max_gap": gap} if dynamic else {"gap": gap}
    p = SessionWindowProcessor(key="user", time="ts", grace=GRACE, aggs=aggs, emit=emit, **gap_args)
    p._inner._set_batched(batched)
    return p


P = TypeVar("P", bound=SessionWindowProcessor)


def restored(p: P, batched: bool, aggs: list[Agg]) -> P:
    q = type(p).from_bytes(p.to_bytes(), aggs=aggs)
    q._inner._set_batched(batched)
    return q


def same_calls(
    fast: P,
    model: P,
    rows: list[dict[str, Any]],
    sizes: list[int],
    snapshot_at: int,
    aggs: list[Agg],
) -> tuple[P, P]:
    """Feeds both processors ``rows`` in calls of ``sizes`` (cycled), both restored from their
    bytes after call ``snapshot_at``, then flushes them: the same output, metrics, snapshot and
    rejected rows after every call, and the same flush and bytes. Returns the processors."""
    at = call = 0
    while at < len(rows):
        n = sizes[call % len(sizes)]
        chunk = pa.Table.from_pylist(rows[at : at + n], schema=SCHEMA)
        at += n
        call += 1
        assert fast.process(chunk).equals(model.process(chunk)), f"output of call {call}"
        assert results(fast) == results(model), f"metrics after call {call}"
        assert fast.to_bytes() == model.to_bytes(), f"snapshot after call {call}"
        assert fast.rejected().equals(model.rejected())
        if call == snapshot_at:
            fast, model = restored(fast, True, aggs), restored(model, False, aggs)
    assert fast.flush().equals(model.flush())
    assert fast.to_bytes() == model.to_bytes()
    return fast, model


def in_time_order(fast: P, model: P) -> None:
    """Both processors fed 5,000 records of 97 users in time order, in 5 calls: the same
    output, flush and bytes, every call of ``fast`` batched and none of ``model``."""
    rows = [
        {"user": f"u{i % 97}", "ts": i * 10, "x": i / 3.0, "page": f"/{i % 5}", "g": 300}
        for i in range(5_000)
    ]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    for batch in table.to_batches(max_chunksize=1_000):
        assert fast.process(batch).equals(model.process(batch))
    assert fast.flush().equals(model.flush())
    assert fast.to_bytes() == model.to_bytes()
    assert fast._inner._batched_calls() == 5
    assert model._inner._batched_calls() == 0


@st.composite
def streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    late = draw(st.booleans())
    n = draw(st.integers(0, 300))
    now, rows = 10_000, []
    for _ in range(n):
        now += draw(st.integers(0, 6))
        delay = draw(st.sampled_from([0, 0, 0, 1, GRACE // 2, GRACE]))
        if late and draw(st.integers(0, 30)) == 0:
            delay = GRACE + draw(st.integers(1, 80))
        ts = None if draw(st.integers(0, 40)) == 0 else now - delay
        rows.append(
            {
                "user": f"u{draw(st.integers(0, 7))}",
                "ts": ts,
                "x": draw(st.integers(-1000, 1000)) / 7.0,
                "page": draw(st.sampled_from(["/", "/a", "/b", None])),
                "g": draw(st.sampled_from([1, 5, 17, 40, None, -1])),
            }
        )
    return rows


SCHEMA = pa.schema(
    [
        ("user", pa.string()),
        ("ts", pa.int64()),
        ("x", pa.float64()),
        ("page", pa.string()),
        ("g", pa.int64()),
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    rows=streams(),
    sizes=st.lists(st.integers(1, 120), min_size=1, max_size=3),
    dynamic=st.booleans(),
    gap=st.integers(1, 40),
    snapshot_at=st.integers(0, 6),
    fixed=st.booleans(),
    emit=st.sampled_from(["final", "final", "updates", "changes"]),
)
def test_the_batched_path_equals_the_record_path(
    rows: list[dict[str, Any]],
    sizes: list[int],
    dynamic: bool,
    gap: int,
    snapshot_at: int,
    fixed: bool,
    emit: Emit,
) -> None:
    aggs = FIXED if fixed else AGGS
    fast, model = make(True, dynamic, gap, aggs, emit), make(False, dynamic, gap, aggs, emit)
    same_calls(fast, model, rows, sizes, snapshot_at, aggs)


@pytest.mark.parametrize("emit", ["final", "updates", "changes"])
def test_a_clickstream_in_time_order_is_batched_and_equal(emit: Emit) -> None:
    in_time_order(make(True, False, 600, emit=emit), make(False, False, 600, emit=emit))
