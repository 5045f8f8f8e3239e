"""Snapshots in chunks, one state entry each, driven through an in-memory stand-in for Spark's
``StatefulProcessorHandle`` (the real state store is covered by ``test_spark_state_layout``).

Spark's RocksDB state store keeps a list state's elements merged under one RocksDB key and
reads them back as one JVM byte array; a map state's entries are keys of their own. So a
snapshot past ``max_entry_bytes`` must be map entries: the log layout's base snapshot, and with
RocksDB the whole layout's row (processing time, ``idle_timeout``), which used to fail the query.
They are entries of the log's map at negative keys, so that a restore reads the base and the
log in one pass. A checkpoint whose base snapshot is in the list state of earlier versions still
restores.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from windowstore.spark import _bucket, _bucket_log
from windowstore.spark._bucket import (
    BucketProcessor,
    join_chunks,
    read_log,
    write_chunks,
)
from windowstore.spark._bucket_args import BucketArgs
from windowstore.spark._bucket_log import LogBucketProcessor

from .test_spark_state_layout import whole_args

pytestmark = pytest.mark.spark

LIMIT = 2048


def many_calls(n: int) -> list[tuple[int, pd.DataFrame]]:
    """``n`` calls of a bucket (as ``whole_calls``, on 1,000 keys): the watermark (ms) and 2,000
    records 40 s apart, so that a call's open sessions take several chunks of LIMIT bytes."""
    rng = np.random.default_rng(5)
    keys = [f"user-{i}" for i in range(1000)]
    out = []
    for i in range(n):
        ts = (i * 40_000 + rng.integers(0, 30_000, 2000)) * 1000
        frame = pd.DataFrame(
            {"k": rng.choice(keys, 2000), "ts": ts, "x": rng.integers(0, 100, 2000)}
        )
        out.append((i * 40_000, frame))
    return out


class Value:
    def __init__(self) -> None:
        self.value: tuple[Any, ...] | None = None

    def get(self) -> tuple[Any, ...] | None:
        return self.value

    def exists(self) -> bool:
        return self.value is not None

    def update(self, value: tuple[Any, ...]) -> None:
        self.value = tuple(value)

    def clear(self) -> None:
        self.value = None


class List:
    def __init__(self) -> None:
        self.items: list[tuple[Any, ...]] = []

    def get(self) -> Iterator[tuple[Any, ...]]:
        return iter(list(self.items))

    def exists(self) -> bool:
        return bool(self.items)

    def put(self, items: list[tuple[Any, ...]]) -> None:
        self.items = [tuple(i) for i in items]

    def clear(self) -> None:
        self.items = []


