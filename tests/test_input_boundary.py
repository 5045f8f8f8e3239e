"""The input boundary from Python: dictionary-encoded columns, integer time columns of every
type, batches whose schema drifts in ways that do not matter, null-typed and duplicate columns,
huge duration gaps, and arguments beyond 64 bits or of numpy types."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from windowstore import (
    InvalidWindowSpec,
    SchemaError,
    SessionWindowProcessor,
    SlidingWindowProcessor,
    agg,
    session_windows,
    sliding_windows,
)
from windowstore._durations import to_duration

Processor = SessionWindowProcessor | SlidingWindowProcessor


def session(**kwargs: Any) -> SessionWindowProcessor:
    return SessionWindowProcessor(key="k", time="ts", gap=10, grace=0, **kwargs)


def sliding(**kwargs: Any) -> SlidingWindowProcessor:
    return SlidingWindowProcessor(key="k", time="ts", time_difference=10, grace=0, **kwargs)


PROCESSORS: list[Callable[..., Processor]] = [session, sliding]


def stream(make: Callable[..., Processor], batches: list[pa.Table], **kwargs: Any) -> pa.Table:
    """Every window of a processor fed ``batches`` one call each, then flushed."""
    p = make(**kwargs)
    out = [p.process(b) for b in batches]
    out.append(p.flush())
    return pa.concat_tables([t for t in out if t.num_columns])


def complete(make: Callable[..., Processor], table: pa.Table, **kwargs: Any) -> pa.Table:
    if make is session:
        return session_windows(table, key="k", time="ts", gap=10, **kwargs)
    return sliding_windows(table, key="k", time="ts", time_difference=10, **kwargs)


def rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def dict_encode(values: list[Any], index: pa.DataType | None = None) -> pa.Array:
    encoded = pc.dictionary_encode(pa.array(values))
    return encoded.cast(pa.dictionary(index or pa.int32(), encoded.type.value_type))


# Dictionary-encoded columns.


@pytest.mark.parametrize("make", PROCESSORS)
def test_the_issue_repro_dictionary_keys_stream(make: Callable[..., Processor]) -> None:
    p = make()
    first = p.process(pa.table({"k": dict_encode(["a"]), "ts": [0]}))
    second = p.process(pa.table({"k": dict_encode(["b"]), "ts": [100]}))
    assert first.num_rows == 0
    assert second.schema.field("k").type == pa.string()
    assert {r["k"] for r in second.to_pylist()} == {"a"}
    assert {r["k"] for r in p.flush().to_pylist()} == {"b"}
    assert p.metrics()["rejected"] == 0


@pytest.mark.parametrize("make", PROCESSORS)
@pytest.mark.parametrize("index", [pa.int8(), pa.int16(), pa.int64(), pa.uint8(), pa.uint32()])
@pytest.mark.parametrize(
    "values",
    [["a", "b", "a"], [b"x", b"y", b"x"], [7, 8, 7], pa.array(["a", "b", "a"], pa.large_string())],
)
def test_dictionary_keys_equal_plain_keys_everywhere(
    make: Callable[..., Processor], index: pa.DataType, values: Any
) -> None:
    plain = pa.array(values)
    encoded = pc.dictionary_encode(plain).cast(pa.dictionary(index, plain.type))
    ts = [0, 5, 100]
    aggs = [agg.count()]
    expected = complete(make, pa.table({"k": plain, "ts": ts}), aggs=aggs)
    got = complete(make, pa.table({"k": encoded, "ts": ts}), aggs=aggs)
    assert got.schema == expected.schema
    assert rows(got) == rows(expected)
    batches = [pa.table({"k": encoded.slice(i, 1), "ts": ts[i : i + 1]}) for i in range(3)]
    assert rows(stream(make, batches, aggs=aggs)) == rows(expected)


@pytest.mark.parametrize("make", PROCESSORS)
def test_dictionary_and_plain_batches_mix(make: Callable[..., Processor]) -> None:
    batches = [
        pa.table({"k": dict_encode(["a"]), "ts": [0]}),
        pa.table({"k": pa.array(["a"]), "ts": [3]}),
        pa.table({"k": dict_encode(["b"], pa.int8()), "ts": [100]}),
    ]
    plain = [pa.table({"k": b["k"].cast(pa.string()), "ts": b["ts"]}) for b in batches]
    assert rows(stream(make, batches)) == rows(stream(make, plain))
    assert rows(complete(make, pa.concat_tables(plain))) == rows(stream(make, batches))


@pytest.mark.parametrize("make", PROCESSORS)
def test_dictionary_value_columns_aggregate_as_their_values(
    make: Callable[..., Processor],
) -> None:
    s = ["x", None, "w", "z"]
    n = [4, 1, None, 7]
    plain = pa.table({"k": ["a", "a", "a", "b"], "ts": [0, 2, 4, 1], "s": s, "n": n})
    encoded = plain.set_column(2, "s", dict_encode(s, pa.uint8())).set_column(
        3, "n", dict_encode(n, pa.int16())
    )
    aggs = [
        agg.min("s"),
        agg.max("s"),
        agg.first("s"),
        agg.last("s"),
        agg.collect("s"),
        agg.sum("n"),
        agg.mean("n"),
        agg.max("n"),
    ]
    expected = complete(make, plain, aggs=aggs)
    got = complete(make, encoded, aggs=aggs)
    assert got.schema == expected.schema
    assert got.schema.field("min_s").type == pa.string()
    assert got.schema.field("sum_n").type == pa.int64()
    assert rows(got) == rows(expected)
    assert rows(stream(make, [encoded], aggs=aggs)) == rows(stream(make, [plain], aggs=aggs))


# Integer time columns.

INT_TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
]


def extremes(t: pa.DataType) -> list[int]:
    if t.bit_width < 32:
        info = np.iinfo(t.to_pandas_dtype())
        lo, hi = int(info.min), int(info.max)
    else:
        lo, hi = (0 if pa.types.is_unsigned_integer(t) else -1_000_000), 1_000_000
    return [lo, lo + 3, hi - 5, hi]


@pytest.mark.parametrize("make", PROCESSORS)
@pytest.mark.parametrize("t", INT_TYPES, ids=str)
def test_integer_time_columns_give_int64_bounds(
    make: Callable[..., Processor], t: pa.DataType
) -> None:
    times = extremes(t)
    table = pa.table({"k": ["a"] * 4, "ts": pa.array(times, t)})
    reference = complete(make, pa.table({"k": ["a"] * 4, "ts": pa.array(times, pa.int64())}))
    got = complete(make, table)
    assert got.schema == reference.schema
    assert got.schema.field(1).type == pa.int64()
    assert rows(got) == rows(reference)
    streamed = stream(make, [table.slice(i, 1) for i in range(4)])
    assert rows(streamed) == rows(reference)


def test_sliding_bounds_outside_the_time_type_are_kept() -> None:
    table = pa.table({"k": ["a", "a", "a"], "ts": pa.array([0, 250, 255], pa.uint8())})
    bounds = {(r["window_start"], r["window_end"]) for r in complete(sliding, table).to_pylist()}
    assert {(-10, 0), (251, 261)} <= bounds


@pytest.mark.parametrize("make", PROCESSORS)
def test_uint64_times_beyond_int64_are_time_overflow(make: Callable[..., Processor]) -> None:
    big = [5, 2**64 - 1, 2**63]
    table = pa.table({"k": ["a"] * 3, "ts": pa.array(big, pa.uint64())})
    p = make(on_invalid="drop")
    p.process(table)
    p.flush()
    assert p.metrics()["rejected_time_overflow"] == 2
    assert p.rejected().column("ts").to_pylist() == [2**64 - 1, 2**63]
    windows, rejected = complete(make, table, on_invalid="drop", return_rejected=True)
    assert rejected.column("reason").to_pylist() == ["time_overflow"] * 2
    assert max(windows.column(2).to_pylist()) < 100


# Schema drift between batches, null-typed and duplicate columns.


@pytest.mark.parametrize("make", PROCESSORS)
def test_order_nullability_and_metadata_may_differ_between_batches(
    make: Callable[..., Processor],
) -> None:
    first = pa.table(
        {"k": ["a"], "ts": [0], "v": [1]},
        schema=pa.schema(
            [
                pa.field("k", pa.string(), nullable=False),
                pa.field("ts", pa.int64(), nullable=False),
                pa.field("v", pa.int64(), nullable=False),
            ]
        ),
    )
    drifted = pa.table(
        {"v": [None, 2], "ts": [3, 100], "k": ["a", "b"]},
        schema=pa.schema(
            [
                pa.field("v", pa.int64(), metadata={"unit": "cents"}),
                pa.field("ts", pa.int64()),
                pa.field("k", pa.string()),
            ]
        ),
    )
    same = drifted.select(["k", "ts", "v"]).cast(
        pa.schema([("k", pa.string()), ("ts", pa.int64()), ("v", pa.int64())])
    )
    aggs = [agg.count(), agg.sum("v")]
    assert rows(stream(make, [first, drifted], aggs=aggs)) == rows(
        stream(make, [first, same], aggs=aggs)
    )


@pytest.mark.parametrize("make", PROCESSORS)
def test_a_column_typed_null_reads_as_all_null(make: Callable[..., Processor]) -> None:
    first = pa.table({"k": ["a"], "ts": [0], "v": [1]})
    all_null = pa.table({"k": ["a", "b"], "ts": [2, 100], "v": [None, None]})
    assert all_null.schema.field("v").type == pa.null()
    typed = all_null.set_column(2, "v", pa.array([None, None], pa.int64()))
    aggs = [agg.count(), agg.sum("v")]
    assert rows(stream(make, [first, all_null], aggs=aggs)) == rows(
        stream(make, [first, typed], aggs=aggs)
    )
    p = make(aggs=aggs)
    p.process(first)
    p.process(pa.table({"k": [None], "ts": [5], "v": [7]}))
    rejected = p.rejected()
    assert rejected.schema.field("k").type == pa.string()
    assert rejected.column("reason").to_pylist() == ["null_key"]


@pytest.mark.parametrize("make", PROCESSORS)
def test_other_schema_changes_name_the_column(make: Callable[..., Processor]) -> None:
    p = make()
    p.process(pa.table({"k": ["a"], "ts": [0]}))
    with pytest.raises(SchemaError) as info:
        p.process(pa.table({"k": ["a"], "ts": [1], "extra": [1]}))
    assert info.value.column == "extra"
    with pytest.raises(SchemaError) as info:
        p.process(pa.table({"k": [1], "ts": [1]}))
    assert info.value.column == "k"


def duplicated() -> pa.Table:
    return pa.Table.from_arrays(
        [pa.array(["a"]), pa.array([0]), pa.array(["b"])], names=["k", "ts", "k"]
    )


@pytest.mark.parametrize("make", PROCESSORS)
def test_duplicate_column_names_are_a_schema_error(make: Callable[..., Processor]) -> None:
    with pytest.raises(SchemaError, match="twice") as info:
        make().process(duplicated())
    assert info.value.column == "k"
    with pytest.raises(SchemaError) as info:
        complete(make, duplicated())
    assert info.value.column == "k"
    p = make()
    p.process(pa.table({"k": ["a"], "ts": [0]}))
    before = p.to_bytes()
    with pytest.raises(SchemaError) as info:
        p.process(duplicated())
    assert info.value.column == "k"
    assert p.to_bytes() == before


def test_a_duration_gap_too_large_for_the_unit_is_clamped() -> None:
    table = pa.table(
        {
            "k": ["a", "a", "a"],
            "ts": pa.array([0, 5 * 10**9, 100 * 10**9], pa.timestamp("ns")),
            "g": pa.array([2**62, 1, 1], pa.duration("s")),
        }
    )
    # The clamped record at 0 reaches 10 s, so the record at 5 s joins it; 100 s is alone.
    aggs = [agg.count()]
    p = SessionWindowProcessor(
        key="k", time="ts", gap_column="g", max_gap="10s", grace=0, aggs=aggs
    )
    out = pa.concat_tables([p.process(table), p.flush()])
    assert p.metrics()["gap_clamped"] == 1
    assert p.metrics()["rejected"] == 0
    assert out.column("count").to_pylist() == [2, 1]
    done = session_windows(table, key="k", time="ts", gap_column="g", max_gap="10s", aggs=aggs)
    assert done.column("count").to_pylist() == [2, 1]


# Arguments beyond 64 bits, numpy arguments, and the key argument.


@pytest.mark.parametrize("make", PROCESSORS)
def test_advance_beyond_64_bits_names_t(make: Callable[..., Processor]) -> None:
    p = make()
    p.process(pa.table({"k": ["a"], "ts": [0]}))
    before = p.to_bytes()
    with pytest.raises(InvalidWindowSpec) as info:
        p.advance(2**64)
    assert info.value.parameter == "t"
    assert p.to_bytes() == before
    assert p.advance(np.int64(50)).num_rows == 1


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda: agg.collect("v", max_size=-1), "max_size"),
        (lambda: agg.collect("v", max_size=2**64), "max_size"),
        (lambda: agg.Agg("collect", "v", None, -1, "drop_oldest"), "max_size"),
        (lambda: SessionWindowProcessor(key="k", time="ts", gap=2**64, grace=0), "gap"),
        (lambda: to_duration(np.timedelta64("NaT"), "grace"), "grace"),
        (lambda: to_duration(np.timedelta64(1, "Y"), "gap"), "gap"),
        (lambda: to_duration(np.timedelta64(1, "ps"), "gap"), "gap"),
    ],
)
def test_out_of_range_arguments_name_the_parameter(call: Callable[[], Any], parameter: str) -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        call()
    assert info.value.parameter == parameter


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.int64(5), ("ticks", 5)),
        (np.int32(-3), ("ticks", -3)),
        (np.uint8(7), ("ticks", 7)),
        (np.timedelta64(5, "s"), ("nanos", 5 * 10**9)),
        (np.timedelta64(3, "ms"), ("nanos", 3 * 10**6)),
        (np.timedelta64(2, "W"), ("nanos", 14 * 86_400 * 10**9)),
        (np.timedelta64(2000, "ps"), ("nanos", 2)),
        (timedelta(seconds=1), ("nanos", 10**9)),
    ],
)
def test_numpy_durations_are_accepted(value: Any, expected: tuple[str, int]) -> None:
    assert to_duration(value, "gap") == expected


def test_numpy_durations_drive_a_processor() -> None:
    table = pa.table({"k": ["a", "a", "a"], "ts": [0, 5, 20]})
    for gap in (np.int64(5), np.timedelta64(5, "ms")):
        p = SessionWindowProcessor(key="k", time="ts", gap=gap, grace=np.int32(0))
        out = pa.concat_tables([p.process(table), p.flush()])
        assert out.column("session_end").to_pylist() == [5, 20]
    assert session_windows(table, key="k", time="ts", gap=np.int16(5)).num_rows == 2


@pytest.mark.parametrize("bad", [True, np.bool_(True), 1.5, np.float64(2.0)])
def test_non_integer_durations_stay_type_errors(bad: Any) -> None:
    with pytest.raises(TypeError, match="gap"):
        to_duration(bad, "gap")


@pytest.mark.parametrize("key", [5, None, b"k", [], [1], 3.5])
def test_a_bad_key_argument_is_a_clear_type_error(key: Any) -> None:
    with pytest.raises(TypeError, match="key must be a column name"):
        SessionWindowProcessor(key=key, time="ts", gap=5, grace=0)
    with pytest.raises(TypeError, match="key must be a column name"):
        sliding_windows(pa.table({"k": ["a"], "ts": [0]}), key=key, time="ts", time_difference=5)


def test_a_single_aggregation_for_aggs_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="aggs must be a list"):
        SessionWindowProcessor(key="k", time="ts", gap=5, grace=0, aggs=agg.count())  # type: ignore[arg-type]


@pytest.mark.parametrize("make", PROCESSORS)
def test_an_empty_input_is_schema_checked_as_one_with_rows(make: Callable[..., Processor]) -> None:
    p = make(idle_timeout=10, aggs=[agg.count()])
    p.process(pa.table({"k": ["a"], "ts": [0]}), now=0)
    before = p.to_bytes()
    for wrong in (pa.table({"user": pa.array([], pa.int64())}), pa.table({"user": [1]})):
        with pytest.raises(SchemaError) as info:
            p.process(wrong, now=100)  # the wall clock would advance time and emit
        assert info.value.column == "k"
        assert p.to_bytes() == before
    retyped = pa.table({"k": pa.array([], pa.int64()), "ts": pa.array([], pa.int64())})
    with pytest.raises(SchemaError, match="in this batch"):
        p.process(retyped, now=100)
    assert p.to_bytes() == before
    empty = pa.table({"k": pa.array([], pa.string()), "ts": pa.array([], pa.int64())})
    assert p.process(empty, now=100).column("k").to_pylist() == ["a"]


def nested(views: bool, key: str | None = "a") -> pa.Table:
    """Nested string columns: of string views (what polars writes) or plain strings."""
    s = pa.string_view() if views else pa.string()
    who = pa.struct([("name", s), ("n", pa.int64())])
    return pa.table(
        {
            "k": pa.array([key], s),
            "ts": [0],
            "tags": pa.array([["x", "y"]], pa.list_(s)),
            "big": pa.array([["z"]], pa.large_list(s)),
            "who": pa.array([{"name": "n", "n": 1}], who),
            "attrs": pa.array([[("p", "q")]], pa.map_(pa.string(), s)),
        }
    )


@pytest.mark.parametrize("make", PROCESSORS)
def test_nested_string_views_read_as_their_plain_types(make: Callable[..., Processor]) -> None:
    p = make(aggs=[agg.count()])
    p.process(nested(views=True, key=None))
    p.process(nested(views=False, key=None))  # the same columns, plain: batches of both mix
    assert p.process(nested(views=True)).num_rows == 0
    rejected = p.rejected()
    assert rejected.schema.field("tags").type == pa.list_(pa.string())
    assert rejected.schema.field("attrs").type == pa.map_(pa.string(), pa.string())
    plain = nested(views=False, key=None).to_pylist()[0]
    assert [{**r, "reason": None} for r in rejected.to_pylist()] == [{**plain, "reason": None}] * 2
    assert p.flush().column("count").to_pylist() == [1]


def test_polars_nested_strings_mix_with_pyarrow_batches() -> None:
    pl = pytest.importorskip("polars")
    p = session(output="records")
    p.process(pl.DataFrame({"k": ["a"], "ts": [0], "tags": [["x", "y"]]}))
    plain = pa.table({"k": ["a"], "ts": [1], "tags": pa.array([["z"]], pa.large_list(pa.string()))})
    p.process(plain)
    assert p.flush().column("tags").to_pylist() == [["x", "y"], ["z"]]
