"""Map-side partial sessions and their merge (``_core.session_partials`` /
``merge_session_partials``, what ``windowstore.spark`` runs in its workers): any split of the
records into parts, merged, gives complete mode's sessions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from windowstore import SchemaError, SessionOverflowError, _core, agg, session_windows
from windowstore.clickstream import clickstream

AGGS = [
    agg.count(),
    agg.sum("amount"),
    agg.min("amount"),
    agg.max("page"),
    agg.mean("n"),
    agg.first("n"),
    agg.last("page"),
    agg.collect("n", max_size=4),
    agg.collect("page", max_size=3, overflow="drop_newest"),
]


def table(n: int = 30_000, seed: int = 1) -> pa.Table:
    """Times strictly increase per user (clickstream), so first/last/collect have no ties."""
    t = clickstream(n, users=200, seed=seed)
    rng = np.random.default_rng(seed)
    pages = pa.array([f"p{i}" for i in rng.integers(0, 30, n)], pa.string())
    numbers = pa.array(rng.integers(-5, 5, n), pa.int64(), mask=rng.random(n) < 0.2)
    return t.append_column("page", pages).append_column("n", numbers)


def core_args(**kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "key": ["user_id"],
        "time": "ts",
        "time_unit": None,
        "gap": None,
        "gap_column": None,
        "max_gap": None,
        "aggs": [a.to_core() for a in AGGS],
        "on_invalid": "error",
    }
    return {**args, **kw}


def merged(parts: list[pa.Table], schema: pa.Schema, **kw: Any) -> pa.Table:
    args = core_args(**kw)
    partials = [_core.session_partials(p, **args)[0] for p in parts]
    return _core.merge_session_partials(
        pa.concat_tables(partials), input=schema.empty_table(), key=args["key"], aggs=args["aggs"]
    )


def same(got: pa.Table, want: pa.Table) -> None:
    order = [("user_id", "ascending"), ("session_start", "ascending")]
    got, want = got.sort_by(order), want.sort_by(order)
    assert got.schema == want.schema
    for name in want.column_names:
        if pa.types.is_floating(want[name].type):
            np.testing.assert_allclose(
                got[name].to_numpy(zero_copy_only=False), want[name].to_numpy(zero_copy_only=False)
            )
        else:
            assert got[name].to_pylist() == want[name].to_pylist(), name


@pytest.mark.parametrize("parts", [1, 3, 7])
def test_random_splits_merge_into_complete_sessions(parts: int) -> None:
    t = table()
    where = np.random.default_rng(parts).integers(0, parts, t.num_rows)
    pieces = [t.filter(pa.array(where == i)) for i in range(parts)]
    same(merged(pieces, t.schema, gap=("nanos", 600 * 10**9)),
         session_windows(t, key="user_id", time="ts", gap="10m", aggs=AGGS))  # fmt: skip


def test_dynamic_gaps_and_time_ordered_parts() -> None:
    t = table(20_000, seed=2)
    gaps = np.random.default_rng(3).integers(10_000, 2_000_000, t.num_rows)
    t = t.append_column("gap", pa.array(gaps, pa.int64()))
    pieces = [t.slice(i, 5_000) for i in range(0, t.num_rows, 5_000)]
    kw = {"gap_column": "gap", "max_gap": ("nanos", 1800 * 10**9)}
    want = session_windows(t, key="user_id", time="ts", gap_column="gap", max_gap="30m", aggs=AGGS)
    same(merged(pieces, t.schema, **kw), want)


def test_partials_compress_realistic_sessions() -> None:
    t = table()
    partials = _core.session_partials(t, **core_args(gap=("nanos", 1800 * 10**9)))[0]
    assert partials.num_rows < t.num_rows / 5
    assert partials.column_names[-2:] == ["ws_reach", "ws_state"]


def test_merge_refuses_input_that_is_not_partials() -> None:
    t = table(100)
    with pytest.raises(SchemaError) as info:
        _core.merge_session_partials(
            t, input=t.schema.empty_table(), key=["user_id"], aggs=[agg.count().to_core()]
        )
    assert info.value.column == "session_start"


def test_a_collect_overflow_across_parts_names_the_key() -> None:
    t = pa.table({"u": ["a"] * 4, "ts": [0, 1, 2, 3], "x": [1, 2, 3, 4]})
    fail = [agg.collect("x", max_size=3, overflow="fail").to_core()]
    args = core_args(key=["u"], gap=("ticks", 5), aggs=fail)
    partials = [_core.session_partials(p, **args)[0] for p in (t.slice(0, 2), t.slice(2, 2))]
    with pytest.raises(SessionOverflowError) as info:
        _core.merge_session_partials(
            pa.concat_tables(partials), input=t.schema.empty_table(), key=["u"], aggs=fail
        )
    assert "a" in (info.value.key or "")
