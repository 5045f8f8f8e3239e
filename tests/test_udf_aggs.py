"""User-defined aggregates (``agg.udf``), ``count_distinct`` and ``collect_all`` against a
brute-force model of the windows (per key, records in time order, cut at gaps), in complete mode
and in the streaming processors; a raising function changes nothing; restore needs the aggs."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from windowstore import (
    AggregateFunctionError,
    InvalidWindowSpec,
    SchemaError,
    SessionOverflowError,
    SessionWindowProcessor,
    SlidingWindowProcessor,
    agg,
    session_windows,
    sliding_windows,
)

GAP = 10
D = 10


def table(seed: int, rows: int = 120) -> pa.Table:
    """Random records of 4 keys: int and float values with nulls, -0.0, 0.0 and NaN, strings."""
    rng = random.Random(seed)
    ts = [rng.randrange(0, 300) for _ in range(rows)]
    floats = [rng.choice([None, -0.0, 0.0, math.nan, 1.5, 2.5, -3.0]) for _ in range(rows)]
    return pa.table(
        {
            "k": [rng.choice("abcd") for _ in range(rows)],
            "ts": pa.array(ts, pa.int64()),
            "x": [rng.choice([None, *range(-3, 6)]) for _ in range(rows)],
            "f": pa.array(floats, pa.float64()),
            "s": [rng.choice([None, "u", "v", "w", ""]) for _ in range(rows)],
        }
    )


def session_rows(t: pa.Table) -> dict[tuple[str, int, int], list[int]]:
    """The model's sessions: per key, rows in (time, row) order, cut where the next time is more
    than GAP after the previous one; each window's rows in that order."""
    by_key: dict[str, list[int]] = {}
    for i, k in enumerate(t["k"].to_pylist()):
        by_key.setdefault(k, []).append(i)
    ts = t["ts"].to_pylist()
    out: dict[tuple[str, int, int], list[int]] = {}
    for k, idx in by_key.items():
        idx.sort(key=lambda i: (ts[i], i))
        run = [idx[0]]
        for i in idx[1:]:
            if ts[i] - ts[run[-1]] > GAP:
                out[(k, ts[run[0]], ts[run[-1]])] = run
                run = []
            run.append(i)
        out[(k, ts[run[0]], ts[run[-1]])] = run
    return out


def sliding_rows(t: pa.Table, windows: pa.Table) -> dict[tuple[str, int, int], list[int]]:
    """The rows of each output sliding window, by the definition (key, start <= t <= end)."""
    ks, ts = t["k"].to_pylist(), t["ts"].to_pylist()
    out = {}
    for w in windows.to_pylist():
        rows = [
            i
            for i in range(t.num_rows)
            if ks[i] == w["k"] and w["window_start"] <= ts[i] <= w["window_end"]
        ]
        rows.sort(key=lambda i: (ts[i], i))
        out[(w["k"], w["window_start"], w["window_end"])] = rows
    return out


def distinct(values: list[Any]) -> int:
    """count_distinct's definition: non-null values, -0.0 == 0.0, one NaN."""
    seen = set()
    for v in values:
        if v is None:
            continue
        seen.add(
            "nan"
            if isinstance(v, float) and math.isnan(v)
            else (v + 0.0 if isinstance(v, float) else v)
        )
    return len(seen)


def weighted(x: pa.Array, f: pa.Array) -> float | None:
    """A two-column function that needs the lists aligned record by record, nulls included."""
    pairs = [
        (a, b)
        for a, b in zip(x.to_pylist(), f.to_pylist(), strict=True)
        if a is not None and b is not None and not math.isnan(b)
    ]
    return sum(a * b for a, b in pairs) if pairs else None


def signature(x: pa.Array) -> str:
    """Order-sensitive and null-sensitive: the function sees every record in event-time order."""
    return ",".join("-" if v is None else str(v) for v in x.to_pylist())


AGGS = [
    agg.count(),
    agg.udf(weighted, "x", "f", returns=pa.float64()).alias("weighted"),
    agg.udf(signature, "x", returns=pa.string()),
    agg.count_distinct("f"),
    agg.count_distinct("s"),
    agg.count_distinct("x"),
    agg.collect_all("s"),
]


