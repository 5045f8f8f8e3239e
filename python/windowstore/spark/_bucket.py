"""What a streaming query runs in Spark's Python workers: one bucket of keys per state row.

Spark's stateful operators call Python once per grouping key and micro-batch, and every state
read, write and timer is a round trip to the JVM: 0.84 ms per key here, 84 s per micro-batch
at 100k keys (``benches/bench_tws_per_key.py``). So the state is grouped by *bucket*
(``pmod(xxhash64(keys), n)``): each bucket's state row holds one engine processor, as the bytes of
:meth:`~windowstore.SessionWindowProcessor.to_bytes`, for all of the bucket's keys. A call then
feeds all of the bucket's new records to the Rust engine at once.

Per call (:func:`step`):

1. the processor is restored from the bucket's state (or created);
2. stream time advances to Spark's watermark plus its delay: the largest event time the query
   has seen, to the millisecond, so lateness is judged against the whole query's progress, as
   Spark's own stateful operators do. In ``final`` mode this emits the windows it closes;
3. the bucket's new records are processed in event-time order (ties in arrival order). Time
   order means no record of the micro-batch is late because of another one: only the watermark
   makes records late, so the result does not depend on how keys share buckets;
4. the processor goes back into the state, rejected records are handed over with their counts,
   and in ``final`` mode one timer is set at the watermark that closes the next window.

With ``clock="processing"`` step 2 is left out and the records are stamped with the
micro-batch's processing time; with ``idle_timeout`` the processor also advances stream time on
the processing time once idle. Both run on processing-time timers (step 4: when the next session
closes, or the next micro-batch while the bucket holds open windows).

Both of Spark's APIs drive this: ``transformWithStateInPandas`` (needs the RocksDB state store
provider) and ``applyInPandasWithState`` (any provider).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
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
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from windowstore._processor import WindowProcessor
from windowstore.exceptions import InvalidRecordError, InvalidWindowSpec
from windowstore.sessions import SessionWindowProcessor
from windowstore.sliding import SlidingWindowProcessor
from windowstore.spark._udf import invalid_row

__all__ = [
    "BUCKET",
    "REASONS",
    "REJECTED",
    "STATE_SCHEMA",
    "BucketArgs",
    "WindowsProcessor",
    "apply_in_pandas_with_state",
    "read_rejected",
    "step",
]

#: The bucket column added to the input.
BUCKET = "__windowstore_bucket"
#: The output column that carries a call's rejected records (Arrow IPC bytes), else null.
REJECTED = "__windowstore_rejected"
#: Why a record is rejected (the engine's reasons); each has a count column in the output.
REASONS = ("late", "invalid_gap", "null_key", "null_time", "time_overflow")
#: A bucket's state row: the parameters that made it, and the engine's bytes.
STATE_SCHEMA = StructType(
    [StructField("params", StringType(), False), StructField("engine", BinaryType(), False)]
)

_PROCESSORS: dict[str, type[WindowProcessor]] = {
    "sessions": SessionWindowProcessor,
    "sliding": SlidingWindowProcessor,
}


def count_column(reason: str) -> str:
    """The output column counting the records a call rejected for ``reason``."""
    return f"__windowstore_n_{reason}"


@dataclass(frozen=True)
class BucketArgs:
    """Everything a worker needs: the engine's parameters and the schemas around it."""

    #: ``"sessions"`` or ``"sliding"``.
    kind: str
    #: Keyword arguments of the processor class (time in microseconds: ``time_unit="us"``).
    params: dict[str, Any]
    #: The time column (epoch microseconds in the engine's input); none in processing time.
    time: str | None
    #: The engine's input, as the driver checked it (pandas loses integer types to NaN).
    input_schema: pa.Schema
    #: The output of one call: the engine's windows, then REJECTED and the counts.
    output_schema: pa.Schema
    #: Spark's watermark delay: stream time is the watermark plus this.
    delay_ms: int
    #: The parameters as text, kept in every state row: a restart with other parameters would
    #: otherwise silently continue old windows under new rules.
    fingerprint: str
    #: Whether the API fires a timer at a watermark equal to it (transformWithState) or only
    #: above it (applyInPandasWithState).
    timer_inclusive: bool
    #: Records output only: the input columns that hold Spark timestamps as epoch microseconds.
    #: The engine gets them as Arrow timestamps (so a session id is the same as in every other
    #: engine) and gives them back, with the session bounds, as microseconds.
    timestamps: tuple[str, ...] = ()
    #: What reads the wall clock (Spark's processing time): ``"processing"`` (sessions whose
    #: records' time is their arrival), ``"idle"`` (event time with ``idle_timeout``) or None.
    wall: str | None = None

    def new_processor(self) -> WindowProcessor:
        return _PROCESSORS[self.kind](**self.params)

    def restore(self, params: str, engine: bytes) -> WindowProcessor:
        if params != self.fingerprint:
            raise InvalidWindowSpec(
                "the checkpoint's window state was made with other parameters "
                f"({params}) than this query's ({self.fingerprint}); restart with the same "
                "parameters (buckets= defaults to spark.sql.shuffle.partitions) or a new "
                "checkpoint location",
                "checkpoint",
            )
        return _PROCESSORS[self.kind].from_bytes(engine, aggs=self.params.get("aggs", ()))

    def to_engine(self, table: pa.Table) -> pa.Table:
        """The engine's input: the ``timestamps`` columns as UTC timestamps."""
        return _cast(table, self.timestamps, pa.timestamp("us", "UTC"))

    def from_engine(self, table: pa.Table) -> pa.Table:
        """The engine's output in the call's output types: timestamps as microseconds."""
        if self.wall == "processing":
            # Arrival times come as millisecond timestamps.
            bounds = ("session_start", "session_end")
            table = _cast(_cast(table, bounds, pa.timestamp("us", "UTC")), bounds, pa.int64())
        if not self.timestamps:
            return table
        return _cast(table, (*self.timestamps, "session_start", "session_end"), pa.int64())


