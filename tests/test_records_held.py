"""Records mode's held rows: each row goes to its own session, also where two sessions of a key
overlap in time, and they change inside the call's transaction: a call that fails after the
core has held new rows and taken closed sessions' rows (a failing sink) leaves the processor
byte for byte as it was, and the stream goes on as if the call had never been tried."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from windowstore import SessionWindowProcessor


class SinkDown(Exception):
    pass


def refuse(_: pa.Table) -> pa.Table:
    raise SinkDown


def fails_whole(p: SessionWindowProcessor, call: Any) -> None:
    """Runs ``call`` with a sink that fails once the core has computed the output (the
    processor's last step inside the call), and checks that nothing changed."""
    before = p.to_bytes()
    p._finish = refuse  # type: ignore[assignment]
    try:
        with pytest.raises(SinkDown):
            call()
    finally:
        del p._finish
    assert p.to_bytes() == before


def stream(rng: random.Random, n: int) -> pa.Table:
    """Rows of a few keys, mostly ahead of stream time, some behind it (late or within grace)."""
    t, rows = 0, []
    for i in range(n):
        t += rng.randrange(-8, 12)
        rows.append({"k": rng.choice("abcd"), "t": t, "i": i})
    return pa.Table.from_pylist(rows)


def processor(rng: random.Random) -> SessionWindowProcessor:
    kwargs: dict[str, Any] = {"key": "k", "time": "t", "gap": rng.randrange(1, 20)}
    kwargs["grace"] = rng.randrange(0, 15)
    if rng.random() < 0.4:
        kwargs["max_duration"] = rng.randrange(1, 40)
    return SessionWindowProcessor(**kwargs, output="records")


@pytest.mark.parametrize("seed", range(40))
def test_a_call_that_fails_after_holding_and_taking_rows_changes_nothing(seed: int) -> None:
    rng = random.Random(seed)
    table = stream(rng, rng.randrange(20, 300))
    p = processor(random.Random(seed))
    twin = processor(random.Random(seed))  # never fails
    out, want = [], []
    at = 0
    while at < table.num_rows:
        batch = table.slice(at, rng.randrange(1, 40))
        if rng.random() < 0.5:
            fails_whole(p, lambda: p.process(batch))  # noqa: B023 - called at once
        out.append(p.process(batch))
        want.append(twin.process(batch))
        assert p.to_bytes() == twin.to_bytes()
        at += batch.num_rows
    fails_whole(p, p.flush)
    out.append(p.flush())
    want.append(twin.flush())
    got = pa.concat_tables(o for o in out if o.num_columns)
    assert got.equals(pa.concat_tables(w for w in want if w.num_columns))
    assert sorted(got["i"].to_pylist() + p.rejected()["i"].to_pylist()) == list(
        range(table.num_rows)
    )


def test_a_session_after_a_closed_one_at_the_same_time_keeps_its_own_rows() -> None:
    # With gap 9 and grace 4, [168, 171] closes when 185 arrives and leaves the store; the
    # second record at 171 then starts a session of its own, which 183 joins to 185 and 188.
    # Both sessions hold rows at 171, and both close in this one call.
    p = SessionWindowProcessor(key="k", time="t", gap=9, grace=4, output="records")
    times = [171, 168, 185, 175, 171, 188, 183, 188]
    out = p.process(pa.table({"k": ["c"] * 8, "t": times, "i": range(8)}))
    out = pa.concat_tables([out, p.flush()])
    got = [(r["session_start"], r["session_end"], r["t"], r["i"]) for r in out.to_pylist()]
    assert got == [
        (168, 171, 168, 1),
        (168, 171, 171, 0),
        (171, 188, 171, 4),
        (171, 188, 175, 3),
        (171, 188, 183, 6),
        (171, 188, 185, 2),
        (171, 188, 188, 5),
        (171, 188, 188, 7),
    ]
