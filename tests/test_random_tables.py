"""Random Arrow tables into every public entry point (issue 12, defect 8).

The property: every call returns, or raises a ``windowstore.WindowStoreError`` (or ``TypeError``
/ ``ValueError`` for a mistaken argument): never ``pyo3_runtime.PanicException``, never another
exception. For the streaming processors, a call that raises leaves ``to_bytes()`` byte for byte
as it was. The tables are random in every way a user's can be: column types (narrow and unsigned
integers, timestamps with time zones, dictionary, view and null-typed columns, floats, nested),
nulls, extremes of each type, several chunks, and schema drift between the calls of a processor.

Each entry point runs a few hundred cases in all by default; ``-m slow`` runs the variant with
10,000+ cases in all.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import windowstore
from windowstore import (
    SessionStore,
    SessionWindowProcessor,
    SlidingWindowProcessor,
    WindowStoreError,
    agg,
)

# --- the column types -------------------------------------------------------------------------
# The first of each list is the common case: hypothesis shrinks towards it.

INTS = [pa.int64(), pa.int32(), pa.int16(), pa.int8()]
INTS += [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
TIMESTAMPS = [
    pa.timestamp(u, tz) for tz in (None, "UTC", "Europe/Paris") for u in ("ms", "s", "us", "ns")
]
STRINGS = [pa.string(), pa.large_string(), pa.string_view()]
BINARIES = [pa.binary(), pa.large_binary(), pa.binary_view()]
DICTIONARIES = [
    pa.dictionary(pa.int32(), pa.string()),
    pa.dictionary(pa.int8(), pa.string()),
    pa.dictionary(pa.uint16(), pa.large_string()),
    pa.dictionary(pa.int32(), pa.int64()),
    pa.dictionary(pa.int16(), pa.timestamp("ms")),
]
DURATIONS = [pa.duration(u) for u in ("ms", "s", "us", "ns")]
ODD = [
    pa.null(),
    pa.bool_(),
    pa.float64(),
    pa.float32(),
    pa.date32(),
    pa.date64(),
    pa.decimal128(10, 2),
    pa.list_(pa.int64()),
    pa.struct([("a", pa.int64())]),
]


USUAL_KEYS = STRINGS + INTS + BINARIES + DICTIONARIES[:3] + TIMESTAMPS[:5]
USUAL_TIMES = INTS + TIMESTAMPS
USUAL_GAPS = INTS + DURATIONS
USUAL_VALUES = [*INTS, pa.float64(), pa.float32(), *STRINGS, *DICTIONARIES[:1]]
KEY_TYPES = st.sampled_from(USUAL_KEYS + DICTIONARIES + TIMESTAMPS + ODD)
TIME_TYPES = st.sampled_from(USUAL_TIMES + DICTIONARIES + DURATIONS + ODD + STRINGS)
GAP_TYPES = st.sampled_from(USUAL_GAPS + DICTIONARIES + ODD + STRINGS + TIMESTAMPS[:1])
VALUE_TYPES = st.sampled_from(USUAL_VALUES + ODD + DICTIONARIES + TIMESTAMPS + BINARIES)
ANY_TYPE = st.one_of(KEY_TYPES, TIME_TYPES, VALUE_TYPES)


def int_range(t: pa.DataType) -> tuple[int, int]:
    """The values of an integer-like type (timestamps, durations and dates by their storage)."""
    if pa.types.is_unsigned_integer(t):
        return 0, 2**t.bit_width - 1
    width = t.bit_width if pa.types.is_integer(t) else (32 if t == pa.date32() else 64)
    return -(2 ** (width - 1)), 2 ** (width - 1) - 1


def storage_of(t: pa.DataType) -> pa.DataType:
    """The integer type with the same bits as `t` (for `Array.view`)."""
    if pa.types.is_integer(t):
        return t
    return pa.int32() if t == pa.date32() else pa.int64()


@st.composite
def ints_of(draw: st.DrawFn, t: pa.DataType) -> int:
    """Mostly small values (windows form), sometimes the type's extremes or anything in it."""
    lo, hi = int_range(t)
    return draw(
        st.one_of(
            st.integers(max(lo, -30), min(hi, 120)),
            st.sampled_from([lo, hi, lo + 1, hi - 1]),
            st.integers(lo, hi),
        )
    )


