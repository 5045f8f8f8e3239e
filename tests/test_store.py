"""The session store from Python: every fact of docs/semantics.md section 3, errors, and a model
test."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import windowstore
from windowstore import InvalidWindowSpec, SessionStore, WindowStoreError


def windows(sessions: list[tuple[int, int, bytes]]) -> list[tuple[int, int]]:
    return [(s, e) for s, e, _ in sessions]


def test_default_segment_interval() -> None:
    assert SessionStore(1000).segment_interval == 500
    assert SessionStore(1).segment_interval == 1
    assert SessionStore(1000, segment_interval=7).segment_interval == 7


def test_segments_are_indexed_by_end() -> None:
    store = SessionStore(10**9, segment_interval=1000)
    for end in (0, 500, 1000, 2000):
        store.put(b"k", 0, end, b"v")
    assert store.metrics()["segments"] == 3


def test_find_sessions_bounds() -> None:
    store = SessionStore(10_000)
    for start, end in ((0, 99), (101, 200), (201, 300), (301, 400)):
        store.put("a", start, end, b"1")
    assert windows(store.find_sessions("a", 150, 300)) == [(101, 200), (201, 300)]


def test_find_sessions_across_segments_and_backwards() -> None:
    store = SessionStore(10_000)
    for start, end in ((10, 10), (500, 1000), (1500, 2000), (2500, 3000)):
        store.put("a", start, end, b"1")
    assert windows(store.find_sessions("a", 0, 1000)) == [(10, 10), (500, 1000)]
    assert windows(store.find_sessions("a", 400, 600)) == [(500, 1000)]
    assert windows(store.backward_find_sessions("a", 0, 1000)) == [(500, 1000), (10, 10)]


def test_fetch_session_exact_key_bytes() -> None:
    store = SessionStore(10_000)
    for key, start, end in (("aa", 0, 3), ("aa", 1, 4), ("a", 0, 4), ("aaa", 0, 4)):
        store.put(key, start, end, f"{key}{start}{end}".encode())
    assert store.fetch_session("aa", 0, 4) is None
    store.put("aa", 0, 4, b"hit")
    assert store.fetch_session("aa", 0, 4) == b"hit"
    assert store.fetch_session(b"aa", 0, 4) == b"hit", "str keys are their UTF-8 bytes"
    assert store.fetch_session("a", 0, 4) == b"a04"


def test_time_range_scan_by_end() -> None:
    store = SessionStore(10_000)
    store.put("a", 0, 0, b"")
    store.put("b", 10, 20, b"")
    store.put("c", 30, 40, b"")

    def keys(lo: int, hi: int) -> list[bytes]:
        return [k for k, _, _, _ in store.find_sessions_by_end(lo, hi)]

    assert keys(0, 20) == [b"a", b"b"]
    assert keys(0, 19) == [b"a"]
    assert keys(1, 20) == [b"b"]
    assert keys(19, 41) == [b"b", b"c"]


def test_fetch_range_and_arrow_export() -> None:
    store = SessionStore(10_000)
    store.put("b", 5, 6, b"x")
    store.put("a", 7, 9, b"y")
    store.put("a", 1, 2, b"z")
    store.put("c", 0, 0, b"w")
    assert store.fetch_range("a", "b") == [
        (b"a", 1, 2, b"z"),
        (b"a", 7, 9, b"y"),
        (b"b", 5, 6, b"x"),
    ]
    assert store.fetch_range("c", "a") == []
    table = store.to_arrow()
    assert isinstance(table, pa.Table)
    assert table.column_names == ["key", "start", "end", "value"]
    assert table.column("key").to_pylist() == [b"a", b"a", b"b", b"c"]


def test_put_outcomes_and_remove_of_missing() -> None:
    store = SessionStore(100)
    assert store.put("k", 0, 5, b"x") == "inserted"
    assert store.put("k", 0, 5, b"yy") == "updated"
    assert store.remove("k", 0, 6) is False
    assert store.remove("missing", 0, 5) is False
    assert store.remove("k", 0, 5) is True
    assert store.fetch("k") == []
    m = store.metrics()
    assert (m["live_sessions"], m["puts"], m["removes"]) == (0, 2, 1)


def test_expiry_and_expired_puts() -> None:
    store = SessionStore(100, segment_interval=10)
    store.put("k", 0, 0, b"old")
    store.put("k", 0, 99, b"edge")
    assert len(store.fetch("k")) == 2
    store.put("k", 100, 100, b"new")
    assert windows(store.fetch("k")) == [(0, 99), (100, 100)]
    assert store.put("k", 0, 0, b"again") == "expired"
    assert store.metrics()["expired_puts"] == 1
    assert store.store_time == 100
    store.put("k", 109, 109, b"")
    assert store.metrics()["expired_sessions"] == 1, "segment 0 dropped whole"


def test_extreme_times() -> None:
    imin, imax = -(2**63), 2**63 - 1
    store = SessionStore(imax)
    store.put("k", imin, imin, b"")
    store.put("k", -5, -1, b"")
    assert windows(store.fetch("k")) == [(-5, -1)]
    store.put("k", imax, imax, b"")
    assert windows(store.fetch("k")) == [(imax, imax)]
    with pytest.raises(InvalidWindowSpec, match="end"):
        store.put("k", 0, 2**63, b"")


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"retention": 0}, "retention"),
        ({"retention": -1}, "retention"),
        ({"retention": 10, "segment_interval": 0}, "segment_interval"),
        ({"retention": 10, "segment_interval": -3}, "segment_interval"),
    ],
)
def test_bad_parameters(kwargs: dict[str, int], parameter: str) -> None:
    with pytest.raises(InvalidWindowSpec, match=parameter) as info:
        SessionStore(**kwargs)
    assert info.value.parameter == parameter
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, WindowStoreError)


@pytest.mark.parametrize("big", [2**63, 2**64, -(2**63) - 1])
def test_integers_beyond_64_bits_name_the_parameter(big: int) -> None:
    for kwargs, parameter in (
        ({"retention": big}, "retention"),
        ({"retention": 10, "segment_interval": big}, "segment_interval"),
    ):
        with pytest.raises(InvalidWindowSpec, match="does not fit 64-bit") as info:
            SessionStore(**kwargs)
        assert info.value.parameter == parameter
    store = SessionStore(10)
    for args, parameter in (((big, 0), "start"), ((0, big), "end")):
        for method in (store.put, store.remove, store.fetch_session):
            call_args = (b"k", *args, b"v") if method == store.put else (b"k", *args)
            with pytest.raises(InvalidWindowSpec) as info:
                method(*call_args)
            assert info.value.parameter == parameter
    with pytest.raises(TypeError, match="start must be an int, not float"):
        store.put(b"k", 1.5, 2, b"v")  # type: ignore[arg-type]


def test_lookup_bounds_beyond_64_bits_are_clamped() -> None:
    store = SessionStore(2**62)
    store.put("k", -5, 7, b"v")
    everything = [(-5, 7, b"v")]
    assert store.find_sessions("k", -(2**70), 2**70) == everything
    assert store.backward_find_sessions("k", -(2**64), 2**64) == everything
    assert store.find_sessions_by_end(-(2**64), 2**64) == [(b"k", -5, 7, b"v")]
    assert store.find_sessions("k", 2**64, 2**64) == []


def test_start_after_end_is_refused() -> None:
    with pytest.raises(InvalidWindowSpec, match="after its end"):
        SessionStore(10).put("k", 5, 4, b"")


@pytest.mark.parametrize("key", [1, 2.5, None, ["a"], bytearray(b"a")])
def test_wrong_key_type(key: object) -> None:
    store = SessionStore(10)
    with pytest.raises(TypeError, match="key must be bytes or str"):
        store.put(key, 0, 0, b"")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key must be bytes or str"):
        store.find_sessions(key, 0, 0)  # type: ignore[arg-type]


def test_public_api_and_no_pyspark_import() -> None:
    import subprocess
    import sys

    assert set(windowstore.__all__) >= {"SessionStore", "WindowStoreError", "InvalidWindowSpec"}
    # In a fresh interpreter: this test session imports pyspark for the Spark tests.
    code = "import sys, windowstore; assert 'pyspark' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# A model: a dict of (key, start, end) -> value that applies the retention rule on every read.
keys = st.sampled_from([b"", b"a", b"aa", b"b", b"\xff"])
times = st.one_of(st.integers(-40, 160), st.sampled_from([-(2**63), 2**63 - 1]))
ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), keys, times, times, st.binary(max_size=4)),
        st.tuples(st.just("remove"), keys, times, times),
        st.tuples(st.just("find"), keys, times, times),
        st.tuples(st.just("by_end"), times, times),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(retention=st.integers(1, 120), interval=st.one_of(st.none(), st.integers(1, 60)), ops=ops)
def test_store_matches_model(retention: int, interval: int | None, ops: list[tuple]) -> None:  # type: ignore[type-arg]
    store = SessionStore(retention, segment_interval=interval)
    model: dict[tuple[bytes, int, int], bytes] = {}
    store_time: int | None = None

    def live() -> dict[tuple[bytes, int, int], bytes]:
        low = -(2**64) if store_time is None else store_time - retention + 1
        return {k: v for k, v in model.items() if k[2] >= low}

    for op in ops:
        if op[0] == "put":
            _, key, a, b, value = op
            start, end = min(a, b), max(a, b)
            store_time = end if store_time is None else max(store_time, end)
            outcome = store.put(key, start, end, value)
            if end < store_time - retention + 1:
                assert outcome == "expired"
            else:
                assert outcome == ("updated" if (key, start, end) in live() else "inserted")
                model[(key, start, end)] = value
        elif op[0] == "remove":
            _, key, a, b = op
            start, end = min(a, b), max(a, b)
            present = (key, start, end) in live()
            assert store.remove(key, start, end) is present
            model.pop((key, start, end), None)
        elif op[0] == "find":
            _, key, earliest_end, latest_start = op
            want = sorted(
                ((s, e, v) for (k, s, e), v in live().items() if k == key),
                key=lambda r: (r[1], r[0]),
            )
            want = [r for r in want if r[1] >= earliest_end and r[0] <= latest_start]
            assert store.find_sessions(key, earliest_end, latest_start) == want
        else:
            _, lo, hi = op
            want_keyed = sorted(
                ((k, s, e, v) for (k, s, e), v in live().items() if lo <= e <= hi),
                key=lambda r: (r[2], r[1], r[0]),
            )
            assert store.find_sessions_by_end(lo, hi) == want_keyed