class Map:
    def __init__(self) -> None:
        self.entries: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    def getValue(self, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
        return self.entries.get(tuple(key))

    def updateValue(self, key: tuple[Any, ...], value: tuple[Any, ...]) -> None:
        self.entries[tuple(key)] = tuple(value)

    def iterator(self) -> Iterator[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        return iter(list(self.entries.items()))

    def exists(self) -> bool:
        return bool(self.entries)

    def clear(self) -> None:
        self.entries.clear()


class Handle:
    """The state and timers of one grouping key (a bucket), as the processors use them."""

    def __init__(self) -> None:
        self.states: dict[str, Any] = {}
        self.timers: set[int] = set()

    def getValueState(self, name: str, schema: Any) -> Value:
        return self.states.setdefault(name, Value())  # type: ignore[no-any-return]

    def getListState(self, name: str, schema: Any) -> List:
        return self.states.setdefault(name, List())  # type: ignore[no-any-return]

    def getMapState(self, name: str, key: Any, value: Any) -> Map:
        return self.states.setdefault(name, Map())  # type: ignore[no-any-return]

    def listTimers(self) -> Iterator[int]:
        return iter(sorted(self.timers))

    def registerTimer(self, t: int) -> None:
        self.timers.add(t)

    def deleteTimer(self, t: int) -> None:
        self.timers.discard(t)


class Clock:
    def __init__(self, watermark: int, now: int) -> None:
        self.watermark, self.now = watermark, now

    def getCurrentWatermarkInMs(self) -> int:
        return self.watermark

    def getCurrentProcessingTimeInMs(self) -> int:
        return self.now


def bounded(cache_entries: int, limit: int = LIMIT, **changes: Any) -> BucketArgs:
    return dataclasses.replace(
        whole_args(cache_entries), max_entry_bytes=limit, timer_inclusive=True, **changes
    )


def call(processor: Any, handle: Handle, watermark: int, frame: pd.DataFrame) -> list[Any]:
    """One call of the bucket; its output as Arrow rows (pandas' NaN is unequal to itself)."""
    frames = processor.handleInputRows(0, iter([frame]), Clock(watermark, 10**13 + watermark))
    return [pa.Table.from_pandas(f, preserve_index=False).to_pylist() for f in frames]


def bucket(kind: type[Any], args: BucketArgs) -> tuple[Any, Handle]:
    processor, handle = kind(args), Handle()
    processor.init(handle)
    return processor, handle


LOG = "windowstore_log"


def chunks(handle: Handle) -> list[tuple[int, tuple[Any, ...]]]:
    """The snapshot chunks in the log map: (chunk number, entry), the entry's ``part`` (3),
    ``parts`` (4) and bytes (5)."""
    entries = handle.states[LOG].entries.items()
    return sorted((-1 - k[0], v) for k, v in entries if k[0] < 0)


def blob(handle: Handle) -> bytes:
    return b"".join(v[5] for _, v in chunks(handle))


@pytest.fixture(autouse=True)
def cold_workers() -> Iterator[None]:
    """No processor kept from another test."""
    _bucket_log._CACHE.clear()
    _bucket._WHOLE_CACHE.clear()
    yield
    _bucket_log._CACHE.clear()
    _bucket._WHOLE_CACHE.clear()


def test_the_base_snapshot_is_map_entries_within_the_bound_and_restores_from_them() -> None:
    calls = many_calls(6)
    # Compacting every call: each call writes the base snapshot and a cold restore reads it.
    reference, ref_handle = bucket(LogBucketProcessor, bounded(16, limit=64 << 20))
    want = [call(reference, ref_handle, *c) for c in calls]
    assert sum(len(rows) for out in want for rows in out) > 0, "windows closed"

    cold, handle = bucket(LogBucketProcessor, bounded(0, compact_ratio=0))
    for c, expected in zip(calls, want, strict=True):
        assert call(cold, handle, *c) == expected
        meta = handle.states["windowstore_meta"].get()
        assert meta is not None
        pieces = chunks(handle)
        assert [part for part, _ in pieces] == list(range(len(pieces)))
        assert [v[3] for _, v in pieces] == list(range(len(pieces)))
        assert all(v[0] == meta[2] and v[4] == len(pieces) for _, v in pieces)
        assert max(len(v[5]) for _, v in pieces) <= LIMIT
        # Compacting every call: the log holds nothing else.
        assert len(handle.states[LOG].entries) == len(pieces)
    assert len(pieces) > 2, "the snapshot took several chunks"
    assert not handle.states["windowstore_base"].exists(), "nothing in the list state"
    assert blob(handle).startswith(b"WSSNAP\x00\x02")


def test_a_base_snapshot_in_the_list_state_of_earlier_versions_still_restores() -> None:
    calls = many_calls(6)
    reference, ref_handle = bucket(LogBucketProcessor, bounded(16, compact_ratio=1000))
    want = [call(reference, ref_handle, *c) for c in calls]

    args = bounded(0, compact_ratio=1000)
    old, handle = bucket(LogBucketProcessor, args)
    for c, expected in zip(calls[:3], want[:3], strict=True):
        assert call(old, handle, *c) == expected
    # As earlier versions left it: the base snapshot in the list state, the log map holding
    # the log entries only.
    base = blob(handle)
    log = handle.states[LOG].entries
    assert any(k[0] >= 0 for k in log), "calls in the log"
    for k in [k for k in log if k[0] < 0]:
        del log[k]
    handle.states["windowstore_base"].put([(base[i : i + 100],) for i in range(0, len(base), 100)])

    # No worker cache: the next calls restore from the list state and replay the log.
    assert call(old, handle, *calls[3]) == want[3]
    assert handle.states["windowstore_base"].exists()
    # A compaction moves the base to the map and clears the list.
    moved = LogBucketProcessor(dataclasses.replace(args, compact_ratio=0))
    moved.init(handle)  # type: ignore[arg-type]
    assert call(moved, handle, *calls[4]) == want[4]
    assert not handle.states["windowstore_base"].exists()
    assert chunks(handle)
    assert call(moved, handle, *calls[5]) == want[5]


def test_the_whole_layout_spills_a_large_row_into_map_entries() -> None:
    """With RocksDB the whole layout (processing time, idle_timeout) keeps a row past the
    bound in chunks instead of failing; a cold restore reads them; a row back under the bound
    holds its bytes again and the chunks go."""
    calls = many_calls(6)
    reference, ref_handle = bucket(BucketProcessor, bounded(16, limit=64 << 20))
    want = [call(reference, ref_handle, *c) for c in calls]
    big_rows = [ref_handle.states["windowstore"].get()]
    assert big_rows[0] is not None
    assert len(big_rows[0][1]) > LIMIT

    spilled = 0
    cold, handle = bucket(BucketProcessor, bounded(0))
    for c, expected in zip(calls, want, strict=True):
        assert call(cold, handle, *c) == expected
        row = handle.states["windowstore"].get()
        assert row is not None
        pieces = chunks(handle)
        if row[1]:
            assert len(row[1]) <= LIMIT
            assert not pieces
            continue
        spilled += 1
        assert len(pieces) > 1
        assert all(v[0] == row[2] and v[4] == len(pieces) for _, v in pieces)
        assert max(len(v[5]) for _, v in pieces) <= LIMIT
    assert spilled >= 3
    assert handle.timers == ref_handle.timers

    # Past the bound with every session closed: the state shrinks back into the row.
    flush = pd.DataFrame({"k": ["z"], "ts": [10**12 * 1000], "x": [1]})
    call(cold, handle, 10**12, flush)
    assert handle.states["windowstore"].get()[1], "the row holds its bytes"
    assert not handle.states[LOG].exists(), "no chunks left"


def test_chunks_of_another_snapshot_fail_loudly() -> None:
    calls = many_calls(3)
    p, handle = bucket(BucketProcessor, bounded(0))
    for c in calls[:2]:
        call(p, handle, *c)
    row = handle.states["windowstore"].get()
    assert row is not None
    assert not row[1]
    spilled = blob(handle)
    handle.states[LOG].clear()
    write_chunks(handle.states[LOG], "another", spilled, LIMIT)
    with pytest.raises(RuntimeError, match="does not hold what this query wrote"):
        call(p, handle, *calls[2])


def test_chunks_come_back_whole_and_apart_from_the_log_entries() -> None:
    log = Map()
    log.updateValue((0,), ("a", "base", 5, 0, 1, b"records"))
    write_chunks(log, "snap", bytes(range(256)) * 20, 1000)
    assert sorted(log.entries) == [(-6,), (-5,), (-4,), (-3,), (-2,), (-1,), (0,)]
    pieces, entries = read_log(log)
    assert join_chunks(pieces, "snap") == bytes(range(256)) * 20
    assert entries == [("a", "base", 5, 0, 1, b"records")]
    assert join_chunks(read_log(Map())[0], "snap") is None
    with pytest.raises(RuntimeError, match="not the 6 chunks of snapshot other"):
        join_chunks(pieces, "other")
    with pytest.raises(RuntimeError, match="does not hold what this query wrote"):
        join_chunks(pieces[:-1], "snap")


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        (LogBucketProcessor, {"windowstore_meta", LOG, "windowstore_base", "windowstore"}),
        (BucketProcessor, {"windowstore", LOG, "windowstore_meta"}),
    ],
)
def test_each_processor_registers_the_state_variables_its_checkpoints_hold(
    kind: type[Any], names: set[str]
) -> None:
    """The set is pinned both ways. One more is a variable every later version must keep
    registering. One fewer loses state silently: Spark does not refuse a checkpoint holding a
    variable the processor no longer registers, so a checkpoint of the whole layout (its row in
    ``windowstore``) or of an earlier version (``windowstore_base``) would restart empty."""
    _, handle = bucket(kind, bounded(0))
    assert set(handle.states) == names