def _cast(table: pa.Table, names: Iterable[str], to: pa.DataType) -> pa.Table:
    """``table`` with its columns ``names`` (those it has) cast to ``to``."""
    for name in names:
        i = table.schema.get_field_index(name)
        if i >= 0:
            f = table.schema.field(i)
            table = table.set_column(i, f.with_type(to), table.column(i).cast(to))
    return table


def step(
    args: BucketArgs,
    saved: tuple[str, bytes] | None,  # a state row (Spark's Row is a tuple)
    watermark_ms: int,
    frames: Iterable[pd.DataFrame],
    now_ms: int | None = None,
) -> tuple[list[pd.DataFrame], tuple[str, bytes], int | None]:
    """One call for one bucket: returns the output frames, the new state row and the timer
    (a watermark in ms, or a processing time in ms if ``args.wall``) of its next call, if
    any. ``now_ms``: the micro-batch's processing time (read only if ``args.wall``)."""
    p = args.new_processor() if saved is None else args.restore(*saved)
    # The wall clock's reading, for the processors that read it.
    wall: dict[str, Any] = {}
    if args.wall is not None:
        wall["now"] = now_ms
        if isinstance(p, SessionWindowProcessor):
            p._resume_idle(_run_id())
    out: list[pa.Table] = []
    if watermark_ms > 0 and args.wall != "processing":
        # Spark's watermark is 0 until the first micro-batch ends.
        out.append(p.advance((watermark_ms + args.delay_ms) * 1000, **wall))
    records = _records(args, frames)
    if records is not None:
        records = args.to_engine(records)
        if args.time is not None:
            records = records.sort_by([(args.time, "ascending")])
        try:
            out.append(p.process(records, **wall))
        except InvalidRecordError as e:
            raise invalid_row(e, records) from None
    elif isinstance(p, SessionWindowProcessor) and args.wall is not None:
        out.append(p.poll(now=now_ms))
    parts = [_window_rows(args, args.from_engine(t)) for t in out if t.num_rows]
    rejected = p.rejected()
    if rejected.num_rows:
        parts.append(_rejected_row(args, args.from_engine(rejected)))
    result = [pa.concat_tables(parts).to_pandas()] if parts else []
    return result, (args.fingerprint, p.to_bytes()), _timer(args, p.next_close(), now_ms)


def _run_id() -> str | None:
    """The run of the streaming query (Spark sets it as the job group of every micro-batch):
    a restart is a new run."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return None if context is None else context.getLocalProperty("spark.jobGroup.id")


def _records(args: BucketArgs, frames: Iterable[pd.DataFrame]) -> pa.Table | None:
    """The call's records as Arrow, in the schema the driver checked."""
    parts = [f for f in frames if len(f)]
    if not parts:
        return None
    frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    return pa.Table.from_pandas(frame, schema=args.input_schema, preserve_index=False)


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


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
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


class WindowsProcessor(StatefulProcessor):
    """``transformWithStateInPandas``: a bucket's state in a value state, one event-time timer."""

    def __init__(self, args: BucketArgs) -> None:
        self.args = args

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState("windowstore", STATE_SCHEMA)

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        yield from self._call(rows, timerValues, None)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        fired = expiredTimerInfo.getExpiryTimeInMs()
        yield from self._call((), timerValues, fired)

    def _call(
        self, rows: Iterable[pd.DataFrame], timerValues: TimerValues, fired: int | None
    ) -> Iterator[pd.DataFrame]:
        saved = self.state.get() if self.state.exists() else None
        frames, row, timer = step(
            self.args,
            saved,
            timerValues.getCurrentWatermarkInMs(),
            rows,
            timerValues.getCurrentProcessingTimeInMs(),
        )
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
