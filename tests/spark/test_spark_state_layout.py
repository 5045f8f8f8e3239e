"""The state layouts of streaming windows on real Spark.

With the RocksDB provider (transformWithStateInPandas) a bucket's state is a base snapshot in
chunks and a log of the calls since (one map state: the chunks at negative keys, one RocksDB key
each, the log from 0) and a meta entry (value state): a micro-batch writes its log entries and
the meta entries of the buckets it touches, not their snapshots. These tests read what each
micro-batch wrote from the checkpoint itself, with Spark's state data source and its change feed
(RocksDB changelog checkpointing on), and check that entries stay within
``spark.windowstore.state.maxEntryBytes``, that the windows are those of the batch adapter
however the log is replayed and compacted, and that a checkpoint of the whole-state layout
carries over. With the default provider a bucket's state stays one row: past the bound, the
query fails, naming it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import LongType, StructField, StructType

from windowstore import InvalidWindowSpec, SessionWindowProcessor, SnapshotError, agg
from windowstore.spark import session_windows
from windowstore.spark._bucket import output_schema, step
from windowstore.spark._bucket_args import (
    CACHE_CONF,
    COMPACT_CONF,
    LAYOUT_CONF,
    MAX_ENTRY_CONF,
    BucketArgs,
)

from .compare import assert_same_windows
from .streams import (
    AGGS,
    GRACE,
    KINDS,
    PROVIDER,
    ROCKSDB,
    SENTINEL,
    events,
    read_stream,
    start_to_parquet,
    to_noop,
    to_parquet,
    write_files,
)
from .test_spark_streaming import sink_rows

pytestmark = pytest.mark.spark

CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
META, LOG, WHOLE = "windowstore_meta", "windowstore_log", "windowstore"
OLD_BASE = "windowstore_base"
BASE_MS = 1_700_000_000_000
FRAMES = events(seed=11)


@pytest.fixture
def conf(spark: SparkSession) -> Iterator[dict[str, str]]:
    """The session's configuration for one test: set what the test puts in the dict (read when
    a query is defined), unset after."""
    values: dict[str, str] = {}

    class Conf(dict[str, str]):
        def __setitem__(self, key: str, value: str) -> None:
            super().__setitem__(key, value)
            values[key] = value
            spark.conf.set(key, value)

    yield Conf()
    for key in values:
        spark.conf.unset(key)


@pytest.fixture
def rocksdb(conf: dict[str, str]) -> dict[str, str]:
    conf[PROVIDER] = ROCKSDB
    conf[CHANGELOG] = "true"
    return conf


def _frame(rows: list[tuple[str, int, int]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["k", "ts", "x"]).assign(g=0)
    frame["ts"] = pd.to_datetime(frame["ts"], unit="ms", utc=True).astype("datetime64[us, UTC]")
    return frame


def long_sessions(spark: SparkSession, folder: Path, keys: int, then: list[list[str]]) -> DataFrame:
    """A first micro-batch opening ``keys`` sessions, then one micro-batch per list of keys
    in ``then``, 10 s apart: with gap 10 minutes nothing closes."""
    frames = [_frame([(f"k{i}", BASE_MS, i) for i in range(keys)])]
    for n, batch in enumerate(then, start=1):
        frames.append(_frame([(k, BASE_MS + n * 10_000, n) for k in batch]))
    write_files(frames, folder)
    return read_stream(spark, folder)


def run_to_noop(df: DataFrame, checkpoint: Path) -> None:
    windows = session_windows(df, key="k", time="ts", gap="10m", grace="20s", aggs=AGGS)
    to_noop(windows, checkpoint)


def state(spark: SparkSession, checkpoint: Path, var: str, **options: Any) -> DataFrame:
    reader = spark.read.format("statestore").option("stateVarName", var)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(str(checkpoint))


def changes(spark: SparkSession, checkpoint: Path, var: str) -> DataFrame:
    """What each micro-batch wrote to the state variable ``var`` (``batch_id``, ``change_type``,
    the entry)."""
    return state(spark, checkpoint, var, readChangeFeed=True, changeStartBatchId=0)


def chunks_of(df: DataFrame) -> DataFrame:
    """The snapshot chunks of the log map state's rows ``df`` (negative keys)."""
    return df.filter("user_map_key.seq < 0")


