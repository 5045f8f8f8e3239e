"""Sessions tagged on rows (``output="records"``) in complete mode and in the streaming processor,
against a brute-force model: per key, sort by time and cut where the gap is exceeded."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from windowstore import (
    InvalidRecordError,
    InvalidWindowSpec,
    SchemaError,
    SessionWindowProcessor,
    SnapshotError,
    agg,
    session_windows,
)

TAGS = ("session_start", "session_end", "session_id")
Row = dict[str, Any]


def session_id(user: str, dev: int, start: int) -> int:
    """The documented session_id, written out independently: BLAKE2b-64 of the length-prefixed
    canonical forms of the key values and session_start."""
    h = hashlib.blake2b(digest_size=8)
    for value in (b"s" + user.encode(), b"i%d" % dev, b"i%d" % start):
        h.update(len(value).to_bytes(4, "big"))
        h.update(value)
    return int.from_bytes(h.digest(), "big", signed=True)


def make_table(rows: list[Row]) -> pa.Table:
    """The rows with a dictionary-encoded string key, an int32 key, and payload columns the
    collect aggregate could not hold (a struct and a list)."""
    return pa.table(
        {
            "user": pa.array([r["user"] for r in rows], pa.string()).dictionary_encode(),
            "dev": pa.array([r["dev"] for r in rows], pa.int32()),
            "t": pa.array([r["t"] for r in rows], pa.int64()),
            "i": pa.array([r["i"] for r in rows], pa.int64()),
            "payload": pa.array(
                [r["payload"] for r in rows], pa.struct([("a", pa.int64()), ("b", pa.string())])
            ),
            "tags": pa.array([r["tags"] for r in rows], pa.list_(pa.int64())),
        }
    )


def row(i: int, user: str | None, dev: int, t: int) -> Row:
    return {
        "user": user,
        "dev": dev,
        "t": t,
        "i": i,
        "payload": {"a": i * 3, "b": f"p{i}"},
        "tags": list(range(i % 4)),
    }


def model(rows: list[Row], gap: int) -> list[Row]:
    """The tagged rows by definition, in the documented order: by key, session start, time,
    arrival. Every row here is accepted."""
    by_key: dict[tuple[str, int], list[Row]] = {}
    for r in rows:
        by_key.setdefault((r["user"], r["dev"]), []).append(r)
    out = []
    for (user, dev), group in sorted(by_key.items()):
        group.sort(key=lambda r: (r["t"], r["i"]))
        sessions: list[list[Row]] = []
        for r in group:
            if sessions and r["t"] <= sessions[-1][-1]["t"] + gap:
                sessions[-1].append(r)
            else:
                sessions.append([r])
        for s in sessions:
            start, end = s[0]["t"], s[-1]["t"]
            out += [
                {
                    **r,
                    "session_start": start,
                    "session_end": end,
                    "session_id": session_id(user, dev, start),
                }
                for r in s
            ]
    return out


def random_rows(rng: random.Random, n: int, null_keys: float) -> list[Row]:
    rows = []
    for i in range(n):
        user = None if rng.random() < null_keys else rng.choice(["ann", "bob", "cy", "dee"])
        rows.append(row(i, user, rng.randrange(2), rng.randrange(0, 400)))
    return rows


@pytest.mark.parametrize("seed", range(40))
def test_complete_mode_equals_the_model(seed: int) -> None:
    rng = random.Random(seed)
    rows = random_rows(rng, rng.randrange(0, 120), null_keys=0.1)
    gap = rng.randrange(1, 40)
    table = make_table(rows)
    tagged, rejected = session_windows(
        table,
        key=["user", "dev"],
        time="t",
        gap=gap,
        on_invalid="drop",
        return_rejected=True,
        output="records",
    )
    assert tagged.column_names == [*table.column_names, *TAGS]
    assert tagged.schema.field("payload").type == table.schema.field("payload").type
    assert tagged.schema.field("user").type == table.schema.field("user").type
    assert tagged.to_pylist() == model([r for r in rows if r["user"] is not None], gap)
    assert rejected.column_names == [*table.column_names, "reason"]
    assert rejected.to_pylist() == [{**r, "reason": "null_key"} for r in rows if r["user"] is None]
    assert tagged.num_rows + rejected.num_rows == len(rows)


def test_records_aggregate_to_the_windows_with_polars() -> None:
    rng = random.Random(5)
    rows = random_rows(rng, 300, null_keys=0)
    table = make_table(rows)
    tagged = session_windows(table, key=["user", "dev"], time="t", gap=12, output="records")
    windows = session_windows(
        table, key=["user", "dev"], time="t", gap=12, aggs=[agg.count(), agg.sum("i")]
    )
    frame = pl.DataFrame(tagged)
    by_session = frame.group_by(["user", "dev", "session_start"]).agg(
        pl.len().alias("count"), pl.col("i").sum().alias("sum_i")
    )
    got = sorted((r["user"], r["dev"], r["session_start"], r["count"], r["sum_i"])
                 for r in by_session.to_dicts())  # fmt: skip
    want = sorted((r["user"], r["dev"], r["session_start"], r["count"], r["sum_i"])
                  for r in windows.to_pylist())  # fmt: skip
    assert got == want
    assert frame["session_id"].n_unique() == windows.num_rows


def test_timestamps_and_the_id_do_not_depend_on_the_unit() -> None:
    ms = pa.table({"k": ["a", "a", "b"], "t": pa.array([0, 1_000, 5_000], pa.timestamp("ms"))})
    us = ms.set_column(1, "t", ms["t"].cast(pa.timestamp("us", "UTC")))
    a = session_windows(ms, key="k", time="t", gap="2s", output="records")
    b = session_windows(us, key="k", time="t", gap="2s", output="records")
    assert a.schema.field("session_start").type == pa.timestamp("ms")
    assert a["session_id"].to_pylist() == b["session_id"].to_pylist()
    assert a["session_end"].cast(pa.int64()).to_pylist() == [1_000, 1_000, 5_000]
    h = hashlib.blake2b(digest_size=8)
    for value in (b"sa", b"t0"):
        h.update(len(value).to_bytes(4, "big"))
        h.update(value)
    assert a["session_id"][0].as_py() == int.from_bytes(h.digest(), "big", signed=True)


def stream_rows(rng: random.Random, n: int, gap: int, grace: int) -> tuple[list[Row], set[int]]:
    """Rows out of order within the grace, null keys, and rows certain to be late: behind every
    earlier time by more than gap + grace, so they can join no session. Returns the rows and the
    arrival numbers of the late ones."""
    rows: list[Row] = []
    late: set[int] = set()
    stream_time: int | None = None  # of the accepted rows (null keys do not move it here)
    lowest = 0
    for i in range(n):
        dice = rng.random()
        if dice > 0.95:
            rows.append(row(i, None, 0, stream_time or 0))
            continue
        if stream_time is None:
            t = rng.randrange(-50, 50)
            lowest = t
        elif dice < 0.06:
            late.add(i)
            rows.append(row(i, rng.choice(["ann", "bob"]), 0, lowest - gap - grace - 1 - i))
            continue
        else:
            t = stream_time + rng.randrange(-grace, 2 * gap + 1)
        rows.append(row(i, rng.choice(["ann", "bob", "cy", "dee"]), rng.randrange(2), t))
        stream_time = t if stream_time is None else max(stream_time, t)
        lowest = min(lowest, t)
    return rows, late


def records_processor(gap: int, grace: int, **kw: Any) -> SessionWindowProcessor:
    return SessionWindowProcessor(
        key=["user", "dev"], time="t", gap=gap, grace=grace, output="records", **kw
    )


def assert_call_order(out: pa.Table) -> None:
    """One call's rows: by key, session start, time, arrival."""
    rows = out.to_pylist()
    keys = [(r["user"], r["dev"], r["session_start"], r["t"], r["i"]) for r in rows]
    assert keys == sorted(keys)