def plain_values(t: pa.DataType) -> st.SearchStrategy[Any]:
    """Python values of a type that is not integer-like."""
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_floating(t):
        return st.floats(width=t.bit_width, allow_nan=True, allow_infinity=True)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return st.sampled_from(["a", "b", "", "ü", "a\x00b", "c" * 20])
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return st.sampled_from([b"a", b"b", b"", b"\xff\x00", b"c" * 20])
    if pa.types.is_decimal(t):
        return st.decimals(min_value=-1000, max_value=1000, places=2).map(Decimal)
    if pa.types.is_list(t):
        return st.lists(st.integers(-5, 5), max_size=3)
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({"a": st.integers(-5, 5)})
    raise AssertionError(f"no values for {t}")


def integer_like(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_duration(t)
        or pa.types.is_date(t)
    )


@st.composite
def arrays(draw: st.DrawFn, t: pa.DataType, n: int) -> pa.Array:
    """An array of `n` values of type `t`, with nulls sometimes."""
    if pa.types.is_null(t):
        return pa.nulls(n)
    nulls = draw(st.sampled_from([0.0, 0.0, 0.2, 1.0]))
    if pa.types.is_dictionary(t):
        size = draw(st.integers(1, 4))
        dictionary = draw(arrays(t.value_type, size).filter(lambda a: a.null_count == 0))
        indices = [
            None if draw(st.floats(0, 1)) < nulls else draw(st.integers(0, size - 1))
            for _ in range(n)
        ]
        return pa.DictionaryArray.from_arrays(pa.array(indices, type=t.index_type), dictionary)
    elements = ints_of(t) if integer_like(t) else plain_values(t)
    values = [None if draw(st.floats(0, 1)) < nulls else draw(elements) for _ in range(n)]
    if integer_like(t) and not pa.types.is_integer(t):
        return pa.array(values, type=storage_of(t)).view(t)
    return pa.array(values, type=t)


# --- tables and calls -------------------------------------------------------------------------

COLUMNS = ["k", "k2", "ts", "g", "v"]


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, pa.DataType]:
    """Column name -> type for the columns a spec may read: in half the cases only types the
    columns are meant to have (the calls then mostly compute), else any type."""
    if draw(st.booleans()):
        return {
            "k": draw(st.sampled_from(USUAL_KEYS)),
            "k2": draw(st.sampled_from(USUAL_KEYS)),
            "ts": draw(st.sampled_from(USUAL_TIMES)),
            "g": draw(st.sampled_from(USUAL_GAPS)),
            "v": draw(st.sampled_from(USUAL_VALUES)),
        }
    return {
        "k": draw(KEY_TYPES),
        "k2": draw(KEY_TYPES),
        "ts": draw(TIME_TYPES),
        "g": draw(GAP_TYPES),
        "v": draw(VALUE_TYPES),
    }


@st.composite
def drifted(draw: st.DrawFn, types: dict[str, pa.DataType]) -> dict[str, pa.DataType]:
    """The types of a later call: mostly the same, sometimes one column's type changed."""
    types = dict(types)
    if draw(st.integers(0, 3)) == 0:
        column = draw(st.sampled_from(COLUMNS))
        types[column] = draw(ANY_TYPE)
    return types


@st.composite
def tables(draw: st.DrawFn, types: dict[str, pa.DataType]) -> Any:
    """Arrow input of these column types: a table of 1-3 chunks, a batch or a stream; columns
    sometimes missing, reordered, duplicated, non-nullable or with field metadata."""
    names = list(COLUMNS)
    if draw(st.integers(0, 4)) == 0:
        names.remove(draw(st.sampled_from(names)))
    if draw(st.booleans()):
        names = draw(st.permutations(names))
    if names and draw(st.integers(0, 10)) == 0:
        names = [*names, draw(st.sampled_from(names))]
    fields = []
    for name in names:
        field = pa.field(name, types[name])
        if draw(st.integers(0, 6)) == 0:
            field = field.with_metadata({"origin": "test"})
        fields.append(field)
    chunks = []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, 8))
        chunks.append([draw(arrays(f.type, n)) for f in fields])
    if fields and draw(st.integers(0, 6)) == 0:
        # Non-nullable where a chunk has no null (pyarrow refuses the field otherwise).
        i = draw(st.integers(0, len(fields) - 1))
        if all(c[i].null_count == 0 for c in chunks):
            fields[i] = fields[i].with_nullable(False)
    schema = pa.schema(fields)
    batches = [pa.RecordBatch.from_arrays(c, schema=schema) for c in chunks]
    kind = draw(st.sampled_from(["table", "batch", "stream"]))
    if kind == "batch":
        return batches[0]
    if kind == "stream":
        return pa.RecordBatchReader.from_batches(schema, batches)
    return pa.Table.from_batches(batches, schema)


