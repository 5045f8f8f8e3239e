"""What a streaming query runs in Spark's Python workers: one engine processor per bucket of keys.

Spark's stateful operators call Python once per grouping key and micro-batch, and every state
read, write and timer is a round trip to the JVM, paid for every key of every micro-batch
(``benches/bench_tws_per_key.py`` measures it). So the state is grouped by *bucket*
(``pmod(xxhash64(keys), n)``): each bucket's state holds one engine processor for all of the
bucket's keys. A call then feeds all of the bucket's new records to the Rust engine at once.

Two layouts of a bucket's state:

- ``whole`` (:class:`BucketProcessor`, :func:`apply_in_pandas_with_state`; the only one with the
  default provider, whose API has one state value per grouping key): one row, the bytes of
  :meth:`~windowstore.SessionWindowProcessor.to_bytes` (the core's one layout, compressed by the
  core), written whole
  by every call, and read back only by a worker that does not hold the processor that wrote
  it (:func:`step`). With RocksDB a row past ``max_entry_bytes`` holds no bytes and its snapshot
  goes to the map state ``windowstore_log`` in chunks instead (:func:`write_chunks`); the
  default provider has no other state than the row, so there the query fails, naming the
  setting;
- ``log`` (:class:`._bucket_log.LogBucketProcessor`, RocksDB, event time): a base snapshot in
  chunks, a log of the calls since and a meta entry; a call appends to the log, and Python
  workers keep the processors they ran, so that a call neither reads nor writes the snapshot
  unless it compacts.

Chunks are entries of a *map* state, one RocksDB key each, so that no RocksDB value outgrows
``max_entry_bytes`` at any state size: the elements of a list state are merged under one key
(Spark's RocksDB store keeps a list as one value, read back as one JVM byte array, which cannot
pass 2 GiB). They are entries of the log's own map, at negative keys (:func:`write_chunks`),
so that a restore reads the base and the log in one pass. Checkpoints whose base snapshot is
in the list state of earlier versions (``windowstore_base``) are still read, and moved to the
map at the bucket's next compaction.

Per call (:func:`step`, :func:`bucket_call`):

1. the processor is restored from the bucket's state (or created, or taken from the worker);
2. stream time advances to Spark's watermark plus its delay: the largest event time the query
   has seen, to the millisecond, so lateness is judged against the whole query's progress, as
   Spark's own stateful operators do. In ``final`` mode this emits the windows it closes;
3. the bucket's new records are processed in event-time order (ties in arrival order). Time
   order means no record of the micro-batch is late because of another one: only the watermark
   makes records late, so the result does not depend on how keys share buckets;
4. the processor goes back into the state, rejected records are handed over with their counts,
   and in ``final`` mode one timer is set at the watermark that closes the next window.

With ``clock="processing"`` step 2 is left out and the records' time is the
micro-batch's processing time; with ``idle_timeout`` the processor also advances stream time on
the processing time once idle. Both run on processing-time timers (step 4: when the next window
closes, or the next micro-batch while the bucket holds open windows).

Both of Spark's APIs drive this: ``transformWithStateInPandas`` (needs the RocksDB state store
provider) and ``applyInPandasWithState`` (any provider). The state variables' schemas, the
chunks, the log and its replay are in :mod:`._state`, which
:func:`windowstore.spark.read_state` shares.
"""

from __future__ import annotations

import io
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming.state import GroupState
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from windowstore._processor import WindowProcessor
from windowstore.exceptions import InvalidWindowSpec, StoreCapacityError
from windowstore.spark._bucket_args import LAYOUT_CONF, MAX_ENTRY_CONF, BucketArgs
from windowstore.spark._state import (
    ENTRY_SCHEMA,
    META_SCHEMA,
    SEQ_SCHEMA,
    STATE_SCHEMA,
    engine_calls,
    join_chunks,
    read_log,
    read_spilled,
    write_chunks,
)

__all__ = [
    "BUCKET",
    "REASONS",
    "REJECTED",
    "STATE_SCHEMA",
    "BucketProcessor",
    "apply_in_pandas_with_state",
    "join_chunks",
    "output_schema",
    "read_log",
    "read_rejected",
    "step",
    "write_chunks",
]

#: The bucket column added to the input.
BUCKET = "__windowstore_bucket"
#: The output column that carries a call's rejected records (Arrow IPC bytes), else null.
REJECTED = "__windowstore_rejected"
#: Why a record is rejected (the engine's reasons); each has a count column in the output.
REASONS = ("late", "invalid_gap", "null_key", "null_time", "time_overflow")


def count_column(reason: str) -> str:
    """The output column counting the records a call rejected for ``reason``."""
    return f"__windowstore_n_{reason}"


def output_schema(windows: pa.Schema) -> pa.Schema:
    """A call's output: the engine's ``windows`` columns, then REJECTED and the counts."""
    return pa.schema(
        [
            *windows,
            pa.field(REJECTED, pa.binary()),
            *[pa.field(count_column(r), pa.int64()) for r in REASONS],
        ]
    )


