"""Sessions with a maximum duration (``max_duration=``): complete mode and the streaming
processor against a brute-force model of the definition (docs/semantics.md section 2), in any
arrival order within the grace, through snapshots, in every output; argument errors."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from windowstore import (
    InvalidWindowSpec,
    SessionWindowProcessor,
    SnapshotError,
    agg,
    session_windows,
)

Window = tuple[str, int, int, list[int]]


def model(
    rows: list[tuple[str, int, int]], gap: int, max_duration: int
) -> tuple[list[Window], int]:
    """Per key in (time, arrival) order: a record joins the current session if it is within the
    session's reach (``max(t + gap)``) and at most ``max_duration`` after its start. Returns the
    windows (key, start, end, values) and the number of sessions the cap ended."""
    by_key: dict[str, list[tuple[int, int, int]]] = {}
    for arrival, (k, t, v) in enumerate(rows):
        by_key.setdefault(k, []).append((t, arrival, v))
    out: list[Window] = []
    cuts = 0
    for k, recs in by_key.items():
        current: list[Any] | None = None  # start, end, reach, values
        for t, _, v in sorted(recs):
            if current is not None and t <= current[2] and t - current[0] <= max_duration:
                current[1], current[2] = t, max(current[2], t + gap)
                current[3].append(v)
                continue
            if current is not None:
                cuts += t <= current[2]
                out.append((k, current[0], current[1], current[3]))
            current = [t, t, t + gap, [v]]
        if current is not None:
            out.append((k, current[0], current[1], current[3]))
    return sorted(out), cuts


def windows(table: pa.Table) -> list[Window]:
    return sorted(
        (r["k"], r["session_start"], r["session_end"], r["collect_v"]) for r in table.to_pylist()
    )


def table(rows: list[tuple[str, int, int]]) -> pa.Table:
    return pa.table(
        {"k": [r[0] for r in rows], "t": [r[1] for r in rows], "v": [r[2] for r in rows]},
        schema=pa.schema([("k", pa.string()), ("t", pa.int64()), ("v", pa.int64())]),
    )


def random_stream(rng: random.Random, grace: int) -> list[tuple[str, int, int]]:
    """Records of a few keys in an arrival order where none is more than ``grace`` behind the
    largest time before it (each is delayed by at most ``grace``)."""
    n = rng.randrange(0, 120)
    recs = [(rng.choice("abc"), rng.randrange(0, 400), i) for i in range(n)]
    delayed = sorted(range(n), key=lambda i: (recs[i][1] + rng.randint(0, grace), i))
    # The value is the arrival number, so that equal times keep their arrival order.
    return [(recs[i][0], recs[i][1], a) for a, i in enumerate(delayed)]


GAP = 12


@pytest.mark.parametrize("seed", range(40))
def test_streaming_equals_complete_mode_and_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    grace = rng.choice([0, 5, 30, 120])
    max_duration = rng.randrange(1, 80)
    rows = random_stream(rng, grace)
    want, cuts = model(rows, GAP, max_duration)
    got = session_windows(
        table(rows), key="k", time="t", gap=GAP, max_duration=max_duration,
        aggs=[agg.collect("v")],
    )  # fmt: skip
    assert windows(got) == want
    for emit in ("final", "updates"):
        p = SessionWindowProcessor(
            key="k", time="t", gap=GAP, grace=grace, max_duration=max_duration, emit=emit,
            aggs=[agg.collect("v")],
        )  # fmt: skip
        log: list[dict[str, Any]] = []
        chunk = rng.randrange(1, 15)
        for i in range(0, len(rows), chunk):
            if i and rng.random() < 0.2:
                p = SessionWindowProcessor.from_bytes(p.to_bytes())
            log += p.process(table(rows[i : i + chunk])).to_pylist()
        log += p.flush().to_pylist()
        assert p.metrics()["max_duration_cuts"] == cuts
        assert p.metrics()["rejected_late"] == 0
        if emit == "final":
            assert windows(pa.Table.from_pylist(log)) == want
        else:
            current: dict[tuple[str, int, int], list[int]] = {}
            for r in log:
                w = (r["k"], r["session_start"], r["session_end"])
                if r["op"] == "delete":
                    del current[w]
                else:
                    current[w] = r["collect_v"]
            assert sorted((*w, v) for w, v in current.items()) == want


def test_a_record_before_a_session_moves_its_cuts_and_the_changelog_says_so() -> None:
    p = SessionWindowProcessor(
        key="k", time="t", gap=10, grace=100, max_duration=20, emit="updates",
        aggs=[agg.collect("v")],
    )  # fmt: skip
    first = p.process(table([("a", 10, 1), ("a", 20, 2), ("a", 30, 3)]))
    assert [(r["session_start"], r["session_end"], r["op"]) for r in first.to_pylist()] == [
        (10, 30, "upsert")
    ]
    second = p.process(table([("a", 5, 4)])).to_pylist()
    assert [(r["session_start"], r["session_end"], r["collect_v"], r["op"]) for r in second] == [
        (10, 30, [1, 2, 3], "delete"),
        (5, 20, [4, 1, 2], "upsert"),
        (30, 30, [3], "upsert"),
    ]
    assert p.metrics()["max_duration_cuts"] == 1


def test_records_output_and_user_aggregates_honour_the_cap() -> None:
    rows = [("a", t, i) for i, t in enumerate([0, 5, 10, 15, 20, 25, 30])]
    tagged = session_windows(table(rows), key="k", time="t", gap=10, max_duration=10,
                             output="records")  # fmt: skip
    assert [(r["t"], r["session_start"], r["session_end"]) for r in tagged.to_pylist()] == [
        (0, 0, 10), (5, 0, 10), (10, 0, 10), (15, 15, 25), (20, 15, 25), (25, 15, 25),
        (30, 30, 30),
    ]  # fmt: skip
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=0, max_duration=10,
                               output="records")  # fmt: skip
    streamed = pa.concat_tables([p.process(table(rows)), p.flush()])
    assert streamed.sort_by("t").to_pylist() == tagged.to_pylist()
    spread = agg.udf(lambda t: pa.scalar(t[-1].as_py() - t[0].as_py()), "t", returns=pa.int64())
    out = session_windows(table(rows), key="k", time="t", gap=10, max_duration=10,
                          aggs=[spread])  # fmt: skip
    assert out.column(out.num_columns - 1).to_pylist() == [10, 10, 0]


def test_processing_time_sessions_are_capped_on_the_wall_clock() -> None:
    # Akka's stage with a cap: an element every 300 ms, gap 1 s, at most 1 s per session.
    t0 = 1_700_000_000_000
    p = SessionWindowProcessor(key="k", gap="1s", clock="processing", max_duration="1s",
                               aggs=[agg.count()])  # fmt: skip
    out = [p.process(pa.table({"k": ["a"]}), now=t0 + 300 * i) for i in range(8)]
    # The first session [0, 900] reaches 1900: it closes at the last arrival (2100).
    assert [t.num_rows for t in out] == [0] * 7 + [1]
    out.append(p.flush())
    assert pa.concat_tables(out).column("count").to_pylist() == [4, 4]
    assert p.metrics()["max_duration_cuts"] == 1


def test_a_snapshot_keeps_the_cap_and_the_open_records(tmp_path: Any) -> None:
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=50, max_duration=15,
                               aggs=[agg.collect("v")])  # fmt: skip
    p.process(table([("a", 10, 1), ("a", 20, 2)]))
    p.snapshot(tmp_path / "p.snap")
    q = SessionWindowProcessor.restore(tmp_path / "p.snap")
    assert q.to_bytes() == p.to_bytes()
    q.process(table([("a", 0, 3)]))  # now [0, 10] and [20, 20]
    assert windows(q.flush()) == [("a", 0, 10, [3, 1]), ("a", 20, 20, [2])]
    data = bytearray(p.to_bytes())
    data[len(data) // 2] ^= 0x40
    with pytest.raises(SnapshotError):
        SessionWindowProcessor.from_bytes(bytes(data))


@pytest.mark.parametrize("bad", [0, -5, "0s", "soon"])
def test_a_bad_max_duration_is_named(bad: Any) -> None:
    with pytest.raises(InvalidWindowSpec) as e:
        SessionWindowProcessor(key="k", time="t", gap=10, grace=0, max_duration=bad).process(
            table([("a", 1, 1)])
        )
    assert e.value.parameter == "max_duration"
    with pytest.raises(InvalidWindowSpec) as e:
        session_windows(table([("a", 1, 1)]), key="k", time="t", gap=10, max_duration=bad)
    assert e.value.parameter == "max_duration"


def test_a_record_that_leaves_every_closed_session_as_it_is_is_accepted() -> None:
    # Issue 38, D4: the record at 27 joins the open session [20, 20]; the closed [29, 29] stays
    # cut (29 - 20 > 8) and unchanged, so the record is not late.
    p = SessionWindowProcessor(
        key="k", time="t", gap_column="g", max_gap=20, grace=0, max_duration=8,
        aggs=[agg.count()],
    )  # fmt: skip
    out = [p.process(pa.table({"k": ["a", "a", "b"], "t": [20, 29, 32], "g": [13, 2, 1]}))]
    out.append(p.process(pa.table({"k": ["a"], "t": [27], "g": [1]})))
    out.append(p.flush())
    assert p.metrics()["rejected_late"] == 0
    got = sorted(
        (r["k"], r["session_start"], r["session_end"], r["count"])
        for t in out
        for r in t.to_pylist()
    )
    complete = session_windows(
        pa.table({"k": ["a", "a", "b", "a"], "t": [20, 29, 32, 27], "g": [13, 2, 1, 1]}),
        key="k", time="t", gap_column="g", max_gap=20, max_duration=8, aggs=[agg.count()],
    )  # fmt: skip
    assert got == sorted(
        (r["k"], r["session_start"], r["session_end"], r["count"]) for r in complete.to_pylist()
    )


@pytest.mark.parametrize("t", [8, 9])
def test_a_record_cut_after_a_closed_session_is_judged_by_its_own_session(t: int) -> None:
    # a@0 is closed (stream time 100 > 0 + 10 + 85). a@t is more than max_duration after it, so
    # it starts its own session and leaves [0, 0] as it is: accepted while its own session
    # [t, t] (reach t + 10 >= 100 - 85) is open, late once that one would be closed too.
    p = SessionWindowProcessor(
        key="k", time="t", gap=10, grace=85, max_duration=5, aggs=[agg.count()]
    )
    p.process(pa.table({"k": ["a", "b"], "t": [0, 100]}))
    p.process(pa.table({"k": ["a"], "t": [t]}))
    assert p.metrics()["rejected_late"] == 0
    assert [r["session_start"] for r in p.flush().to_pylist() if r["k"] == "a"] == [t]
    q = SessionWindowProcessor(
        key="k", time="t", gap=10, grace=85, max_duration=5, aggs=[agg.count()]
    )
    q.process(pa.table({"k": ["a", "b"], "t": [0, 200]}))
    q.process(pa.table({"k": ["a"], "t": [t]}))
    assert q.rejected().column("reason").to_pylist() == ["late"]


@pytest.mark.parametrize("seed", range(60))
def test_accepted_capped_records_give_complete_mode_sessions_in_any_order(
    seed: int,
) -> None:
    # Far out of order, beyond the grace: whatever the processor accepts, its sessions are
    # complete mode's over the accepted records (accepting a record never changes a closed
    # session), and every record is accepted or rejected. The tests above check that a record
    # leaving the closed sessions as they are is accepted.
    rng = random.Random(seed)
    n = rng.randint(1, 60)
    table = pa.table(
        {
            "k": [rng.choice("ab") for _ in range(n)],
            "t": [rng.randint(0, 120) for _ in range(n)],
            "i": list(range(n)),
        }
    )
    params: dict[str, Any] = {
        "key": "k",
        "time": "t",
        "gap": rng.choice([3, 10]),
        "max_duration": rng.choice([4, 12]),
        "aggs": [agg.count(), agg.collect("i")],
    }
    p = SessionWindowProcessor(grace=rng.choice([0, 5]), **params)
    out = [p.process(table.slice(i, 1)) for i in range(n)]
    out.append(p.flush())
    rejected = p.rejected()
    late = set(rejected.column("i").to_pylist()) if rejected.num_rows else set()
    assert p.metrics()["accepted"] == n - len(late)
    accepted = table.filter(pa.array([i not in late for i in range(n)]))
    want = session_windows(accepted, **params)
    got = [r for t in out for r in t.to_pylist()]
    key = lambda r: (r["k"], r["session_start"])  # noqa: E731 - a sort key
    assert sorted(got, key=key) == sorted(want.to_pylist(), key=key)
