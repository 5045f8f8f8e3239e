"""Processor calls are transactions, from Python: every error leaves ``to_bytes()`` as it was,
rows are named by their number in the whole table, rejected rows travel in snapshots, and one
processor serves several threads (issue 12)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pyarrow as pa
import pytest

from windowstore import (
    InvalidRecordError,
    SchemaError,
    SessionOverflowError,
    SessionWindowProcessor,
    SlidingWindowProcessor,
    WindowStoreError,
    agg,
)

Factory = Callable[[], SessionWindowProcessor | SlidingWindowProcessor]


def _sessions(**kw: object) -> SessionWindowProcessor:
    args: dict[str, object] = {"key": "k", "time": "ts", "gap": 10, "grace": 5}
    args.update(kw)
    return SessionWindowProcessor(**args)  # type: ignore[arg-type]


def _sliding(**kw: object) -> SlidingWindowProcessor:
    args: dict[str, object] = {"key": "k", "time": "ts", "time_difference": 10, "grace": 5}
    args.update(kw)
    return SlidingWindowProcessor(**args)  # type: ignore[arg-type]


def _two_chunks(first: dict[str, list[object]], second: dict[str, list[object]]) -> pa.Table:
    return pa.concat_tables([pa.table(first), pa.table(second)])


@pytest.mark.parametrize("make", [_sessions, _sliding])
def test_an_invalid_record_names_its_row_in_the_whole_table(make: Callable[..., object]) -> None:
    p = make(on_invalid="error", aggs=[agg.count()])
    p.process(pa.table({"k": ["a"], "ts": [0]}))  # type: ignore[attr-defined]
    before = p.to_bytes()  # type: ignore[attr-defined]
    data = _two_chunks({"k": ["a", "b"], "ts": [1, 2]}, {"k": ["a", None], "ts": [3, 4]})
    assert data.column("k").num_chunks == 2
    with pytest.raises(InvalidRecordError) as info:
        p.process(data)  # type: ignore[attr-defined]
    assert info.value.row == 3
    assert p.to_bytes() == before  # type: ignore[attr-defined]


@pytest.mark.parametrize("make", [_sessions, _sliding])
@pytest.mark.parametrize("emit", ["final", "updates", "changes"])
def test_an_overflow_changes_nothing(make: Callable[..., object], emit: str) -> None:
    p = make(emit=emit, aggs=[agg.count(), agg.collect("v", max_size=2, overflow="fail")])
    p.process(pa.table({"k": ["a", "b"], "ts": [0, 3], "v": [1, 1]}))  # type: ignore[attr-defined]
    before = p.to_bytes()  # type: ignore[attr-defined]
    metrics = p.metrics()  # type: ignore[attr-defined]
    bad = pa.table({"k": [None, "a", "c", "a"], "ts": [1, 2, 8, 3], "v": [0, 2, 1, 3]})
    with pytest.raises(SessionOverflowError):
        p.process(bad)  # type: ignore[attr-defined]
    assert p.to_bytes() == before  # type: ignore[attr-defined]
    # Every counter is back; only the heap estimate may differ (arena space is kept for reuse).
    after = p.metrics()  # type: ignore[attr-defined]
    assert {k: v for k, v in after.items() if k != "store_bytes"} == {
        k: v for k, v in metrics.items() if k != "store_bytes"
    }


@pytest.mark.parametrize("make", [_sessions, _sliding])
def test_an_output_error_changes_nothing(make: Callable[..., object]) -> None:
    # An int64 sum that overflows fails when the output is built, after the store changed.
    p = make(emit="updates", aggs=[agg.sum("v")])
    p.process(pa.table({"k": ["a"], "ts": [0], "v": [1]}))  # type: ignore[attr-defined]
    before = p.to_bytes()  # type: ignore[attr-defined]
    big = 2**63 - 1
    with pytest.raises(SchemaError, match="overflows"):
        p.process(pa.table({"k": ["a", "x", "x"], "ts": [1, 2, 2], "v": [1, big, big]}))  # type: ignore[attr-defined]
    assert p.to_bytes() == before  # type: ignore[attr-defined]


def test_rejected_rows_travel_in_snapshots() -> None:
    p = _sessions(gap=10, grace=0)
    p.process(pa.table({"k": ["a", None, "a"], "ts": [100, 5, 0]}))
    q = SessionWindowProcessor.from_bytes(p.to_bytes())
    rejected = q.rejected()
    assert rejected.column("reason").to_pylist() == ["null_key", "late"]
    assert rejected.column("ts").to_pylist() == [5, 0]
    assert q.metrics()["rejected"] == 2


def test_sliding_windows_exclude_records_before_their_start() -> None:
    """Issue 12 defect 2: one record per call, D 10, grace 0; 15 arrives with its left window
    closed. b [18, 28] holds 21 and 28 only, and 15's right window [16, 26] exists."""
    p = _sliding(time_difference=10, grace=0, aggs=[agg.collect("ts")])
    out = []
    for k, t in [("b", 13), ("a", 17), ("b", 15), ("b", 21), ("b", 28)]:
        out.extend(p.process(pa.table({"k": [k], "ts": [t]})).to_pylist())
    out.extend(p.flush().to_pylist())
    b = sorted((w["window_start"], w["collect_ts"]) for w in out if w["k"] == "b")
    assert (18, [21, 28]) in b
    assert (16, [21]) in b
    assert all(w["window_start"] <= t for w in out for t in w["collect_ts"])


def test_a_failed_call_leaves_the_processor_usable() -> None:
    p = _sessions(on_invalid="error", aggs=[agg.count()])
    with pytest.raises(WindowStoreError):
        p.process(pa.table({"k": [None], "ts": [0]}))
    p.process(pa.table({"k": ["a"], "ts": [0]}))
    assert p.flush().to_pylist() == [{"k": "a", "session_start": 0, "session_end": 0, "count": 1}]


@pytest.mark.parametrize("make", [_sessions, _sliding])
def test_threads_share_one_processor(make: Callable[..., object]) -> None:
    """Calls from several threads serialize: no 'Already borrowed', nothing lost."""
    p = make(aggs=[agg.count()])
    errors: list[BaseException] = []
    per_thread, batches = 4, 25

    def feed(i: int) -> None:
        try:
            for b in range(batches):
                ts = [b * 100 + j for j in range(per_thread)]
                p.process(pa.table({"k": [f"t{i}"] * per_thread, "ts": ts}))  # type: ignore[attr-defined]
                p.metrics()  # type: ignore[attr-defined]
                p.to_bytes()  # type: ignore[attr-defined]
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=feed, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    m = p.metrics()  # type: ignore[attr-defined]
    assert m["records"] == 4 * per_thread * batches
    assert m["records"] == m["accepted"] + m["rejected"]
