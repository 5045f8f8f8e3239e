"""The log layout of a bucket's state (RocksDB, event time; see :mod:`._bucket`): the
processor that keeps a base snapshot and a log of the calls since, the worker's cache of its
processors, and the log entries' Arrow IPC parts."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming.stateful_processor import StatefulProcessorHandle, TimerValues

from windowstore._processor import WindowProcessor
from windowstore.exceptions import StoreCapacityError
from windowstore.spark._bucket import (
    _BucketProcessor,
    _ipc,
    _keep,
    _records,
    _timer,
    _token,
    bucket_call,
    state_size,
)
from windowstore.spark._bucket_args import MAX_ENTRY_CONF
from windowstore.spark._state import (
    CHUNK_SCHEMA,
    ENTRY_SCHEMA,
    META_SCHEMA,
    SEQ_SCHEMA,
    STATE_SCHEMA,
    Position,
    base_snapshot,
    chained,
    read_log,
    read_spilled,
    replay,
    replay_log,
    write_chunks,
)

__all__ = ["LogBucketProcessor"]

#: How many missing log entries a cached processor catches up with one read each; past that,
#: the bucket is restored from its base and whole log (read in bulk).
_CATCH_UP = 16


@dataclass
class _Cached:
    """A processor a worker keeps after a call, with the position it holds."""

    position: Position
    processor: WindowProcessor


#: The worker's processors, by lineage, least recently used first. A Python worker serves
#: many tasks (spark.python.worker.reuse), so a bucket's next call often finds its processor
#: here and reads no snapshot. An entry is taken out while its call runs: a call that fails
#: leaves none behind.
_CACHE: OrderedDict[str, _Cached] = OrderedDict()


class LogBucketProcessor(_BucketProcessor):
    """``transformWithStateInPandas`` with state that scales with the micro-batch: a bucket's
    state is a base snapshot (in chunks of bounded size, :func:`write_chunks`) plus a log of the
    calls since (one map state holds both: each call's watermark and records), with a small meta
    entry (value state) that says where the bucket is. A call appends its records to the log
    instead of rewriting the snapshot; when the log outgrows ``compact_ratio`` times the
    snapshot, the call writes a new snapshot and clears the log. A restore replays the log on
    the snapshot (the engine is deterministic); the worker cache makes restores rare: a
    processor that a worker kept is used as it is when its position is the meta entry's, or
    catches up with the entries it misses."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        # The last two only read checkpoints of the whole layout and of earlier versions. They
        # stay registered: Spark does not refuse a checkpoint holding a variable the processor no
        # longer registers, so such a checkpoint would restart empty, silently. An unused one
        # still costs a little every micro-batch (benches/bench_tws_per_key.py
        # --extra-variables measures it).
        self.meta = handle.getValueState("windowstore_meta", META_SCHEMA)
        self.log = handle.getMapState("windowstore_log", SEQ_SCHEMA, ENTRY_SCHEMA)
        # The base snapshot as earlier versions kept it (one list state, one RocksDB value):
        # read when the log map has no chunks, cleared at the next compaction.
        self.old_base = handle.getListState("windowstore_base", CHUNK_SCHEMA)
        # The whole-state layout's row (BucketProcessor; its chunks, if it spilled, are in
        # the log map): read once, to carry a checkpoint of that layout over.
        self.whole = handle.getValueState("windowstore", STATE_SCHEMA)

    def _call(
        self, rows: Iterable[pd.DataFrame], timerValues: TimerValues, fired: int | None
    ) -> Iterator[pd.DataFrame]:
        args = self.args
        watermark = timerValues.getCurrentWatermarkInMs()
        records = _records(args, rows)
        meta = self.meta.get()
        if meta is None:
            p, at = self._first()
        else:
            args.check(meta[0])
            at = Position(*meta[1:])
            p = self._restore(at)
        frames = bucket_call(args, p, watermark, records)
        size = 0 if records is None else records.nbytes
        if meta is None or at.log_bytes + size >= args.compact_ratio * at.base_bytes:
            self._compact(p, at)
        else:
            self._append(at, watermark, records)
        timer = _timer(args, p.next_close(), None)
        # Spark deletes the timer that fired itself, after this call.
        if at.timer is not None and at.timer not in (fired, timer):
            self.handle.deleteTimer(at.timer)
        if timer is not None and timer != fired and timer != at.timer:
            self.handle.registerTimer(timer)
        at.timer = timer if timer != fired else None
        self.meta.update((args.fingerprint, *vars(at).values()))
        _keep(_CACHE, at.lineage, _Cached(at, p), args.cache_entries)
        yield from frames

    def _first(self) -> tuple[WindowProcessor, Position]:
        """A bucket without a meta entry: new, or a checkpoint of the whole-state layout."""
        at = Position(_token(), "", 0, 0, 0, "", None)
        saved = self.whole.get()
        if saved is None:
            return self.args.new_processor(), at
        p = self.args.restore(saved[0], saved[1] or read_spilled(self.log, saved[2]))
        self.whole.clear()
        if not saved[1]:
            self.log.clear()  # the row's chunks
        # Its timer, which the meta entry will keep from now on.
        at.timer = next(iter(self.handle.listTimers()), None)
        return p, at

    def _restore(self, at: Position) -> WindowProcessor:
        """The bucket's processor at ``at``: the cached one, caught up if needed, else the
        base snapshot with the log replayed."""
        cached = _CACHE.pop(at.lineage, None)
        if cached is not None and cached.position.base == at.base:
            have = cached.position
            missing = at.log_next - have.log_next
            if missing == 0 and have.head == at.head:
                return cached.processor
            if 0 < missing <= _CATCH_UP:
                entries = [self.log.getValue((seq,)) for seq in range(have.log_next, at.log_next)]
                if all(e is not None for e in entries) and chained(entries, have.head, at.head):
                    replay(self.args, cached.processor, entries)
                    return cached.processor
        chunks, log = read_log(self.log)
        p = self.args.from_snapshot(base_snapshot(at, chunks, self.old_base.get))
        replay_log(self.args, p, at, log)
        return p

    def _compact(self, p: WindowProcessor, at: Position) -> None:
        """Writes ``p`` as the bucket's new base snapshot and clears the log."""
        snapshot = p.to_bytes()
        at.base = at.head = _token()
        # The last base's chunks and the log go (a bucket's first call has neither).
        if at.base_bytes or at.log_next:
            self.log.clear()
        write_chunks(self.log, at.base, snapshot, self.args.max_entry_bytes)
        if at.base_bytes and self.old_base.exists():
            self.old_base.clear()
        # The state's size before compression: the log is replayed on the engine's state, so
        # that is what the log is weighed against.
        at.base_bytes, at.log_next, at.log_bytes = state_size(p), 0, 0

    def _append(self, at: Position, watermark: int, records: pa.Table | None) -> None:
        """Appends the call to the log: its records in parts of at most max_entry_bytes."""
        blobs = [None] if records is None else _ipc_parts(records, self.args.max_entry_bytes)
        for i, blob in enumerate(blobs):
            token = _token()
            entry = (token, at.head, watermark, i, len(blobs), blob)
            self.log.updateValue((at.log_next,), entry)
            at.log_next += 1
            at.log_bytes += 0 if blob is None else len(blob)
            at.head = token

    def close(self) -> None:
        pass


_LZ4 = pa.ipc.IpcWriteOptions(compression="lz4")


def _ipc_parts(records: pa.Table, limit: int) -> list[bytes]:
    """``records`` as Arrow IPC streams of at most ``limit`` bytes each, in order."""
    n = 1
    while True:
        step = -(-records.num_rows // n)
        blobs = [_ipc(records.slice(i, step), _LZ4) for i in range(0, records.num_rows, step)]
        if max(len(b) for b in blobs) <= limit:
            return blobs
        if step == 1:
            raise StoreCapacityError(
                f"a record takes more than the {limit:,} bytes of {MAX_ENTRY_CONF} in the "
                "state's log: raise it"
            )
        n *= 2
