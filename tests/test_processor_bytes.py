"""Processors as bytes and driven by an outside clock, as the Spark streaming adapter uses them:
``to_bytes``/``from_bytes`` between batches changes nothing, ``advance`` closes what the clock
passed, and ``next_close`` is the exact stream time of the next close."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from windowstore import SessionWindowProcessor, SlidingWindowProcessor, SnapshotError, agg
from windowstore._processor import Emit

AGGS = [agg.count(), agg.sum("x")]
SCHEMA = pa.schema([("k", pa.int64()), ("t", pa.int64()), ("x", pa.int64())])


def make(kind: str, emit: Emit) -> Any:
    if kind == "sessions":
        return SessionWindowProcessor(key="k", time="t", gap=10, grace=5, emit=emit, aggs=AGGS)
    return SlidingWindowProcessor(
        key="k", time="t", time_difference=10, grace=5, emit=emit, aggs=AGGS
    )


def batches(seed: int) -> list[pa.Table]:
    rng = random.Random(seed)
    out = []
    for _ in range(8):
        n = rng.randint(0, 10)
        out.append(
            pa.table(
                {
                    "k": [rng.randrange(3) for _ in range(n)],
                    "t": [rng.randrange(200) for _ in range(n)],
                    "x": [rng.randrange(100) for _ in range(n)],
                },
                schema=SCHEMA,
            )
        )
    return out


@pytest.mark.parametrize("kind", ["sessions", "sliding"])
@pytest.mark.parametrize("emit", ["final", "updates"])
@pytest.mark.parametrize("seed", range(5))
def test_through_bytes_equals_never_stopping(kind: str, emit: Emit, seed: int) -> None:
    direct, through = make(kind, emit), make(kind, emit)
    cls = type(through)
    for b in batches(seed):
        through = cls.from_bytes(through.to_bytes())
        assert through.process(b).to_pylist() == direct.process(b).to_pylist()
        # Rejected rows are handed over per batch; the bytes keep their counts.
        assert through.rejected().to_pylist() == direct.rejected().to_pylist()
    # The counters; not the store's own figures: a restored store holds no dead bytes and no
    # expired session (every one was emitted before it expired).
    got, want = through.metrics(), direct.metrics()
    assert {k: v for k, v in got.items() if not k.startswith("store_")} == {
        k: v for k, v in want.items() if not k.startswith("store_")
    }


@pytest.mark.parametrize("kind", ["sessions", "sliding"])
def test_next_close_is_where_advance_emits(kind: str) -> None:
    p = make(kind, "final")
    p.process(pa.table({"k": [1, 1, 2], "t": [0, 4, 6], "x": [1, 2, 3]}))
    first = p.next_close()
    assert first is not None
    before = type(p).from_bytes(p.to_bytes())
    assert before.advance(first - 1).num_rows == 0
    assert p.advance(first).num_rows > 0
    assert p.next_close() is None or p.next_close() > first


def test_changelog_modes_have_no_next_close() -> None:
    p = make("sessions", "updates")
    p.process(pa.table({"k": [1], "t": [0], "x": [1]}))
    assert p.next_close() is None
    assert p.advance(1000).num_rows == 0


def test_damaged_bytes_are_refused() -> None:
    p = make("sessions", "final")
    p.process(pa.table({"k": [1], "t": [0], "x": [1]}))
    data = bytearray(p.to_bytes())
    data[len(data) // 2] ^= 0xFF
    with pytest.raises(SnapshotError):
        SessionWindowProcessor.from_bytes(bytes(data))