def entries_of(df: DataFrame) -> DataFrame:
    """The log entries of the log map state's rows ``df`` (keys from 0)."""
    return df.filter("user_map_key.seq >= 0")


def per_batch(df: DataFrame) -> dict[int, int]:
    return dict(Counter(r["batch_id"] for r in df.select("batch_id").collect()))


def test_a_micro_batch_writes_the_log_entries_of_the_buckets_it_touches(
    spark: SparkSession, rocksdb: dict[str, str], tmp_path: Path
) -> None:
    # 2,000 open sessions in 4 buckets, then a micro-batch of one record of k7, then one of k7,
    # k8 and k9 (in more than one bucket: checked below).
    df = long_sessions(spark, tmp_path / "in", 2000, [["k7"], ["k7", "k8", "k9"]])
    run_to_noop(df, tmp_path / "ck")
    buckets = {r["key"][0] for r in state(spark, tmp_path / "ck", META).collect()}
    assert len(buckets) == 4
    touched = (
        spark.read.parquet(str(tmp_path / "in" / "part-002.parquet"))
        .selectExpr("pmod(xxhash64(k), 4) as b")
        .distinct()
        .count()
    )
    assert touched >= 2
    # The first micro-batch writes every bucket's snapshot; later ones none, whatever the state.
    assert per_batch(chunks_of(changes(spark, tmp_path / "ck", LOG))) == {0: 4}
    # Each later micro-batch: one log entry and one meta entry per bucket it touches.
    assert per_batch(entries_of(changes(spark, tmp_path / "ck", LOG))) == {1: 1, 2: touched}
    assert per_batch(changes(spark, tmp_path / "ck", META)) == {0: 4, 1: 1, 2: touched}

    # The same stream with every bucket's state in one row: each micro-batch rewrites it.
    rocksdb[LAYOUT_CONF] = "whole"
    run_to_noop(read_stream(spark, tmp_path / "in"), tmp_path / "ck-whole")
    whole = changes(spark, tmp_path / "ck-whole", WHOLE)
    assert per_batch(whole) == {0: 4, 1: 1, 2: touched}
    rewritten = whole.filter("batch_id = 1").selectExpr("value.engine as engine").first()
    logged = (
        entries_of(changes(spark, tmp_path / "ck", LOG))
        .filter("batch_id = 1")
        .selectExpr("length(user_map_value.records) as n")
        .first()
    )
    assert rewritten is not None
    assert logged is not None
    # A bucket of 500 open sessions, rewritten (compressed by the core), against one record's
    # log entry.
    assert len(rewritten["engine"]) > 5 * logged["n"]


def test_state_entries_stay_within_the_bound(
    spark: SparkSession, rocksdb: dict[str, str], tmp_path: Path
) -> None:
    rocksdb[MAX_ENTRY_CONF] = "2048"
    rocksdb[COMPACT_CONF] = "1000"  # no compaction after the first micro-batch: the log grows
    many = [f"k{i}" for i in range(0, 2000, 2)]
    df = long_sessions(spark, tmp_path / "in", 2000, [many, ["k1"]])
    run_to_noop(df, tmp_path / "ck")
    chunks = chunks_of(state(spark, tmp_path / "ck", LOG)).selectExpr(
        "key.__windowstore_bucket as b",
        "-1 - user_map_key.seq as part",
        "user_map_value.part as numbered",
        "user_map_value.parts as parts",
        "length(user_map_value.records) as n",
    )
    rows = chunks.collect()
    assert max(r["n"] for r in rows) <= 2048
    # 2,000 sessions in 4 buckets do not fit 4 chunks of 2 KiB; each chunk is an entry (a
    # RocksDB key) of its own, numbered from 0 in its bucket.
    assert len(rows) > 8
    for b in {r["b"] for r in rows}:
        parts = sorted(r["part"] for r in rows if r["b"] == b)
        assert parts == list(range(len(parts)))
        assert {r["parts"] for r in rows if r["b"] == b} == {len(parts)}
    assert all(r["numbered"] == r["part"] for r in rows)
    assert state(spark, tmp_path / "ck", OLD_BASE).count() == 0
    log = entries_of(state(spark, tmp_path / "ck", LOG)).selectExpr(
        "user_map_value.parts as parts", "length(user_map_value.records) as n"
    )
    entries = log.collect()
    assert max(r["n"] for r in entries) <= 2048
    # The second micro-batch's 250 records a bucket took several entries.
    assert max(r["parts"] for r in entries) > 1