def check_windows(
    t: pa.Table, out: pa.Table, rows: dict[tuple[str, int, int], list[int]], start: str, end: str
) -> None:
    assert out.column_names[-7:] == [
        "count",
        "weighted",
        "udf_x",
        "count_distinct_f",
        "count_distinct_s",
        "count_distinct_x",
        "collect_all_s",
    ]
    assert out.schema.field("weighted").type == pa.float64()
    assert out.schema.field("count_distinct_f").type == pa.int64()
    x, f, s = t["x"].to_pylist(), t["f"].to_pylist(), t["s"].to_pylist()
    got = {(w["k"], w[start], w[end]): w for w in out.to_pylist()}
    assert set(got) == set(rows)
    for window, idx in rows.items():
        w = got[window]
        assert w["count"] == len(idx)
        want_weighted = weighted(
            pa.array([x[i] for i in idx], pa.int64()), pa.array([f[i] for i in idx], pa.float64())
        )
        assert w["weighted"] == want_weighted, window
        assert w["udf_x"] == ",".join("-" if x[i] is None else str(x[i]) for i in idx)
        assert w["count_distinct_f"] == distinct([f[i] for i in idx])
        assert w["count_distinct_s"] == distinct([s[i] for i in idx])
        assert w["count_distinct_x"] == distinct([x[i] for i in idx])
        assert w["collect_all_s"] == [s[i] for i in idx]


@pytest.mark.parametrize("seed", range(12))
def test_complete_sessions_equal_the_model(seed: int) -> None:
    t = table(seed)
    out = session_windows(t, key="k", time="ts", gap=GAP, aggs=AGGS)
    check_windows(t, out, session_rows(t), "session_start", "session_end")


@pytest.mark.parametrize("seed", range(8))
def test_complete_sliding_windows_equal_the_model(seed: int) -> None:
    t = table(seed, rows=60)
    out = sliding_windows(t, key="k", time="ts", time_difference=D, aggs=AGGS)
    assert out.num_rows > 0
    check_windows(t, out, sliding_rows(t, out), "window_start", "window_end")


def in_chunks(t: pa.Table, seed: int) -> list[pa.Table]:
    """``t`` in time order (ties by row) cut into random chunks."""
    order = sorted(range(t.num_rows), key=lambda i: (t["ts"][i].as_py(), i))
    t = t.take(order)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, t.num_rows), 6))
    return [t.slice(a, b - a) for a, b in zip([0, *cuts], [*cuts, t.num_rows], strict=True)]


@pytest.mark.parametrize("seed", range(6))
def test_streaming_sessions_equal_complete_mode_through_a_snapshot(seed: int) -> None:
    t = table(seed)
    chunks = in_chunks(t, seed)
    p = SessionWindowProcessor(key="k", time="ts", gap=GAP, grace=0, aggs=AGGS)
    outs = [p.process(c) for c in chunks[:3]]
    p = SessionWindowProcessor.from_bytes(p.to_bytes(), aggs=AGGS)
    outs += [p.process(c) for c in chunks[3:]]
    outs.append(p.flush())
    streamed = pa.concat_tables(outs)
    ordered = t.take(sorted(range(t.num_rows), key=lambda i: (t["ts"][i].as_py(), i)))
    check_windows(ordered, streamed, session_rows(ordered), "session_start", "session_end")


def test_streaming_sliding_windows_equal_complete_mode() -> None:
    t = table(3, rows=60)
    p = SlidingWindowProcessor(key="k", time="ts", time_difference=D, grace=0, aggs=AGGS)
    streamed = pa.concat_tables([*(p.process(c) for c in in_chunks(t, 3)), p.flush()])
    complete = sliding_windows(t, key="k", time="ts", time_difference=D, aggs=AGGS)
    by = [("k", "ascending"), ("window_start", "ascending")]
    assert streamed.sort_by(by).equals(complete.sort_by(by))


def test_updates_mode_gives_the_function_the_window_so_far() -> None:
    p = SessionWindowProcessor(
        key="k",
        time="ts",
        gap=GAP,
        grace=0,
        emit="updates",
        aggs=[agg.udf(signature, "x", returns=pa.string())],
    )
    out = p.process(pa.table({"k": ["a", "a"], "ts": [0, 5], "x": [1, None]}))
    assert out.column("udf_x").to_pylist()[-1] == "1,-"
    out = p.process(pa.table({"k": ["a"], "ts": [3], "x": [7]}))
    assert out.column("udf_x").to_pylist()[-1] == "1,7,-"


def boom(x: pa.Array) -> int:
    if 13 in x.to_pylist():
        raise ZeroDivisionError("thirteen")
    return len(x)


