"""Sliding windows from Python: docs/semantics.md sections 1, 4, 5 and 6, inputs, errors,
snapshots."""

from __future__ import annotations

import doctest
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import windowstore
from windowstore import (
    InvalidRecordError,
    InvalidWindowSpec,
    SchemaError,
    SessionOverflowError,
    SlidingWindowProcessor,
    agg,
    sliding_windows,
)

AGGS = [agg.count(), agg.sum("v"), agg.max("v"), agg.collect("v")]


def table(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table(
        {
            "k": pa.array([r[0] for r in rows], pa.string()),
            "t": pa.array([r[1] for r in rows], pa.int64()),
            "v": pa.array([r[2] for r in rows], pa.int64()),
        }
    )


def in_order(t: pa.Table) -> list[tuple[Any, ...]]:
    """(key, start, end, time, count, sum, max, values) per row, in output order."""
    return [
        (
            r["k"],
            r["window_start"],
            r["window_end"],
            r["window_time"],
            r["count"],
            r["sum_v"],
            r["max_v"],
            tuple(r["collect_v"]),
        )
        for r in t.to_pylist()
    ]


def windows(t: pa.Table) -> list[tuple[Any, ...]]:
    """The windows of an output, sorted."""
    return sorted(in_order(t))


def model(rows: list[tuple[Any, ...]], d: int) -> list[tuple[Any, ...]]:
    """The definition, by brute force: every candidate window rescanned from the raw records."""
    out = []
    for k in {r[0] for r in rows}:
        mine = [(t, arrival, v) for arrival, (kk, t, v) in enumerate(rows) if kk == k]
        starts = {t - d for t, _, _ in mine} | {t + 1 for t, _, _ in mine}
        for s in sorted(starts):
            inside = sorted(r for r in mine if s <= r[0] <= s + d)
            if inside:
                values = [v for _, _, v in inside]
                out.append(
                    (
                        k,
                        s,
                        s + d,
                        inside[-1][0],
                        len(values),
                        sum(values),
                        max(values),
                        tuple(values),
                    )
                )
    return sorted(out)


def run(p: SlidingWindowProcessor, rows: list[tuple[Any, ...]], chunk: int) -> list[pa.Table]:
    # An empty input still binds the processor, so the flush has the output schema.
    out = [p.process(table(rows[i : i + chunk])) for i in range(0, max(len(rows), 1), chunk)]
    return [*out, p.flush()]


def test_kafka_facts_d5000() -> None:
    rows = [("a", 8000, 1), ("a", 9200, 2), ("a", 12400, 3)]
    want = [
        (3000, 8000, 8000, (1,)),
        (4200, 9200, 9200, (1, 2)),
        (7400, 12400, 12400, (1, 2, 3)),
        (8001, 13001, 12400, (2, 3)),
        (9201, 14201, 12400, (3,)),
    ]
    got = windows(sliding_windows(table(rows), key="k", time="t", time_difference=5000, aggs=AGGS))
    assert [(w[1], w[2], w[3], w[7]) for w in got] == want
    p = SlidingWindowProcessor(key="k", time="t", time_difference="5s", grace=0, aggs=AGGS)
    streamed = windows(pa.concat_tables(run(p, rows, 1)))
    assert streamed == got


def test_kafka_facts_d10_grace5() -> None:
    times = [10, 10, 14, 15, 20, 22, 30]
    rows = [("a", t, i + 1) for i, t in enumerate(times)]
    want = {
        0: (1, 2),
        4: (1, 2, 3),
        5: (1, 2, 3, 4),
        10: (1, 2, 3, 4, 5),
        11: (3, 4, 5),
        12: (3, 4, 5, 6),
        15: (4, 5, 6),
        16: (5, 6),
        20: (5, 6, 7),
        21: (6, 7),
        23: (7,),
    }
    complete = windows(
        sliding_windows(table(rows), key="k", time="t", time_difference=10, aggs=AGGS)
    )
    assert {w[1]: w[7] for w in complete} == want
    p = SlidingWindowProcessor(key="k", time="t", time_difference=10, grace=5, aggs=AGGS)
    assert windows(pa.concat_tables(run(p, rows, 2))) == complete


def test_late_records_are_rejected_and_skipped_updates_counted() -> None:
    p = SlidingWindowProcessor(key="k", time="t", time_difference=10, grace=5, aggs=AGGS)
    p.process(table([("a", 20, 1), ("a", 28, 2), ("a", 40, 3), ("a", 24, 4), ("a", 30, 5)]))
    m = p.metrics()
    assert (m["rejected_late"], m["late_window_update"], m["accepted"]) == (1, 2, 4)
    assert p.rejected().to_pylist() == [{"k": "a", "t": 24, "v": 4, "reason": "late"}]
    final = windows(p.flush())
    assert all(5 not in w[7] for w in final if w[2] < 35)


def test_timestamps_keep_their_type_and_durations_convert() -> None:
    base = datetime(2024, 5, 1, tzinfo=timezone.utc)
    ts = pa.array([base, base + timedelta(seconds=3)], pa.timestamp("us", tz="UTC"))
    t = pa.table({"user": ["u", "u"], "ts": ts})
    w = sliding_windows(t, key="user", time="ts", time_difference=timedelta(seconds=5))
    assert w.schema.field("window_start").type == pa.timestamp("us", tz="UTC")
    rows = w.to_pylist()
    assert [r["window_start"] for r in rows] == [
        base - timedelta(seconds=5),
        base - timedelta(seconds=2),
        base + timedelta(microseconds=1),
    ]
    assert rows[1]["window_time"] == base + timedelta(seconds=3)
    with pytest.raises(InvalidWindowSpec) as e:
        sliding_windows(t, key="user", time="ts", time_difference="1ns")
    assert e.value.parameter == "time_difference"


def test_multi_column_keys_and_polars_duckdb_inputs() -> None:
    rows = {"a": ["x", "x", "y"], "b": [1, 1, 1], "t": [0, 5, 3], "v": [1, 2, 3]}
    want = sliding_windows(pa.table(rows), key=["a", "b"], time="t", time_difference=5)
    assert want.column_names[:2] == ["a", "b"]
    assert want.num_rows == 4  # x: [-5,0], [0,5] and [1,6]; y: [-2,3]
    for data in (
        pl.DataFrame(rows),
        duckdb.sql("select * from (values ('x',1,0,1),('x',1,5,2),('y',1,3,3)) v(a,b,t,v)"),
    ):
        got = sliding_windows(data, key=["a", "b"], time="t", time_difference=5)
        assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"time_difference": -1}, "time_difference"),
        ({"time_difference": "soon"}, "time_difference"),
        ({"time_difference": 5, "grace": -2}, "grace"),
        ({"time_difference": 5, "emit": "never"}, "emit"),
        ({"time_difference": 5, "on_invalid": "ignore"}, "on_invalid"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict[str, Any], parameter: str) -> None:
    args: dict[str, Any] = {"key": "k", "time": "t", "grace": 0, **kwargs}
    with pytest.raises(InvalidWindowSpec) as e:
        SlidingWindowProcessor(**args)
    assert e.value.parameter == parameter


