"""Session windows from Python: docs/semantics.md sections 1, 2, 5 and 6, inputs, errors,
snapshots."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowstore import (
    InvalidRecordError,
    InvalidWindowSpec,
    SchemaError,
    SessionOverflowError,
    SessionWindowProcessor,
    WindowStoreError,
    agg,
    session_windows,
)

AGGS = [agg.count(), agg.sum("v"), agg.collect("v")]


def table(rows: list[tuple[Any, ...]], names: tuple[str, ...] = ("k", "t", "v")) -> pa.Table:
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


def windows(t: pa.Table) -> list[tuple[Any, ...]]:
    """(key, start, end, count, sum, values) per row, sorted."""
    rows = t.to_pylist()
    return sorted(
        (
            r["k"],
            r["session_start"],
            r["session_end"],
            r["count"],
            r["sum_v"],
            tuple(r["collect_v"]),
        )
        for r in rows
    )


def model(rows: list[tuple[Any, ...]], gap: int) -> list[tuple[Any, ...]]:
    """The definition: per key, records chained by t <= previous reach share a session."""
    out: list[tuple[Any, ...]] = []
    by_key: dict[Any, list[tuple[int, int, int]]] = {}
    for arrival, (k, t, v) in enumerate(rows):
        by_key.setdefault(k, []).append((t, arrival, v))
    for k, recs in by_key.items():
        recs.sort()
        cur: list[Any] | None = None
        for t, _, v in recs:
            if cur is not None and t <= cur[1] + gap:
                cur[1] = t
                cur[2].append(v)
            else:
                if cur is not None:
                    out.append((k, cur[0], cur[1], len(cur[2]), sum(cur[2]), tuple(cur[2])))
                cur = [t, t, [v]]
        if cur is not None:
            out.append((k, cur[0], cur[1], len(cur[2]), sum(cur[2]), tuple(cur[2])))
    return sorted(out)


def stream(p: SessionWindowProcessor, rows: list[tuple[Any, ...]], chunk: int) -> list[pa.Table]:
    out = [p.process(table(rows[i : i + chunk])) for i in range(0, len(rows), chunk)]
    out.append(p.flush())
    return out


def replay(tables: list[pa.Table]) -> list[tuple[Any, ...]]:
    current: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for t in tables:
        for r in t.to_pylist():
            w = (r["k"], r["session_start"], r["session_end"])
            if r["op"] == "delete":
                assert current.pop(w, None) is not None, f"delete of an unknown window {w}"
            else:
                current[w] = (*w, r["count"], r["sum_v"], tuple(r["collect_v"]))
    return sorted(current.values())


def test_fixed_gap_rule() -> None:
    rows = [("a", 0, 1), ("a", 10, 2), ("a", 21, 3)]
    want = [("a", 0, 10, 2, 3, (1, 2)), ("a", 21, 21, 1, 3, (3,))]
    assert windows(session_windows(table(rows), key="k", time="t", gap=10, aggs=AGGS)) == want
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=0, aggs=AGGS)
    assert windows(pa.concat_tables(stream(p, rows, 1))) == want


def test_timestamps_durations_and_zones() -> None:
    t0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
    ts = [t0, t0 + timedelta(minutes=29), t0 + timedelta(hours=2)]
    data = pa.table(
        {"k": [1, 1, 1], "t": pa.array(ts, pa.timestamp("us", tz="UTC")), "v": [1, 2, 3]}
    )
    for gap in ("30m", "30 minutes", timedelta(minutes=30)):
        out = session_windows(data, key="k", time="t", gap=gap, aggs=[agg.count()])
        assert out.schema.field("session_start").type == pa.timestamp("us", tz="UTC")
        assert out.column("count").to_pylist() == [2, 1]
        assert out.column("session_end").to_pylist()[0] == ts[1]
    # A bare integer would be microseconds here: refused, not guessed.
    with pytest.raises(InvalidWindowSpec, match=r"timestamp\[us\]"):
        session_windows(data, key="k", time="t", gap=30 * 60 * 1_000_000, aggs=[agg.count()])


def test_integer_time_units() -> None:
    data = table([("a", 0, 1), ("a", 30, 2)])
    out = session_windows(data, key="k", time="t", gap="30s", aggs=[agg.count()], time_unit="s")
    assert out.column("count").to_pylist() == [2]
    with pytest.raises(InvalidWindowSpec, match="gap") as info:
        session_windows(data, key="k", time="t", gap="1500ms", aggs=[], time_unit="s")
    assert info.value.parameter == "gap"


def test_multi_column_and_binary_keys() -> None:
    data = pa.table(
        {
            "region": ["eu", "eu", "us", "eu"],
            "user": [b"\x00a", b"\x00a", b"\x00a", b"\x00b"],
            "t": [0, 1, 2, 3],
        }
    )
    out = session_windows(data, key=["region", "user"], time="t", gap=5, aggs=[agg.count()])
    got = sorted((r["region"], r["user"], r["count"]) for r in out.to_pylist())
    assert got == [("eu", b"\x00a", 2), ("eu", b"\x00b", 1), ("us", b"\x00a", 1)]


def test_polars_strings_aggregate_like_any_string() -> None:
    df = pl.DataFrame({"k": ["a", "a"], "t": [0, 5], "page": ["home", "cart"]})
    aggs = [agg.first("page"), agg.max("page"), agg.collect("page")]
    out = session_windows(df, key="k", time="t", gap=10, aggs=aggs)
    assert out.schema.field("first_page").type == pa.string()
    assert out.select(["first_page", "max_page", "collect_page"]).to_pylist() == [
        {"first_page": "home", "max_page": "home", "collect_page": ["home", "cart"]}
    ]
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=0, aggs=aggs)
    p.process(df)
    assert p.flush().column("collect_page").to_pylist() == [["home", "cart"]]


def test_polars_and_duckdb_inputs() -> None:
    df = pl.DataFrame({"k": ["a", "a", "b"], "t": [0, 5, 1], "v": [1, 2, 3]})
    assert windows(session_windows(df, key="k", time="t", gap=10, aggs=AGGS)) == [
        ("a", 0, 5, 2, 3, (1, 2)),
        ("b", 1, 1, 1, 3, (3,)),
    ]
    rel = duckdb.sql("select 'a' as k, 0::BIGINT as t, 4::BIGINT as v union all select 'a', 7, 5")
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=0, aggs=AGGS)
    p.process(rel)
    assert windows(p.flush()) == [("a", 0, 7, 2, 9, (4, 5))]


def test_all_aggregations_and_aliases() -> None:
    data = pa.table({"k": [1, 1, 1, 1], "t": [3, 1, 2, 2], "v": [10.0, None, 30.0, 5.0]})
    out = session_windows(
        data,
        key="k",
        time="t",
        gap=10,
        aggs=[
            agg.count().alias("n"),
            agg.sum("v"),
            agg.min("v"),
            agg.max("v"),
            agg.mean("v"),
            agg.first("v"),
            agg.last("v"),
            agg.collect("v", max_size=2, overflow="drop_oldest").alias("newest"),
            agg.collect("v", max_size=2, overflow="drop_newest").alias("oldest"),
        ],
    ).to_pylist()
    assert out == [
        {
            "k": 1,
            "session_start": 1,
            "session_end": 3,
            "n": 4,
            "sum_v": 45.0,
            "min_v": 5.0,
            "max_v": 30.0,
            "mean_v": 15.0,
            "first_v": 30.0,  # the null at t=1 is skipped; 30 arrived before 5 at t=2
            "last_v": 10.0,
            "newest": [5.0, 10.0],
            "oldest": [30.0, 5.0],
        }
    ]


def test_emit_modes_and_late_records() -> None:
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=5, emit="updates", aggs=AGGS)
    out = p.process(table([("a", 0, 1), ("a", 5, 2), ("a", 0, 3)]))
    assert out.to_pylist()[-1]["op"] == "upsert"
    assert len(out) == 1, "coalesced to the last change of [0, 5] within the batch"
    p.process(table([("b", 40, 1)]))
    late = p.process(table([("a", 2, 9)]))
    assert len(late) == 0
    rejected = p.rejected()
    assert rejected.column("reason").to_pylist() == ["late"]
    assert rejected.column("t").to_pylist() == [2]
    m = p.metrics()
    assert (m["records"], m["accepted"], m["rejected_late"]) == (5, 4, 1)


def test_flush_ends_the_stream() -> None:
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=0, aggs=AGGS)
    assert p.flush().num_rows == 0
    with pytest.raises(WindowStoreError, match="flushed"):
        p.process(table([("a", 0, 1)]))


def test_empty_batches() -> None:
    empty = pa.table(
        {
            "k": pa.array([], pa.string()),
            "t": pa.array([], pa.int64()),
            "v": pa.array([], pa.int64()),
        }
    )
    p = SessionWindowProcessor(key="k", time="t", gap=10, grace=0, aggs=AGGS)
    assert p.process(empty).num_rows == 0
    assert "session_start" in p.process(empty).column_names
    assert session_windows(empty, key="k", time="t", gap=1, aggs=AGGS).num_rows == 0


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"gap": 0}, "gap"),
        ({"gap": -5}, "gap"),
        ({"gap": "-5s"}, "gap"),
        ({"gap": "5 parsecs"}, "gap"),
        ({"gap": 10, "grace": -1}, "grace"),
        ({"gap": 10, "grace": 5, "retention": 14}, "retention"),
        ({"gap_column": "v"}, "max_gap"),
        ({"gap": 10, "gap_column": "v", "max_gap": 3}, "gap"),
        ({"gap": 10, "emit": "sometimes"}, "emit"),
        ({"gap": 10, "on_invalid": "ignore"}, "on_invalid"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict[str, Any], parameter: str) -> None:
    args: dict[str, Any] = {"key": "k", "time": "t", "grace": 0, "aggs": AGGS, **kwargs}
    with pytest.raises(InvalidWindowSpec) as info:
        SessionWindowProcessor(**args)
    assert info.value.parameter == parameter, info.value


@pytest.mark.parametrize(
    ("data", "kwargs", "column", "found"),
    [
        (table([("a", 0, 1)]), {"key": "user"}, "user", "no such column"),
        (table([("a", "2024-01-01", 1)]), {}, "t", "string"),
        (table([("a", 0.5, 1)]), {}, "t", "Float64"),
        (table([("a", 0, "x")]), {"aggs": [agg.sum("v")]}, "v", "Utf8"),
        (table([("a", 0, 1)]), {"aggs": [agg.sum("w")]}, "w", "no such column"),
        (table([(1.5, 0, 1)]), {"key": "k"}, "k", "Float64"),
    ],
)
def test_schema_errors_name_the_column(
    data: pa.Table, kwargs: dict[str, Any], column: str, found: str
) -> None:
    args: dict[str, Any] = {"key": "k", "time": "t", "gap": 10, "aggs": [agg.count()], **kwargs}
    with pytest.raises(SchemaError, match=found) as info:
        session_windows(data, **args)
    assert info.value.column == column
    with pytest.raises(SchemaError):
        SessionWindowProcessor(grace=0, **args).process(data)


def test_invalid_records_drop_or_error() -> None:
    data = pa.table(
        {
            "k": ["a", None, "a", "a", "a"],
            "t": [0, 1, None, 3, 4],
            "g": [5, 5, 5, 0, None],
            "v": [1, 2, 3, 4, 5],
        }
    )
    kw: dict[str, Any] = dict(key="k", time="t", gap_column="g", max_gap=10, aggs=[agg.count()])
    out, rejected = session_windows(data, **kw, on_invalid="drop", return_rejected=True)
    assert out.column("count").to_pylist() == [1]
    assert rejected.column("reason").to_pylist() == [
        "null_key",
        "null_time",
        "invalid_gap",
        "invalid_gap",
    ]
    assert rejected.column("v").to_pylist() == [2, 3, 4, 5]
    with pytest.raises(InvalidRecordError) as info:
        session_windows(data, **kw)
    assert (info.value.row, info.value.reason) == (1, "null_key")
    p = SessionWindowProcessor(**kw, grace=0, on_invalid="error")
    with pytest.raises(InvalidRecordError):
        p.process(data)
    assert p.metrics()["records"] == 0, "nothing of the failed batch was applied"


def test_time_overflow_is_rejected() -> None:
    data = pa.table({"k": ["a", "a"], "t": [2**63 - 5, 0], "v": [1, 2]})
    out, rejected = session_windows(
        data, key="k", time="t", gap=10, aggs=[agg.count()], on_invalid="drop", return_rejected=True
    )
    assert rejected.column("reason").to_pylist() == ["time_overflow"]
    assert out.column("count").to_pylist() == [1]


def test_collect_overflow_fail_names_key_and_window() -> None:
    data = table([("alice", 0, 1), ("alice", 1, 2), ("alice", 2, 3)])
    p = SessionWindowProcessor(
        key="k", time="t", gap=10, grace=0, aggs=[agg.collect("v", max_size=2, overflow="fail")]
    )
    before = p.to_bytes()
    with pytest.raises(SessionOverflowError, match="alice") as info:
        p.process(data)
    assert (info.value.start, info.value.end) == (0, 2)
    # All or nothing: the failed call changed nothing, and the processor stays usable.
    assert p.to_bytes() == before
    assert p.metrics()["records"] == 0
    assert p.process(data.slice(0, 2)).num_rows == 0
    assert p.flush().column("session_end").to_pylist() == [1]
    with pytest.raises(SessionOverflowError, match="k=alice") as info:
        session_windows(data, key="k", time="t", gap=10, aggs=[agg.collect("v", 2, "fail")])
    assert (info.value.key, info.value.start, info.value.end) == ("k=alice", 0, 2)
    with pytest.raises(InvalidWindowSpec):
        agg.collect("v", max_size=0)


def test_gap_clamping_is_counted() -> None:
    data = pa.table({"k": ["a", "a"], "t": [0, 50], "g": pa.array([100, 1], pa.duration("ms"))})
    p = SessionWindowProcessor(
        key="k", time="t", gap_column="g", max_gap=20, grace=0, aggs=[agg.count()]
    )
    closed = p.process(data)  # [0, 0] reaches only 0 + 20 (clamped), closed by stream time 50
    assert p.metrics()["gap_clamped"] == 1
    assert closed.column("session_end").to_pylist() == [0]
    assert p.flush().column("session_start").to_pylist() == [50]


def test_snapshot_mid_stream(tmp_path: Path) -> None:
    rows = [(f"u{i % 5}", i * 7 % 300 + i, i) for i in range(300)]
    rows.sort(key=lambda r: r[1])

    def fresh() -> SessionWindowProcessor:
        return SessionWindowProcessor(
            key="k", time="t", gap=12, grace=30, emit="changes", aggs=AGGS
        )

    whole = pa.concat_tables(stream(fresh(), rows, 40)).to_pylist()
    first = fresh()
    got = [first.process(table(rows[i : i + 40])) for i in range(0, 160, 40)]
    first.snapshot(tmp_path / "p.snap")
    second = SessionWindowProcessor.restore(tmp_path / "p.snap")
    assert second.metrics()["stream_time"] == first.metrics()["stream_time"]
    got += stream(second, rows[160:], 40)
    assert pa.concat_tables(got).to_pylist() == whole


records = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 300), st.integers(-9, 9)),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(rows=records, gap=st.integers(1, 40), chunk=st.integers(1, 15))
def test_streaming_in_time_order_equals_complete_mode(
    rows: list[tuple[str, int, int]], gap: int, chunk: int
) -> None:
    ordered = sorted(rows, key=lambda r: r[1])
    want = model(ordered, gap)
    assert windows(
        session_windows(
            table(rows or [("a", 0, 0)])[: len(rows)], key="k", time="t", gap=gap, aggs=AGGS
        )
    ) == model(rows, gap)
    p = SessionWindowProcessor(key="k", time="t", gap=gap, grace=0, aggs=AGGS)
    assert windows(pa.concat_tables(stream(p, ordered, chunk))) == want


@settings(max_examples=200, deadline=None)
@given(
    rows=records,
    gap=st.integers(1, 40),
    grace=st.integers(0, 60),
    chunk=st.integers(1, 15),
    emit=st.sampled_from(["updates", "changes"]),
)
def test_changelog_replays_to_final_and_nothing_is_lost(
    rows: list[tuple[str, int, int]], gap: int, grace: int, chunk: int, emit: Any
) -> None:
    log = SessionWindowProcessor(key="k", time="t", gap=gap, grace=grace, emit=emit, aggs=AGGS)
    fin = SessionWindowProcessor(key="k", time="t", gap=gap, grace=grace, aggs=AGGS)
    replayed = replay(stream(log, rows, chunk))
    final = windows(pa.concat_tables(stream(fin, rows, chunk)))
    assert replayed == final
    m = {k: v or 0 for k, v in fin.metrics().items()}
    assert m["accepted"] + m["rejected"] == len(rows)
    assert sum(w[3] for w in final) == m["accepted"]
    assert fin.rejected().num_rows == m["rejected_late"] == m["rejected"]


@settings(max_examples=100, deadline=None)
@given(rows=records, gap=st.integers(1, 40))
def test_any_arrival_order_with_unbounded_grace(rows: list[tuple[str, int, int]], gap: int) -> None:
    shuffled = list(reversed(rows))
    p = SessionWindowProcessor(key="k", time="t", gap=gap, grace=10**6, aggs=AGGS)
    assert windows(pa.concat_tables(stream(p, shuffled, 7))) == model(shuffled, gap)