@pytest.mark.parametrize("call", ["process", "advance", "flush"])
def test_a_raising_function_changes_nothing(call: str) -> None:
    aggs = [agg.count(), agg.udf(boom, "x", returns=pa.int64()).alias("n")]
    p = SessionWindowProcessor(key="k", time="ts", gap=GAP, grace=0, aggs=aggs)
    assert p.process(pa.table({"k": ["a", "b"], "ts": [0, 1], "x": [13, 1]})).num_rows == 0
    before = p.to_bytes()
    calls: dict[str, Callable[[], Any]] = {
        "process": lambda: p.process(pa.table({"k": ["c"], "ts": [100], "x": [2]})),
        "advance": lambda: p.advance(100),
        "flush": p.flush,
    }
    with pytest.raises(AggregateFunctionError) as e:
        calls[call]()
    assert e.value.aggregate == "n"
    assert e.value.key == {"k": "a"}
    assert (e.value.start, e.value.end) == (0, 0)
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert "'n'" in str(e.value)
    assert "thirteen" in str(e.value)
    assert p.to_bytes() == before
    assert p.metrics()["emitted"] == 0


def test_a_value_of_the_wrong_type_is_refused_and_changes_nothing() -> None:
    aggs = [agg.udf(lambda x: "many", "x", returns=pa.int64()).alias("n")]
    p = SessionWindowProcessor(key="k", time="ts", gap=GAP, grace=0, aggs=aggs)
    p.process(pa.table({"k": ["a"], "ts": [0], "x": [1]}))
    before = p.to_bytes()
    with pytest.raises(AggregateFunctionError, match="not of int64"):
        p.advance(100)
    assert p.to_bytes() == before


def test_a_restore_needs_the_same_aggs() -> None:
    aggs = [agg.udf(len, "x", returns=pa.int64()).alias("n")]
    p = SessionWindowProcessor(key="k", time="ts", gap=GAP, grace=0, aggs=aggs)
    p.process(pa.table({"k": ["a", "a"], "ts": [0, 4], "x": [1, 2]}))
    data = p.to_bytes()
    bare = SessionWindowProcessor.from_bytes(data)
    with pytest.raises(InvalidWindowSpec) as info:
        bare.advance(100)
    assert str(info.value) == (
        "invalid aggs: the snapshot was taken with user-defined aggregates (agg.udf) at "
        "aggs[0] (over 1 column), and a snapshot holds no Python function: restore it with "
        "restore(..., aggs=[...]) / from_bytes(..., aggs=[...]) given the same aggs it was "
        "made with, udfs included"
    )
    assert bare.to_bytes() == data
    elsewhere = [agg.count(), agg.udf(len, "x", returns=pa.int64()).alias("n")]
    with pytest.raises(InvalidWindowSpec, match=r"at aggs\[0\].*have them at aggs\[1\]"):
        SessionWindowProcessor.from_bytes(data, aggs=elsewhere).advance(100)
    restored = SessionWindowProcessor.from_bytes(data, aggs=aggs)
    assert restored.advance(100).to_pylist() == [
        {"k": "a", "session_start": 0, "session_end": 4, "n": 2}
    ]


def test_max_size_bounds_what_the_function_sees() -> None:
    newest = agg.udf(signature, "x", returns=pa.string(), max_size=2).alias("newest")
    failing = agg.udf(signature, "x", returns=pa.string(), max_size=2, overflow="fail")
    t = pa.table({"k": ["a"] * 3, "ts": [0, 1, 2], "x": [1, None, 3]})
    assert session_windows(t, key="k", time="ts", gap=GAP, aggs=[newest])["newest"].to_pylist() == [
        "-,3"
    ]
    with pytest.raises(SessionOverflowError, match="max_size 2"):
        session_windows(t, key="k", time="ts", gap=GAP, aggs=[failing])


def test_udf_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="callable"):
        agg.udf("len", "x", returns=pa.int64())  # type: ignore[arg-type]
    with pytest.raises(InvalidWindowSpec, match="at least one column"):
        agg.udf(len, returns=pa.int64())
    with pytest.raises(InvalidWindowSpec, match="returns"):
        agg.udf(len, "x", returns="int64")


def test_count_distinct_of_an_unsupported_type_names_the_column() -> None:
    t = pa.table({"k": ["a"], "ts": [0], "l": [[1]]})
    with pytest.raises(SchemaError, match=r'column "l"'):
        session_windows(t, key="k", time="ts", gap=GAP, aggs=[agg.count_distinct("l")])