@pytest.mark.parametrize("seed", range(60))
def test_the_processor_equals_the_model(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    gap, grace = rng.randrange(1, 30), rng.randrange(0, 40)
    rows, late = stream_rows(rng, rng.randrange(1, 150), gap, grace)
    table = make_table(rows)
    p = records_processor(gap, grace)
    outputs: list[pa.Table] = []
    rejected: list[pa.Table] = []
    restore_at = rng.randrange(0, len(rows) + 1)
    at = 0
    while at < len(rows):
        size = rng.randrange(1, 25)
        if at <= restore_at < at + size:
            if rng.random() < 0.5:
                p.snapshot(tmp_path / "p.snap")
                p = SessionWindowProcessor.restore(tmp_path / "p.snap")
            else:
                p = SessionWindowProcessor.from_bytes(p.to_bytes())
        out = p.process(table.slice(at, size))
        assert_call_order(out)
        outputs.append(out)
        if rng.random() < 0.3:  # take the rejected rows now and then; the rest stay buffered
            rejected.append(p.rejected())
        at += size
    last = p.flush()
    assert_call_order(last)
    outputs.append(last)
    rejected.append(p.rejected())

    tagged = pa.concat_tables(o for o in outputs if o.num_columns)
    taken = pa.concat_tables(r for r in rejected if r.num_columns)
    assert tagged.column_names == [*table.column_names, *TAGS]
    assert taken.column_names == [*table.column_names, "reason"]
    assert sorted(tagged["i"].to_pylist() + taken["i"].to_pylist()) == list(range(len(rows)))
    want_rejected = {
        r["i"]: ("late" if r["i"] in late else "null_key")
        for r in rows
        if r["user"] is None or r["i"] in late
    }
    assert {r["i"]: r["reason"] for r in taken.to_pylist()} == want_rejected
    for r in taken.to_pylist():
        assert {k: v for k, v in r.items() if k != "reason"} == rows[r["i"]]
    accepted = [r for r in rows if r["i"] not in want_rejected]
    got = sorted(tagged.to_pylist(), key=lambda r: (r["user"], r["dev"], r["session_start"],
                                                    r["t"], r["i"]))  # fmt: skip
    assert got == model(accepted, gap)
    m = p.metrics()
    assert (m["held_rows"], m["held_bytes"]) == (0, 0)
    assert m["accepted"] == tagged.num_rows


def test_rows_are_held_until_their_session_closes() -> None:
    p = records_processor(gap=10, grace=5)
    first = p.process(make_table([row(0, "ann", 0, 0), row(1, "ann", 0, 8)]))
    assert first.num_rows == 0
    assert p.metrics()["held_rows"] == 2
    assert (p.metrics()["held_bytes"] or 0) > 0
    assert p.next_close() == 8 + 10 + 5 + 1  # reach 18, plus grace 5: closed past 23
    assert p.advance(23).num_rows == 0
    closed = p.advance(24)
    assert closed["i"].to_pylist() == [0, 1]
    assert closed["session_end"].to_pylist() == [8, 8]
    assert p.metrics()["held_rows"] == 0
    assert p.flush().num_rows == 0


def test_a_failed_call_changes_nothing() -> None:
    p = records_processor(gap=10, grace=5, on_invalid="error")
    p.process(make_table([row(0, "ann", 0, 0), row(1, None, 0, 1)][:1]))
    before = p.to_bytes()
    with pytest.raises(InvalidRecordError):
        p.process(make_table([row(1, "bob", 0, 2), row(2, None, 0, 3)]))
    assert p.to_bytes() == before
    with pytest.raises(SchemaError):
        p.process(make_table([row(1, "bob", 0, 2)]).drop_columns("tags"))
    assert p.to_bytes() == before
    p.process(make_table([row(1, "bob", 0, 2)]))
    assert sorted(p.flush()["i"].to_pylist()) == [0, 1]


def test_rejected_rows_keep_the_users_columns_until_taken(tmp_path: Path) -> None:
    p = records_processor(gap=10, grace=0)
    assert p.rejected().num_rows == 0
    p.process(make_table([row(0, "ann", 0, 100), row(1, None, 0, 100)]))
    p.process(make_table([row(2, "ann", 0, 0)]))  # late: 0 + 10 + 0 < 100
    p = SessionWindowProcessor.from_bytes(p.to_bytes())
    taken = p.rejected()
    assert taken.column_names == ["user", "dev", "t", "i", "payload", "tags", "reason"]
    assert list(zip(taken["i"].to_pylist(), taken["reason"].to_pylist(), strict=True)) == [
        (1, "null_key"),
        (2, "late"),
    ]
    assert p.rejected().num_rows == 0
    assert p.rejected().column_names == taken.column_names
    assert p.metrics()["held_rows"] == 1


def test_a_damaged_records_snapshot_is_refused(tmp_path: Path) -> None:
    p = records_processor(gap=10, grace=0)
    p.process(make_table([row(0, "ann", 0, 0)]))
    p.snapshot(tmp_path / "p.snap")
    data = bytearray((tmp_path / "p.snap").read_bytes())
    data[-5] ^= 1
    (tmp_path / "bad.snap").write_bytes(bytes(data))
    with pytest.raises(SnapshotError) as info:
        SessionWindowProcessor.restore(tmp_path / "bad.snap")
    assert info.value.path == str(tmp_path / "bad.snap")
    with pytest.raises(SnapshotError):
        SessionWindowProcessor.from_bytes(bytes(data[:-20]))
    assert SessionWindowProcessor.restore(tmp_path / "p.snap").flush()["i"].to_pylist() == [0]


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"output": "rows"}, "output"),
        ({"output": "records", "emit": "updates"}, "output"),
        ({"output": "records", "aggs": [agg.count()]}, "aggs"),
    ],
)
def test_records_mode_refuses_what_it_cannot_do(kwargs: dict[str, Any], parameter: str) -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        SessionWindowProcessor(key="k", time="t", gap=10, grace=0, **kwargs)
    assert info.value.parameter == parameter
    assert "output" in str(info.value)
    if "emit" not in kwargs:
        with pytest.raises(InvalidWindowSpec):
            session_windows(pa.table({"k": [1], "t": [0]}), key="k", time="t", gap=1, **kwargs)


