"""Decimal128 aggregates (Spark's DecimalType) against Python's decimal module, in every engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import windowstore as ws
from windowstore import AggregateOverflowError, SchemaError, _core, agg

TYPE = pa.decimal128(10, 2)
AGGS = [
    agg.count(),
    agg.sum("v"),
    agg.mean("v"),
    agg.min("v"),
    agg.max("v"),
    agg.first("v"),
    agg.last("v"),
    agg.count_distinct("v"),
    agg.collect("v"),
    agg.collect_all("v"),
]

cents = st.one_of(
    st.none(),
    st.integers(-500, 500),
    st.sampled_from([9_999_999_999, -9_999_999_999, 1, -1]),
)
rows_strategy = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 30), cents), min_size=1, max_size=30
)


def table(rows: Sequence[tuple[str, int, int | None]], dtype: pa.DataType = TYPE) -> pa.Table:
    scale = dtype.scale
    values = [None if c is None else Decimal(c).scaleb(-scale) for _, _, c in rows]
    return pa.table(
        {
            "k": pa.array([k for k, _, _ in rows], pa.string()),
            "t": pa.array([t for _, t, _ in rows], pa.int64()),
            "v": pa.array(values, dtype),
        }
    )


def model(rows: list[tuple[str, int, int | None]], key: str, lo: int, hi: int) -> dict[str, Any]:
    """What each aggregate should be over the rows of `key` with `lo <= t <= hi`, by `decimal`."""
    inside = sorted(
        ((t, i, c) for i, (k, t, c) in enumerate(rows) if k == key and lo <= t <= hi),
        key=lambda r: (r[0], r[1]),
    )
    every = [None if c is None else Decimal(c).scaleb(-2) for _, _, c in inside]
    present = [v for v in every if v is not None]
    total = sum(present, Decimal(0))
    mean = (
        (total / len(present)).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)
        if present
        else None
    )
    return {
        "count": len(inside),
        "sum_v": total if present else None,
        "mean_v": mean,
        "min_v": min(present, default=None),
        "max_v": max(present, default=None),
        "first_v": present[0] if present else None,
        "last_v": present[-1] if present else None,
        "count_distinct_v": len(set(present)),
        "collect_v": present,
        "collect_all_v": every,
    }


def check(out: pa.Table, rows: list[tuple[str, int, int | None]], bounds: tuple[str, str]) -> None:
    assert out.schema.field("sum_v").type == pa.decimal128(20, 2)
    assert out.schema.field("mean_v").type == pa.decimal128(14, 6)
    for name in ("min_v", "max_v", "first_v", "last_v"):
        assert out.schema.field(name).type == TYPE
    assert out.schema.field("collect_v").type == pa.list_(TYPE)
    assert out.schema.field("count_distinct_v").type == pa.int64()
    for row in out.to_pylist():
        want = model(rows, row["k"], row[bounds[0]], row[bounds[1]])
        got = {name: row[name] for name in want}
        assert got == want, (row, want)


@settings(max_examples=60, deadline=None)
@given(rows_strategy)
def test_session_windows_equal_the_decimal_model(rows: list[tuple[str, int, int | None]]) -> None:
    out = ws.session_windows(table(rows), key="k", time="t", gap=3, aggs=AGGS)
    check(out, rows, ("session_start", "session_end"))


@settings(max_examples=60, deadline=None)
@given(rows_strategy)
def test_sliding_windows_equal_the_decimal_model(rows: list[tuple[str, int, int | None]]) -> None:
    out = ws.sliding_windows(table(rows), key="k", time="t", time_difference=4, aggs=AGGS)
    check(out, rows, ("window_start", "window_end"))


@settings(max_examples=40, deadline=None)
@given(rows_strategy, st.integers(1, 5), st.sampled_from(["sessions", "sliding"]))
def test_processors_in_chunks_through_snapshots_equal_complete_mode(
    rows: list[tuple[str, int, int | None]], chunk: int, kind: str
) -> None:
    """In time order, chunked, restored from bytes between chunks: complete mode's windows."""
    rows = sorted(rows, key=lambda r: r[1])
    data = table(rows)
    if kind == "sessions":
        p: ws.SessionWindowProcessor | ws.SlidingWindowProcessor = ws.SessionWindowProcessor(
            key="k", time="t", gap=3, grace=0, aggs=AGGS
        )
        want = ws.session_windows(data, key="k", time="t", gap=3, aggs=AGGS)
        bounds = ("session_start", "session_end")
    else:
        p = ws.SlidingWindowProcessor(key="k", time="t", time_difference=4, grace=0, aggs=AGGS)
        want = ws.sliding_windows(data, key="k", time="t", time_difference=4, aggs=AGGS)
        bounds = ("window_start", "window_end")
    outs = []
    for at in range(0, data.num_rows, chunk):
        outs.append(p.process(data.slice(at, chunk)))
        p = type(p).from_bytes(p.to_bytes())
    outs.append(p.flush())
    got = pa.concat_tables(outs)
    check(got, rows, bounds)
    order = [(k, "ascending") for k in ("k", bounds[0])]
    assert got.sort_by(order).select(want.column_names) == want.sort_by(order)