def test_count_distinct_agrees_with_pyarrow_on_strings() -> None:
    t = table(5, rows=400)
    out = session_windows(t, key="k", time="ts", gap=1000, aggs=[agg.count_distinct("s")])
    for w in out.to_pylist():
        rows = t.filter(pc.equal(t["k"], w["k"]))
        assert w["count_distinct_s"] == pc.count_distinct(rows["s"], mode="only_valid").as_py()


UDF = agg.udf(len, "x", returns=pa.int64())
ROWS = pa.table({"k": ["a", "a"], "ts": [0, 4], "x": [1, 2]})


Emit = Literal["final", "updates", "changes"]


def session_processor(aggs: list[agg.Agg], emit: Emit = "final") -> SessionWindowProcessor:
    return SessionWindowProcessor(key="k", time="ts", gap=GAP, grace=0, emit=emit, aggs=aggs)


def sliding_processor(aggs: list[agg.Agg], emit: Emit = "final") -> SlidingWindowProcessor:
    return SlidingWindowProcessor(
        key="k", time="ts", time_difference=D, grace=0, emit=emit, aggs=aggs
    )


def complete_sessions(aggs: list[agg.Agg]) -> pa.Table:
    return session_windows(ROWS, key="k", time="ts", gap=GAP, aggs=aggs)


def complete_sliding(aggs: list[agg.Agg]) -> pa.Table:
    return sliding_windows(ROWS, key="k", time="ts", time_difference=D, aggs=aggs)


@pytest.mark.parametrize(
    "aggs",
    [
        pytest.param([UDF, UDF], id="two-default-names"),
        pytest.param([UDF.alias("n"), agg.count().alias("n")], id="udf-then-builtin"),
        pytest.param([agg.sum("x"), UDF.alias("sum_x")], id="builtin-then-udf"),
    ],
)
@pytest.mark.parametrize("make", [session_processor, sliding_processor])
def test_a_udf_named_as_another_aggregate_is_refused_by_the_processors(
    aggs: list[agg.Agg], make: Callable[[list[agg.Agg]], Any]
) -> None:
    with pytest.raises(InvalidWindowSpec, match="duplicate output name") as e:
        make(aggs)
    assert e.value.parameter == "aggs"


@pytest.mark.parametrize(
    ("aggs", "column"),
    [
        ([UDF, UDF], "udf_x"),
        ([UDF.alias("k")], "k"),
        ([UDF.alias("count"), agg.count()], "count"),
        ([UDF.alias("session_start")], "session_start"),
        ([UDF.alias("session_end")], "session_end"),
    ],
)
def test_complete_sessions_refuse_a_udf_name_taken(aggs: list[agg.Agg], column: str) -> None:
    with pytest.raises(InvalidWindowSpec, match=f'"{column}"') as e:
        complete_sessions(aggs)
    assert e.value.parameter == "aggs"


@pytest.mark.parametrize("column", ["k", "window_start", "window_end", "window_time"])
def test_complete_sliding_windows_refuse_a_udf_named_as_a_column(column: str) -> None:
    with pytest.raises(InvalidWindowSpec, match=f'output column "{column}" appears twice') as e:
        complete_sliding([UDF.alias(column)])
    assert e.value.parameter == "aggs"


@pytest.mark.parametrize(
    ("make", "emit", "column"),
    [
        (session_processor, "final", "k"),
        (session_processor, "final", "session_end"),
        (session_processor, "changes", "op"),
        (sliding_processor, "final", "window_time"),
        (sliding_processor, "changes", "op"),
    ],
)
def test_a_processor_refuses_a_udf_named_as_a_column_and_changes_nothing(
    make: Callable[[list[agg.Agg], Emit], Any], emit: Emit, column: str
) -> None:
    """As for a built-in so named, the first call refuses it (the columns are known once the
    input is bound), naming aggs, and the processor stays as it was."""
    p = make([UDF.alias(column)], emit)
    before = p.to_bytes()
    with pytest.raises(InvalidWindowSpec, match=f'output column "{column}" appears twice') as e:
        p.process(ROWS)
    assert e.value.parameter == "aggs"
    assert p.to_bytes() == before