def test_the_whole_layout_spills_rows_past_the_bound_into_chunks(
    spark: SparkSession, rocksdb: dict[str, str], tmp_path: Path
) -> None:
    """With RocksDB the whole layout (what processing time and idle_timeout use) keeps a row
    past the bound in map entries of at most the bound, and restores from them (no worker
    cache here): the sink is the batch adapter's windows."""
    rocksdb[LAYOUT_CONF] = "whole"
    rocksdb[MAX_ENTRY_CONF] = "1024"
    rocksdb[CACHE_CONF] = "0"
    _windows_with(spark, rocksdb, tmp_path, restart_at=6)
    spilled = changes(spark, tmp_path / "ck", WHOLE).filter("length(value.engine) = 0").count()
    assert spilled > 0, "rows went past the bound"
    pieces = chunks_of(changes(spark, tmp_path / "ck", LOG)).filter("change_type = 'update'")
    sizes = [r["n"] for r in pieces.selectExpr("length(user_map_value.records) as n").collect()]
    assert len(sizes) > spilled
    assert max(sizes) <= 1024


def _windows_with(
    spark: SparkSession, conf: dict[str, str], tmp_path: Path, restart_at: int
) -> None:
    """Runs FRAMES' fixed-gap windows into a Parquet sink, stopping after ``restart_at``
    files and restarting from the checkpoint; checks the sink against the batch adapter."""
    k = KINDS["fixed_gap"]
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    write_files(FRAMES[:restart_at], source)
    start_to_parquet(spark, k, source, sink, checkpoint, availableNow=True).awaitTermination()
    write_files(FRAMES[restart_at:], source, first=restart_at)
    start_to_parquet(spark, k, source, sink, checkpoint, availableNow=True).awaitTermination()
    every = pd.concat(FRAMES, ignore_index=True)
    want = k.windows(spark.createDataFrame(every[every["k"] != SENTINEL])).toArrow()
    assert want.num_rows >= 40
    assert_same_windows(sink_rows(spark, sink), want, k.by)


@pytest.mark.parametrize("ratio", ["0", "1000"], ids=["compact-every-call", "log-only"])
def test_the_log_replayed_on_its_snapshot_gives_the_windows(
    spark: SparkSession, rocksdb: dict[str, str], tmp_path: Path, ratio: str
) -> None:
    # No worker cache: every call restores its bucket from the snapshot and replays the log.
    rocksdb[CACHE_CONF] = "0"
    rocksdb[COMPACT_CONF] = ratio
    _windows_with(spark, rocksdb, tmp_path, restart_at=6)
    log = entries_of(state(spark, tmp_path / "ck", LOG)).count()
    meta = state(spark, tmp_path / "ck", META).collect()
    if ratio == "0":
        assert log == 0
    else:
        # Every call since the first is in the log.
        assert log == sum(r["value"]["log_next"] for r in meta) > 3 * len(meta)


def test_a_checkpoint_of_the_whole_layout_carries_over(
    spark: SparkSession, rocksdb: dict[str, str], tmp_path: Path
) -> None:
    k = KINDS["fixed_gap"]
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    write_files(FRAMES[:5], source)
    rocksdb[LAYOUT_CONF] = "whole"
    start_to_parquet(spark, k, source, sink, checkpoint, availableNow=True).awaitTermination()
    assert state(spark, checkpoint, WHOLE).count() > 0
    rocksdb[LAYOUT_CONF] = "log"
    write_files(FRAMES[5:], source, first=5)
    start_to_parquet(spark, k, source, sink, checkpoint, availableNow=True).awaitTermination()
    # The rows of the whole layout were read once and cleared.
    assert state(spark, checkpoint, WHOLE).count() == 0
    assert state(spark, checkpoint, META).count() > 0
    every = pd.concat(FRAMES, ignore_index=True)
    want = k.windows(spark.createDataFrame(every[every["k"] != SENTINEL])).toArrow()
    assert_same_windows(sink_rows(spark, sink), want, k.by)
    # Not back: the whole layout refuses a checkpoint of the log layout instead of starting empty.
    # A record after the sentinel (older ones would be dropped as late before any call).
    ts = (FRAMES[-1]["ts"] + pd.Timedelta(hours=1)).astype("datetime64[us, UTC]")
    later = FRAMES[-1].assign(k="k1", ts=ts)
    write_files([later], source, first=len(FRAMES))
    rocksdb[LAYOUT_CONF] = "whole"
    query = start_to_parquet(spark, k, source, sink, checkpoint, availableNow=True)
    with pytest.raises(StreamingQueryException, match='"log" layout'):
        query.awaitTermination()