def test_changes_mode_emits_each_update_with_decimal_values() -> None:
    rows = [("a", 1, 125), ("a", 2, -10), ("a", 3, None)]
    p = ws.SessionWindowProcessor(key="k", time="t", gap=5, grace=0, aggs=AGGS, emit="changes")
    out = pa.concat_tables([p.process(table(rows[:2])), p.process(table(rows[2:]))])
    upserts = [r for r in out.to_pylist() if r["op"] == "upsert"]
    assert [r["sum_v"] for r in upserts] == [Decimal("1.25"), Decimal("1.15"), Decimal("1.15")]
    assert upserts[-1]["mean_v"] == Decimal("0.575000")
    assert upserts[-1]["collect_all_v"] == [Decimal("1.25"), Decimal("-0.10"), None]


def test_mean_rounds_half_away_from_zero_at_the_result_scale() -> None:
    # 1 + 0 + 0 + 0 + 0 + 0 + 0 + 0 (in units of 0.00000001 at scale 8): 1/8 = 0.125 units,
    # at scale 12 exactly 0.000000001250; and 2/3 of a unit rounds up, -2/3 down.
    dtype = pa.decimal128(20, 8)
    rows = [("a", 0, 1)] + [("a", 0, 0)] * 7 + [("b", 0, 2), ("b", 0, 0), ("b", 0, 0)]
    rows += [("c", 0, -2), ("c", 0, 0), ("c", 0, 0)]
    out = ws.session_windows(table(rows, dtype), key="k", time="t", gap=1, aggs=[agg.mean("v")])
    assert out.schema.field("mean_v").type == pa.decimal128(24, 12)
    got = dict(zip(out["k"].to_pylist(), out["mean_v"].to_pylist(), strict=True))
    assert got == {
        "a": Decimal("0.000000001250"),
        "b": Decimal("0.000000006667"),
        "c": Decimal("-0.000000006667"),
    }


def test_a_sum_beyond_38_digits_raises_and_leaves_the_processor_unchanged() -> None:
    dtype = pa.decimal128(38, 0)
    near = 6 * 10**37
    p = ws.SessionWindowProcessor(
        key="k", time="t", gap=5, grace=0, aggs=[agg.sum("v")], emit="updates"
    )
    p.process(table([("a", 1, near)], dtype))
    before = p.to_bytes()
    with pytest.raises(AggregateOverflowError) as raised:
        p.process(table([("b", 1, 1), ("a", 2, near)], dtype))
    error = raised.value
    assert (error.aggregate, error.column, error.key, error.start, error.end) == (
        "sum(v)",
        "v",
        "k=a",
        1,
        2,
    )
    message = str(error)
    assert message.startswith("sum(v) overflows in the window [1, 2] of key k=a: ")
    assert "does not fit the output type Decimal128(38, 0)" in message
    assert "120000000000000000000000000000000000000" in message
    assert p.to_bytes() == before
    # The processor still works: a record that fits goes in.
    out = p.process(table([("a", 3, -near)], dtype))
    assert out["sum_v"].to_pylist()[-1] == Decimal(0)
    completes: list[Callable[[pa.Table], pa.Table]] = [
        lambda d: ws.session_windows(d, key="k", time="t", gap=5, aggs=[agg.sum("v")]),
        lambda d: ws.sliding_windows(d, key="k", time="t", time_difference=5, aggs=[agg.sum("v")]),
    ]
    for complete in completes:
        with pytest.raises(AggregateOverflowError, match=r"sum\(v\) overflows .* of key k=a"):
            complete(table([("a", 1, near), ("a", 2, near)], dtype))