def test_a_restore_refuses_udfs_named_alike() -> None:
    p = session_processor([UDF])
    p.process(ROWS)
    data = p.to_bytes()
    restored = SessionWindowProcessor.from_bytes(data, aggs=[UDF.alias("k")])
    with pytest.raises(InvalidWindowSpec, match='output column "k" appears twice'):
        restored.advance(100)
    assert restored.to_bytes() == data


def half(x: pa.Array) -> float:
    return len(x) / 2


@pytest.mark.parametrize("call", ["process", "advance"])
def test_a_float_with_a_fraction_is_not_truncated_into_an_integer(call: str) -> None:
    """1.5 into int64 fails the call (pyarrow's pa.array would give 1), changing nothing."""
    aggs = [agg.udf(half, "x", returns=pa.int64()).alias("n")]
    p = session_processor(aggs)
    p.process(pa.table({"k": ["a", "a", "a"], "ts": [0, 4, 8], "x": [1, 2, 3]}))
    before = p.to_bytes()
    calls: dict[str, Callable[[], Any]] = {
        "process": lambda: p.process(pa.table({"k": ["b"], "ts": [100], "x": [1]})),
        "advance": lambda: p.advance(100),
    }
    with pytest.raises(AggregateFunctionError, match=r"not of int64 \(1\.5") as e:
        calls[call]()
    assert e.value.aggregate == "n"
    assert (e.value.key, e.value.start, e.value.end) == ({"k": "a"}, 0, 8)
    assert p.to_bytes() == before
    # Complete mode: b's 1.5 is refused, naming b (a's 1.0 is whole).
    t = pa.table({"k": ["a", "a", "b", "b", "b"], "ts": [0, 4, 0, 4, 8], "x": [1, 2, 3, 4, 5]})
    with pytest.raises(AggregateFunctionError, match=r"not of int64 \(1\.5") as e:
        session_windows(t, key="k", time="ts", gap=GAP, aggs=aggs)
    assert e.value.key == {"k": "b"}


def test_whole_floats_are_taken_by_an_integer_type() -> None:
    """pyarrow's safe cast takes 2.0 into int64: so does a udf's output."""
    t = pa.table({"k": ["a", "a", "b", "b", "b", "b"], "ts": [0, 4, 0, 1, 2, 3], "x": [0] * 6})
    out = session_windows(
        t, key="k", time="ts", gap=GAP, aggs=[agg.udf(half, "x", returns=pa.int8())]
    )
    assert out.schema.field("udf_x").type == pa.int8()
    by_key = dict(zip(out["k"].to_pylist(), out["udf_x"].to_pylist(), strict=True))
    assert by_key == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("value", "returns"),
    [
        (1.5, pa.int64()),
        (-0.5, pa.uint8()),
        (Decimal("1.5"), pa.int64()),
        (datetime(2024, 1, 1, 0, 0, 0, 5), pa.timestamp("s")),
        (timedelta(milliseconds=1), pa.duration("s")),
        (time(0, 0, 0, 5), pa.time32("ms")),
        (1.5, pa.timestamp("s")),
        ([1, 1.5], pa.list_(pa.int64())),
        ({"n": 2.5}, pa.struct([("n", pa.int32())])),
    ],
)
def test_a_value_the_type_cannot_hold_exactly_fails(value: Any, returns: pa.DataType) -> None:
    with pytest.raises(AggregateFunctionError, match=f"not of {re.escape(str(returns))}"):
        complete_sessions([agg.udf(lambda x: value, "x", returns=returns)])


@pytest.mark.parametrize(
    ("value", "returns"),
    [
        (2.0, pa.int64()),
        (Decimal("2"), pa.int16()),
        (Decimal("2.50"), pa.decimal128(5, 1)),
        (7, pa.decimal128(5, 1)),
        (datetime(2024, 1, 1, 0, 0, 1), pa.timestamp("s")),
        (timedelta(seconds=3), pa.duration("ms")),
        (3, pa.timestamp("ms")),
        (0.1, pa.float32()),
        ([1, 2.0, None], pa.list_(pa.int64())),
        ({"n": 2.0, "s": "u"}, pa.struct([("n", pa.int32()), ("s", pa.string())])),
        (2**64 - 1, pa.uint64()),
    ],
)
def test_a_value_the_type_holds_exactly_is_taken(value: Any, returns: pa.DataType) -> None:
    out = complete_sessions([agg.udf(lambda x: value, "x", returns=returns)])
    assert out["udf_x"].to_pylist() == pa.array([value], returns).to_pylist()