def test_spark_runs_on_a_checkpoint_holding_a_variable_no_longer_registered(
    spark: SparkSession, rocksdb: dict[str, str], tmp_path: Path
) -> None:
    """Why the log layout keeps registering ``windowstore`` and ``windowstore_base``, which only
    older checkpoints hold: Spark does not refuse a checkpoint with a state variable that the
    processor no longer registers. A checkpoint of the whole layout would restart empty, with
    no error, if the log layout stopped registering the whole layout's row."""

    class Counting(StatefulProcessor):  # local: the workers unpickle it by value
        """Counts a key's rows in value state ``a``; with ``both``, writes value state ``b`` too."""

        def __init__(self, both: bool) -> None:
            self.both = both

        def init(self, handle: StatefulProcessorHandle) -> None:
            schema = StructType([StructField("n", LongType())])
            self.a = handle.getValueState("a", schema)
            if self.both:
                self.b = handle.getValueState("b", schema)

        def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Any:
            seen = self.a.get()
            n = sum(len(r) for r in rows) + (0 if seen is None else seen[0])
            self.a.update((n,))
            if self.both:
                self.b.update((n,))
            yield pd.DataFrame({"k": [key[0]], "n": [n]})

        def close(self) -> None:
            pass

    source, checkpoint = tmp_path / "in", tmp_path / "ck"

    def run(both: bool) -> None:
        counted = (
            read_stream(spark, source)
            .groupBy("k")
            .transformWithStateInPandas(Counting(both), "k string, n long", "Append", "None")
        )
        to_noop(counted, checkpoint)

    write_files([_frame([("a", BASE_MS, 1), ("a", BASE_MS, 2)])], source)
    run(both=True)
    assert state(spark, checkpoint, "b").count() == 1
    write_files([_frame([("a", BASE_MS, 3)])], source, first=1)
    run(both=False)  # no error
    assert [r["value"]["n"] for r in state(spark, checkpoint, "a").collect()] == [3]


def test_a_restart_with_other_parameters_fails_loudly_with_the_log_layout(
    spark: SparkSession, rocksdb: dict[str, str], tmp_path: Path
) -> None:
    k = KINDS["fixed_gap"]
    write_files(FRAMES[:3], tmp_path / "in")
    start_to_parquet(
        spark, k, tmp_path / "in", tmp_path / "out", tmp_path / "ck", availableNow=True
    ).awaitTermination()
    write_files(FRAMES[3:4], tmp_path / "in", first=3)
    windows = session_windows(
        read_stream(spark, tmp_path / "in"), key="k", time="ts", gap="31s", grace=GRACE, aggs=AGGS
    )
    query = to_parquet(windows, tmp_path / "out", tmp_path / "ck", availableNow=True)
    with pytest.raises(StreamingQueryException, match="other parameters"):
        query.awaitTermination()


def test_a_row_past_the_bound_fails_with_the_default_provider(
    spark: SparkSession, conf: dict[str, str], tmp_path: Path
) -> None:
    conf[MAX_ENTRY_CONF] = "4096"
    df = long_sessions(spark, tmp_path / "in", 2000, [])
    with pytest.raises(StreamingQueryException, match="maxEntryBytes") as e:
        run_to_noop(df, tmp_path / "ck")
    assert "buckets" in str(e.value)


def test_the_log_layout_needs_rocksdb(
    spark: SparkSession, conf: dict[str, str], tmp_path: Path
) -> None:
    write_files(FRAMES[:1], tmp_path / "in")
    conf[LAYOUT_CONF] = "log"
    with pytest.raises(InvalidWindowSpec, match="RocksDB") as e:
        session_windows(read_stream(spark, tmp_path / "in"), key="k", time="ts", gap="1m",
                        grace="10s")  # fmt: skip
    assert e.value.parameter == LAYOUT_CONF
    conf[LAYOUT_CONF] = "rows"
    with pytest.raises(InvalidWindowSpec, match='"whole"'):
        session_windows(read_stream(spark, tmp_path / "in"), key="k", time="ts", gap="1m",
                        grace="10s")  # fmt: skip