usual_durations = st.one_of(
    st.integers(1, 50),
    st.sampled_from(["5ms", "1s", "2 minutes", "1h30m"]),
    st.builds(timedelta, seconds=st.integers(1, 100)),
)
durations: st.SearchStrategy[Any] = st.one_of(
    usual_durations,
    usual_durations,
    st.sampled_from([0, "0s", -1, 2**63 - 1, 2**63, 2**64]),
)
time_units = st.one_of(st.none(), st.sampled_from([None, "ms", "s", "us", "ns"]))


@st.composite
def agg_lists(draw: st.DrawFn) -> list[agg.Agg]:
    """0-3 aggregations, mostly of the value column."""
    out = []
    for _ in range(draw(st.integers(0, 3))):
        column = draw(st.sampled_from(["v", "v", "v", "ts", "k"]))
        kind = draw(st.sampled_from(["count", "sum", "min", "max", "mean", "first", "last"]))
        if kind == "count":
            out.append(agg.count())
        else:
            out.append(getattr(agg, kind)(column))
        if draw(st.integers(0, 3)) == 0:
            max_size = draw(st.one_of(st.none(), st.integers(1, 3)))
            overflow: Any = draw(st.sampled_from(["drop_oldest", "drop_newest", "fail"]))
            out.append(agg.collect(column, max_size=max_size, overflow=overflow))
    # Distinct output names (a duplicate is an argument mistake of its own, tested elsewhere).
    return list({a.output_name: a for a in out}.values())


@st.composite
def common_args(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "key": draw(st.sampled_from(["k", ["k"], ["k", "k2"]])),
        "time": "ts",
        "aggs": draw(agg_lists()),
        "on_invalid": draw(st.sampled_from(["drop", "error"])),
        "time_unit": draw(time_units),
    }


@st.composite
def gap_args(draw: st.DrawFn) -> dict[str, Any]:
    gaps = {"gap": draw(durations)}
    if draw(st.booleans()):
        gaps = {"gap_column": "g", "max_gap": draw(durations)}
    if draw(st.integers(0, 2)) == 0:
        gaps["max_duration"] = draw(durations)
    return gaps


# --- the property -----------------------------------------------------------------------------

ALLOWED = (WindowStoreError, TypeError, ValueError)


def check_raised(error: BaseException) -> None:
    """Fails unless `error` is one a caller is promised (each kind fails on its own line, so
    that hypothesis reports each kind as a distinct failure)."""
    if type(error).__name__ == "PanicException":
        raise AssertionError(f"a panic reached Python: {error}") from error
    if not isinstance(error, Exception):
        raise error  # KeyboardInterrupt, or hypothesis' own control flow
    if not isinstance(error, ALLOWED):
        raise AssertionError(f"{type(error).__name__} is not allowed: {error}") from error


def call(f: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """Runs `f`: its result and None, or None and what it raised (checked by `check_raised`)."""
    try:
        return f(), None
    except BaseException as e:  # PanicException derives from BaseException
        check_raised(e)
        return None, e


def run_session_windows(data: st.DataObject) -> None:
    types = data.draw(schemas())
    args = {**data.draw(common_args()), **data.draw(gap_args())}
    table = data.draw(tables(types))
    call(lambda: windowstore.session_windows(table, **args, return_rejected=True))


def run_sliding_windows(data: st.DataObject) -> None:
    types = data.draw(schemas())
    args = {**data.draw(common_args()), "time_difference": data.draw(durations)}
    table = data.draw(tables(types))
    call(lambda: windowstore.sliding_windows(table, **args, return_rejected=True))


def processor_args(data: st.DataObject, kind: str) -> dict[str, Any]:
    args = {
        **data.draw(common_args()),
        "grace": data.draw(durations),
        "emit": data.draw(st.sampled_from(["final", "updates", "changes"])),
    }
    if kind == "session":
        args.update(data.draw(gap_args()))
        if data.draw(st.integers(0, 4)) == 0:
            args["retention"] = data.draw(durations)
    else:
        args["time_difference"] = data.draw(durations)
    return args


PROCESSOR_OPS = ["process", "process", "process", "flush", "rejected", "metrics", "bytes"]
PROCESSOR_OPS += ["advance", "next_close"]
advance_times = st.one_of(
    st.integers(-100, 200), st.sampled_from([-(2**63), 2**63 - 1, 2**63, -(2**64)])
)


def processor_call(
    data: st.DataObject, processor: Any, op: str, types: dict[str, pa.DataType]
) -> Callable[[], Any]:
    """The call `op` on `processor`, with its arguments drawn."""
    if op == "process":
        table = data.draw(tables(data.draw(drifted(types))))
        return lambda: processor.process(table)
    if op == "advance":
        t = data.draw(advance_times)
        return lambda: processor.advance(t)
    if op == "bytes":
        return lambda: type(processor).from_bytes(processor.to_bytes())
    return getattr(processor, op)  # type: ignore[no-any-return]


def run_processor(data: st.DataObject, kind: str) -> None:
    cls = SessionWindowProcessor if kind == "session" else SlidingWindowProcessor
    args = processor_args(data, kind)
    processor, error = call(lambda: cls(**args))
    if error is not None:
        return
    types = data.draw(schemas())
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(PROCESSOR_OPS))
        f = processor_call(data, processor, op, types)
        before = processor.to_bytes()
        result, error = call(f)
        if error is not None:
            changed = f"{op} raised {type(error).__name__}({error}) and changed the state"
            assert processor.to_bytes() == before, changed
        elif op == "bytes":
            assert result.to_bytes() == before, "from_bytes(to_bytes()) is another state"
            processor = result