def state_size(p: WindowProcessor) -> int:
    """About the bytes of ``p``'s state before the core compresses it (its sessions' keys,
    bounds and values, and held rows): what the log layout weighs its log against."""
    m = p.metrics()
    sessions = m.get("store_live_sessions") or 0
    parts = ("store_key_bytes", "store_value_bytes", "held_bytes")
    return 16 * sessions + sum(m.get(name) or 0 for name in parts)


def step(
    args: BucketArgs,
    saved: tuple[str, bytes, str] | None,  # a state row (Spark's Row is a tuple)
    watermark_ms: int,
    frames: Iterable[pd.DataFrame],
    now_ms: int | None = None,
    *,
    spills: bool = False,
) -> tuple[list[pd.DataFrame], tuple[str, bytes, str], int | None]:
    """One call for one bucket in the whole layout: returns the output frames, the new state
    row and the timer (a watermark in ms, or a processing time in ms if ``args.wall``) of its
    next call, if any. ``now_ms``: the micro-batch's processing time (read only if
    ``args.wall``). A row past ``args.max_entry_bytes`` fails the call unless the caller
    ``spills`` it into chunks (:class:`BucketProcessor`, RocksDB).

    The worker keeps the processor after the call, under the new row's token: the bucket's
    next call in this worker finds it and does not restore the row's bytes, if the row it is
    given is that row (after a failed or retried micro-batch Spark gives the row before it,
    with another token, which is restored). Not with the wall clock (``args.wall``): a
    restore there also decides whether the idle period goes on (see
    ``WindowProcessor._resume_idle``), so every call restores."""
    if saved is None:
        p = args.new_processor()
    else:
        params, engine, token = saved
        args.check(params)
        cached = _WHOLE_CACHE.pop(token, None)
        p = cached if cached is not None else args.restore(params, engine)
    result = bucket_call(args, p, watermark_ms, _records(args, frames), now_ms)
    engine = p.to_bytes()
    if len(engine) > args.max_entry_bytes and not spills:
        raise StoreCapacityError(
            f"a bucket's state row would hold {len(engine):,} bytes, more than the "
            f"{args.max_entry_bytes:,} of {MAX_ENTRY_CONF}: with this state store provider a "
            "bucket's state is one row, written whole; spread the keys over more buckets "
            "(buckets=, with a new checkpoint), or use the RocksDB provider, whose state is "
            "split into entries of at most that size"
        )
    token = _token()
    _keep(_WHOLE_CACHE, token, p, args.cache_entries if args.wall is None else 0)
    return result, (args.fingerprint, engine, token), _timer(args, p.next_close(), now_ms)


#: The whole layout's processors a worker kept, by the token of the state row each wrote,
#: least recently used first. An entry is taken out while its call runs: a call that fails
#: leaves none behind.
_WHOLE_CACHE: OrderedDict[str, WindowProcessor] = OrderedDict()


def _keep(cache: OrderedDict[str, Any], key: str, value: Any, entries: int) -> None:
    """Puts ``value`` in ``cache`` as its most recent entry, keeping at most ``entries``."""
    if entries <= 0:
        return
    cache[key] = value
    while len(cache) > entries:
        cache.popitem(last=False)


def bucket_call(
    args: BucketArgs,
    p: WindowProcessor,
    watermark_ms: int,
    records: pa.Table | None,
    now_ms: int | None = None,
) -> list[pd.DataFrame]:
    """One bucket call on ``p``: stream time to the watermark, then ``records`` (the call's
    input, :func:`_records`); returns the output frames. Deterministic: the same calls on the
    same processor leave the same state (the log of
    :class:`._bucket_log.LogBucketProcessor` replays them)."""
    out = engine_calls(args, p, watermark_ms, records, now_ms)
    parts = [_window_rows(args, args.from_engine(t)) for t in out if t.num_rows]
    rejected = p.rejected()
    if rejected.num_rows:
        parts.append(_rejected_row(args, args.from_engine(rejected)))
    return [pa.concat_tables(parts).to_pandas()] if parts else []