def test_input_columns_named_like_the_tags_are_refused() -> None:
    data = pa.table({"k": [1], "t": [0], "session_id": [7]})
    with pytest.raises(SchemaError) as info:
        session_windows(data, key="k", time="t", gap=1, output="records")
    assert info.value.column == "session_id"
    p = SessionWindowProcessor(key="k", time="t", gap=1, grace=0, output="records")
    with pytest.raises(SchemaError):
        p.process(data)
    assert p.metrics()["records"] == 0


def test_a_batch_with_the_columns_in_another_order_is_tagged_whole() -> None:
    # Issue 38, D1: the second batch used to fail after the core had committed its rows, and
    # the next call then tagged a row into a session that had lost one of its rows.
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=0, output="records")
    p.process(pa.table({"k": ["a"], "t": [0], "x": [1]}))
    p.process(pa.table({"x": [2], "t": [5], "k": ["a"]}))
    out = p.process(pa.table({"k": ["a"], "t": [100], "x": [3]}))
    assert [(r["x"], r["session_start"], r["session_end"]) for r in out.to_pylist()] == [
        (1, 0, 5),
        (2, 0, 5),
    ]
    assert p.metrics()["accepted"] == 3
    assert p.metrics()["held_rows"] == 1


def test_a_batch_whose_column_cannot_take_the_first_type_changes_nothing() -> None:
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=0, output="records")
    p.process(pa.table({"k": ["a"], "t": [0], "x": [1]}))
    before = p.to_bytes()
    with pytest.raises(SchemaError) as e:
        p.process(pa.table({"k": ["a"], "t": [5], "x": ["not a number"]}))
    assert e.value.column == "x"
    assert p.to_bytes() == before


def test_polars_string_views_are_tagged_in_both_modes() -> None:
    # Issue 38, D2: string_view columns failed to be taken by index, after the processor had
    # accepted their rows.
    tagged = session_windows(
        pl.DataFrame({"k": ["a", "a"], "t": [0, 4]}), key="k", time="t", gap=10, output="records"
    )
    assert tagged.column("k").to_pylist() == ["a", "a"]
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=0, output="records")
    p.process(pl.DataFrame({"k": ["a"], "t": [0]}))
    p.process(pa.table({"k": ["a"], "t": [3]}))
    out = p.flush()
    assert out.column("t").to_pylist() == [0, 3]
    assert p.metrics()["held_rows"] == 0