def whole_args(cache_entries: int) -> BucketArgs:
    """A bucket's arguments as the driver makes them (sessions, gap 10 s, grace 5 s)."""
    schema = pa.schema([("k", pa.string()), ("ts", pa.int64()), ("x", pa.int64())])
    params: dict[str, Any] = {"key": "k", "time": "ts", "gap": 10_000_000, "grace": 5_000_000,
                              "time_unit": "us", "aggs": [agg.count(), agg.sum("x")]}  # fmt: skip
    windows = SessionWindowProcessor(**params).process(schema.empty_table()).schema
    output = output_schema(windows)
    return BucketArgs("sessions", params, "ts", schema, output, 0, "params", False,
                      cache_entries=cache_entries)  # fmt: skip


def whole_calls(n: int) -> list[tuple[int, pd.DataFrame]]:
    """``n`` calls of a bucket: the watermark (ms) and 50 records on 5 keys, 40 s apart."""
    rng = np.random.default_rng(3)
    calls = []
    for i in range(n):
        ts = (i * 40_000 + rng.integers(0, 30_000, 50)) * 1000
        frame = pd.DataFrame({"k": rng.choice(list("abcde"), 50), "ts": ts,
                              "x": rng.integers(0, 100, 50)})  # fmt: skip
        calls.append((i * 40_000, frame))
    return calls


def test_the_whole_layout_keeps_the_processor_that_wrote_the_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bucket's next call in the same worker takes the processor that wrote the row it is
    given instead of restoring the row's bytes; a row it did not write last (a micro-batch
    retried after a failure) is restored from its bytes. Either way a call gives what it gives
    on the restored row: the same output, the same next row, the same timer."""
    restores: list[int] = []
    restore = BucketArgs.restore

    def counted(self: BucketArgs, params: str, engine: bytes) -> Any:
        restores.append(len(engine))
        return restore(self, params, engine)

    monkeypatch.setattr(BucketArgs, "restore", counted)

    def outputs(
        args: BucketArgs, saved: Any, call: tuple[int, pd.DataFrame]
    ) -> tuple[list[Any], Any, int | None]:
        frames, row, timer = step(args, saved, call[0], [call[1]])
        # As Arrow rows: the count columns' nulls are NaN in pandas, unequal to themselves.
        return (
            [pa.Table.from_pandas(f, preserve_index=False).to_pylist() for f in frames],
            row,
            timer,
        )

    calls = whole_calls(6)
    cached, uncached = whole_args(16), whole_args(0)
    rows: list[Any] = [None]
    seen = []
    for call in calls:
        frames, row, timer = outputs(cached, rows[-1], call)
        rows.append(row)
        seen.append((frames, row[1], timer))
    assert restores == [], "each call found the processor that wrote its row"
    assert sum(len(f[0]) if f else 0 for f, _, _ in seen) > 0, "windows closed"

    again = []
    saved = None
    for call in calls:
        frames, saved, timer = outputs(uncached, saved, call)
        again.append((frames, saved[1], timer))
    assert len(restores) == len(calls) - 1
    assert again == seen

    # Call 3 retried from the row before it: not the row this worker wrote last.
    del restores[:]
    frames, row, timer = outputs(cached, rows[3], calls[3])
    assert len(restores) == 1
    assert (frames, row[1], timer) == seen[3]
    assert row[2] != rows[4][2], "every row has its own token"


@pytest.mark.parametrize(
    "older",
    [b"WSZSTD01" + bytes(40), b"WSSNAP\x00\x01" + bytes(40), b"WSRECS\x00\x01" + bytes(40)],
)
def test_a_state_row_of_an_older_layout_fails_the_call_saying_so(older: bytes) -> None:
    """State rows hold the core's own snapshot (layout 2, compressed by the core); a row written
    by an earlier version's layout (the Spark adapter's packing, the core's layout 1, records
    mode's wrapper) fails the call with a SnapshotError that says so, changing nothing."""
    args = whole_args(0)
    calls = whole_calls(2)
    _, saved, _ = step(args, None, calls[0][0], [calls[0][1]])
    assert saved[1].startswith(b"WSSNAP\x00\x02")
    with pytest.raises(SnapshotError, match="older windowstore layout"):
        step(args, (saved[0], older, "another token"), calls[1][0], [calls[1][1]])