@pytest.mark.parametrize("emit", ["final", "updates"])
def test_a_sliding_processor_refuses_the_overflowing_record_unchanged(
    emit: Literal["final", "updates"],
) -> None:
    dtype = pa.decimal128(38, 0)
    near = 6 * 10**37
    p = ws.SlidingWindowProcessor(
        key="k", time="t", time_difference=5, grace=0, aggs=[agg.sum("v")], emit=emit
    )
    p.process(table([("a", 1, near)], dtype))
    before = p.to_bytes()
    with pytest.raises(
        AggregateOverflowError, match=r"sum\(v\) overflows in the window .* of key k=a"
    ):
        p.process(table([("a", 2, near)], dtype))
    assert p.to_bytes() == before
    p.process(table([("a", 20, 1)], dtype))


def test_decimal256_is_refused_naming_the_column_and_the_cast() -> None:
    data = pa.table({"k": ["a"], "t": [1], "v": pa.array([Decimal(1)], pa.decimal256(40, 0))})
    with pytest.raises(
        SchemaError, match=r'"v".*Decimal256\(40, 0\).*cast the column to Decimal128'
    ):
        ws.session_windows(data, key="k", time="t", gap=5, aggs=[agg.sum("v")])


def test_the_money_example_of_the_windows_page() -> None:
    """docs/concepts/windows.md, "Money columns": the sum and mean shown, of the types shown."""
    orders = pa.table(
        {
            "user": ["a", "a", "a"],
            "ts": [0, 60_000, 120_000],
            "amount": pa.array(
                [Decimal("19.99"), Decimal("5.00"), Decimal("0.01")], pa.decimal128(10, 2)
            ),
        }
    )
    out = ws.session_windows(
        orders, key="user", time="ts", gap="5m", aggs=[agg.sum("amount"), agg.mean("amount")]
    )
    assert out["sum_amount"].type == pa.decimal128(20, 2)
    assert out["sum_amount"].to_pylist() == [Decimal("25.00")]
    assert out["mean_amount"].type == pa.decimal128(14, 6)
    assert out["mean_amount"].to_pylist() == [Decimal("8.333333")]


@settings(max_examples=40, deadline=None)
@given(rows_strategy, st.integers(1, 4), st.randoms(use_true_random=False))
def test_map_side_partials_merge_into_complete_sessions(
    rows: list[tuple[str, int, int | None]], parts: int, rng: Any
) -> None:
    """What the Spark batch adapter runs: each part's partial sessions (states of decimals),
    merged after the shuffle, are complete mode's sessions. Times are made unique: records of
    one time in different parts have no arrival order between them."""
    ordered = sorted(rows, key=lambda r: r[1])
    rows = [(k, 3 * i + t % 3, c) for i, (k, t, c) in enumerate(ordered)]
    data = table(rows)
    where = [rng.randrange(parts) for _ in rows]
    aggs = [a.to_core() for a in AGGS]
    args: dict[str, Any] = {
        "key": ["k"],
        "time": "t",
        "time_unit": None,
        "gap": ("ticks", 3),
        "gap_column": None,
        "max_gap": None,
        "aggs": aggs,
        "on_invalid": "error",
    }
    pieces = [data.filter(pa.array([w == i for w in where])) for i in range(parts)]
    partials = [_core.session_partials(p, **args)[0] for p in pieces]
    got = _core.merge_session_partials(
        pa.concat_tables(partials), input=data.schema.empty_table(), key=["k"], aggs=aggs
    )
    want = ws.session_windows(data, key="k", time="t", gap=3, aggs=AGGS)
    order = [("k", "ascending"), ("session_start", "ascending")]
    assert got.sort_by(order) == want.sort_by(order)
    check(got, rows, ("session_start", "session_end"))


def test_a_udf_receives_decimal_values_in_event_time_order() -> None:
    """A udf's inputs are a collect_all of its columns: decimals reach it as decimals."""
    rows = [("a", 2, 150), ("a", 1, -25), ("a", 3, None)]

    def spread(v: pa.Array) -> Decimal:
        values = [x for x in v.to_pylist() if x is not None]
        assert v.type == TYPE
        assert v.to_pylist() == [Decimal("-0.25"), Decimal("1.50"), None]
        return Decimal(max(values) - min(values))

    udf = agg.udf(spread, "v", returns=pa.decimal128(11, 2))
    complete = ws.session_windows(table(rows), key="k", time="t", gap=5, aggs=[udf])
    assert complete["udf_v"].to_pylist() == [Decimal("1.75")]
    p = ws.SessionWindowProcessor(key="k", time="t", gap=5, grace=0, aggs=[udf])
    assert p.process(table(rows)).num_rows == 0
    assert p.flush()["udf_v"].to_pylist() == [Decimal("1.75")]