def _records(args: BucketArgs, frames: Iterable[pd.DataFrame]) -> pa.Table | None:
    """The call's records as Arrow, in the schema the driver checked. Each of Spark's frames
    is converted on its own: a ``pd.concat`` of them first cost more than the conversions."""
    parts = [
        pa.Table.from_pandas(f, schema=args.input_schema, preserve_index=False)
        for f in frames
        if len(f)
    ]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _timer(args: BucketArgs, close: int | None, now_ms: int | None) -> int | None:
    """The watermark (ms) at which stream time reaches ``close`` (us), for the API's rule; or
    the processing time (ms) of the bucket's next call: when a processing-time session closes
    (``close`` is then epoch ms), or, with an idle timeout, the next micro-batch."""
    if close is None:
        return None
    if args.wall == "processing":
        return close
    if args.wall == "idle":
        return (now_ms or 0) + 1
    at = -(-close // 1000) - args.delay_ms  # the first watermark that closes the window
    return max(at if args.timer_inclusive else at - 1, 1)


def _ipc(table: pa.Table, options: pa.ipc.IpcWriteOptions | None = None) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _window_rows(args: BucketArgs, windows: pa.Table) -> pa.Table:
    """Engine output rows in the call's output schema: no rejected records, no counts."""
    n = windows.num_rows
    columns = [*windows.columns, pa.nulls(n, pa.binary())]
    columns += [pa.nulls(n, pa.int64()) for _ in REASONS]
    return pa.Table.from_arrays(columns, schema=args.output_schema)


def _rejected_row(args: BucketArgs, rejected: pa.Table) -> pa.Table:
    """One row carrying the call's rejected records (Arrow IPC bytes) and their counts by
    reason; its window columns are null."""
    counts = {
        c["values"]: c["counts"] for c in rejected.column("reason").value_counts().to_pylist()
    }
    windows = [pa.nulls(1, f.type) for f in args.output_schema][: -1 - len(REASONS)]
    columns = [*windows, pa.array([_ipc(rejected)], pa.binary())]
    columns += [pa.array([counts.get(reason, 0)], pa.int64()) for reason in REASONS]
    return pa.Table.from_arrays(columns, schema=args.output_schema)


def read_rejected(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The rejected records carried by the REJECTED column of ``batches`` (mapInArrow)."""
    for batch in batches:
        for blob in batch.column(0).to_pylist():
            if blob is not None:
                yield from pa.ipc.open_stream(blob).read_all().to_batches()


class _BucketProcessor(StatefulProcessor):
    """What both layouts' processors share: new rows and a fired timer are one kind of call
    (``_call``) on the bucket's engine, with the query's ``args``."""

    def __init__(self, args: BucketArgs) -> None:
        self.args = args

    def _call(
        self, rows: Iterable[pd.DataFrame], timerValues: TimerValues, fired: int | None
    ) -> Iterator[pd.DataFrame]:
        raise NotImplementedError

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        yield from self._call(rows, timerValues, None)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        fired = expiredTimerInfo.getExpiryTimeInMs()
        yield from self._call((), timerValues, fired)


class BucketProcessor(_BucketProcessor):
    """``transformWithStateInPandas``: a bucket's state in a value state, one timer. A row past
    ``max_entry_bytes`` holds no engine bytes: they are chunks in the map state
    ``windowstore_log`` under the row's token (:func:`write_chunks`), where the log layout
    finds them when it carries the checkpoint over."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState("windowstore", STATE_SCHEMA)
        # Chunks of a row past the bound, as the log layout keeps its base snapshot.
        self.log = handle.getMapState("windowstore_log", SEQ_SCHEMA, ENTRY_SCHEMA)
        # The log layout's meta entry: a checkpoint of that layout is not read here.
        self.meta = handle.getValueState("windowstore_meta", META_SCHEMA)

    def _call(
        self, rows: Iterable[pd.DataFrame], timerValues: TimerValues, fired: int | None
    ) -> Iterator[pd.DataFrame]:
        saved = self.state.get() if self.state.exists() else None
        if saved is None and self.meta.exists():
            raise InvalidWindowSpec(
                f'the checkpoint\'s window state is in the "log" layout, which {LAYOUT_CONF}='
                '"whole" does not read; restart with the log layout (the default with RocksDB) or '
                "a new checkpoint location",
                LAYOUT_CONF,
            )
        spilled = saved is not None and not saved[1]
        if saved is not None and spilled and saved[2] not in _WHOLE_CACHE:
            # Read only when no worker-kept processor wrote the row (step takes that one).
            saved = (saved[0], read_spilled(self.log, saved[2]), saved[2])
        frames, row, timer = step(
            self.args,
            saved,
            timerValues.getCurrentWatermarkInMs(),
            rows,
            timerValues.getCurrentProcessingTimeInMs(),
            spills=True,
        )
        if spilled:
            self.log.clear()
        if len(row[1]) > self.args.max_entry_bytes:
            write_chunks(self.log, row[2], row[1], self.args.max_entry_bytes)
            row = (row[0], b"", row[2])
        self.state.update(row)
        # Spark deletes the timer that fired itself, after this call.
        for t in self.handle.listTimers():
            if t != fired and t != timer:
                self.handle.deleteTimer(t)
        if timer is not None and timer != fired:
            self.handle.registerTimer(timer)
        yield from frames

    def close(self) -> None:
        pass


def _token() -> str:
    return uuid.uuid4().hex


def apply_in_pandas_with_state(
    args: BucketArgs, key: Any, frames: Iterator[pd.DataFrame], state: GroupState
) -> Iterator[pd.DataFrame]:
    """``applyInPandasWithState``: a bucket's state in the group state, one event-time
    timeout."""
    saved = state.get if state.exists else None
    watermark_ms = state.getCurrentWatermarkMs() if args.wall != "processing" else 0
    now_ms = state.getCurrentProcessingTimeMs()
    out, row, timer = step(
        args,
        saved,
        watermark_ms,
        () if state.hasTimedOut else frames,
        now_ms,
    )
    state.update(row)
    if timer is not None:
        if args.wall is None:
            state.setTimeoutTimestamp(max(timer, watermark_ms))
        else:
            state.setTimeoutDuration(max(timer - now_ms, 1))
    yield from out