@pytest.mark.parametrize(
    ("data", "column"),
    [
        (pa.table({"k": ["a"], "t": ["2024-01-01"]}), "t"),
        (pa.table({"k": ["a"], "ts": [1]}), "t"),
        (pa.table({"kk": ["a"], "t": [1]}), "k"),
    ],
)
def test_schema_errors_name_the_column(data: pa.Table, column: str) -> None:
    with pytest.raises(SchemaError) as e:
        sliding_windows(data, key="k", time="t", time_difference=5)
    assert e.value.column == column
    p = SlidingWindowProcessor(key="k", time="t", time_difference=5, grace=0)
    with pytest.raises(SchemaError):
        p.process(data)


def test_invalid_records_drop_or_error() -> None:
    data = pa.table({"k": ["a", None, "a"], "t": pa.array([1, 2, None], pa.int64())})
    with pytest.raises(InvalidRecordError) as e:
        sliding_windows(data, key="k", time="t", time_difference=5)
    assert (e.value.row, e.value.reason) == (1, "null_key")
    w, rejected = sliding_windows(
        data, key="k", time="t", time_difference=5, on_invalid="drop", return_rejected=True
    )
    assert w.num_rows == 1
    assert rejected.column("reason").to_pylist() == ["null_key", "null_time"]
    p = SlidingWindowProcessor(key="k", time="t", time_difference=5, grace=0)
    p.process(data)
    assert p.metrics()["rejected"] == 2
    assert p.rejected().num_rows == 2
    big = pa.table({"k": ["a"], "t": pa.array([2**63 - 3], pa.int64())})
    p.process(big)
    assert p.metrics()["rejected_time_overflow"] == 1