def run_session_processor(data: st.DataObject) -> None:
    run_processor(data, "session")


def run_sliding_processor(data: st.DataObject) -> None:
    run_processor(data, "sliding")


store_ints = st.one_of(
    st.integers(-50, 200),
    st.sampled_from([-(2**63), 2**63 - 1, 2**63, -(2**63) - 1, 2**64]),
)
store_keys: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["a", "b", "", "ü"]),
    st.binary(max_size=3),
    st.sampled_from([None, 5, 1.5, bytearray(b"a")]),
)


STORE_OPS = ["put", "put", "put", "remove", "fetch_session", "find_sessions", "fetch"]
STORE_OPS += ["backward_find_sessions", "fetch_range", "find_sessions_by_end", "metrics"]
STORE_OPS += ["to_arrow", "snapshot", "restore", "damaged", "repr", "properties"]


def store_call(data: st.DataObject, store: SessionStore, op: str, path: Path) -> Callable[[], Any]:
    """The call `op` on `store`, with its arguments drawn."""
    key, a, b = data.draw(store_keys), data.draw(store_ints), data.draw(store_ints)
    if op == "put":
        value: Any = data.draw(st.one_of(st.binary(max_size=4), st.just("text")))
        return lambda: store.put(key, a, b, value)
    if op in ("remove", "fetch_session", "find_sessions", "backward_find_sessions"):
        return lambda: getattr(store, op)(key, a, b)
    if op == "fetch":
        return lambda: store.fetch(key)
    if op == "fetch_range":
        key_to = data.draw(store_keys)
        return lambda: store.fetch_range(key, key_to)
    if op == "find_sessions_by_end":
        return lambda: store.find_sessions_by_end(a, b)
    if op == "snapshot":
        return lambda: store.snapshot(path)
    if op == "restore":
        return lambda: SessionStore.restore(path)
    if op == "repr":
        return lambda: repr(store)
    if op == "properties":
        return lambda: (store.retention, store.segment_interval, store.store_time)
    return getattr(store, op)  # type: ignore[no-any-return]


def run_store(data: st.DataObject) -> None:
    retention, interval = data.draw(store_ints), data.draw(st.one_of(st.none(), store_ints))
    store, error = call(lambda: SessionStore(retention, segment_interval=interval))
    if error is not None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.snap"
        for _ in range(data.draw(st.integers(1, 12))):
            op = data.draw(st.sampled_from(STORE_OPS))
            if op != "damaged":
                call(store_call(data, store, op, path))
                continue
            blob = path.read_bytes() if path.exists() else b""
            at = data.draw(st.integers(0, max(len(blob) - 1, 0)))
            damaged = blob[:at] + bytes([blob[at] ^ 0x5A if blob else 0]) + blob[at + 1 :]
            bad = path.with_suffix(".bad")
            bad.write_bytes(damaged)
            _, error = call(partial(SessionStore.restore, bad))
            assert isinstance(error, windowstore.SnapshotError), "a damaged snapshot loaded"


ENTRY_POINTS = {
    "session_windows": run_session_windows,
    "sliding_windows": run_sliding_windows,
    "SessionWindowProcessor": run_session_processor,
    "SlidingWindowProcessor": run_sliding_processor,
    "SessionStore": run_store,
}

COMMON = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@settings(COMMON, max_examples=100)
@given(data=st.data())
def test_random_tables(entry: str, data: st.DataObject) -> None:
    ENTRY_POINTS[entry](data)


@pytest.mark.slow
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@settings(COMMON, max_examples=2_500)
@given(data=st.data())
def test_random_tables_many(entry: str, data: st.DataObject) -> None:
    ENTRY_POINTS[entry](data)