def test_collect_overflow_fail_names_key_and_window() -> None:
    data = table([("a", 0, 1), ("a", 1, 2), ("a", 2, 3)])
    bounded = [agg.collect("v", max_size=2, overflow="fail")]
    with pytest.raises(SessionOverflowError) as e:
        sliding_windows(data, key="k", time="t", time_difference=5, aggs=bounded)
    assert (e.value.start, e.value.end) == (-3, 2)
    assert "a" in str(e.value.key)
    newest = sliding_windows(
        data, key="k", time="t", time_difference=5, aggs=[agg.collect("v", max_size=2)]
    )
    assert newest.column("collect_v").to_pylist() == [[1], [1, 2], [2, 3], [2, 3], [3]]


def test_snapshot_mid_stream(tmp_path: Path) -> None:
    rows = [(f"k{i % 4}", i * 7 % 300 + i, i) for i in range(200)]
    args: dict[str, Any] = {"key": "k", "time": "t", "time_difference": 15, "grace": 40}
    whole = pa.concat_tables(run(SlidingWindowProcessor(**args, aggs=AGGS), rows, 25))
    first = SlidingWindowProcessor(**args, aggs=AGGS)
    out = [first.process(table(rows[i : i + 25])) for i in range(0, 100, 25)]
    first.snapshot(tmp_path / "s.snap")
    second = SlidingWindowProcessor.restore(tmp_path / "s.snap")
    assert isinstance(second, SlidingWindowProcessor)
    out += run(second, rows[100:], 25)
    assert pa.concat_tables(out).to_pylist() == whole.to_pylist()
    assert second.metrics()["records"] == 200


records = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 150)), max_size=60
).map(lambda rs: [(k, t, i) for i, (k, t) in enumerate(rs)])


@settings(max_examples=200, deadline=None)
@given(rows=records, d=st.integers(0, 30), chunk=st.integers(1, 15))
def test_complete_equals_model_and_streaming_in_time_order(
    rows: list[tuple[str, int, int]], d: int, chunk: int
) -> None:
    want = model(rows, d)
    assert (
        windows(sliding_windows(table(rows), key="k", time="t", time_difference=d, aggs=AGGS))
        == want
    )
    in_order = sorted(rows, key=lambda r: r[1])
    p = SlidingWindowProcessor(key="k", time="t", time_difference=d, grace=0, aggs=AGGS)
    assert windows(pa.concat_tables(run(p, in_order, chunk))) == model(in_order, d)


@settings(max_examples=150, deadline=None)
@given(rows=records, d=st.integers(0, 30), grace=st.integers(0, 40), chunk=st.integers(1, 15))
def test_changelog_replays_to_final_and_nothing_is_lost(
    rows: list[tuple[str, int, int]], d: int, grace: int, chunk: int
) -> None:
    args: dict[str, Any] = {"key": "k", "time": "t", "time_difference": d, "grace": grace}
    p = SlidingWindowProcessor(**args, aggs=AGGS)
    final = windows(pa.concat_tables(run(p, rows, chunk)))
    m = p.metrics()
    accepted, late = m["accepted"], m["rejected_late"]
    assert accepted is not None
    assert late is not None
    assert accepted + late == len(rows)
    assert len({(w[0], w[1]) for w in final}) == len(final), "a window emitted twice"
    if m["late_window_update"] == 0:
        # Distinct record sets hold only while no closed window missed a record: a right
        # window seeded from a closed window that skipped the record repeats that window's set.
        assert len({(w[0], w[7]) for w in final}) == len(final)
    for emit in ("updates", "changes"):
        log = pa.concat_tables(
            run(SlidingWindowProcessor(**args, aggs=AGGS, emit=emit), rows, chunk)
        )
        assert set(log.column("op").to_pylist()) <= {"upsert"}
        current: dict[tuple[Any, int], tuple[Any, ...]] = {}
        for w in in_order(log):
            current[(w[0], w[1])] = w
        assert sorted(current.values()) == final


def test_docstring_examples_run() -> None:
    for module in (windowstore.sliding, windowstore.sessions, windowstore.agg):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__
    assert doctest.testmod(windowstore.sliding).attempted >= 4
