"""A bucket's state as the checkpoint holds it, and the processor restored from it: what the
Python workers (:mod:`._bucket`) and :func:`windowstore.spark.read_state` share.

The state variables (see :mod:`._bucket` for the layouts):

- ``windowstore`` (:data:`STATE_SCHEMA`): the ``whole`` layout's row, the processor's bytes (or,
  past ``max_entry_bytes`` with RocksDB, none: its snapshot is in chunks in ``windowstore_log``);
  with the default provider, the group state of ``applyInPandasWithState``;
- ``windowstore_meta`` (:data:`META_SCHEMA`): where a bucket of the ``log`` layout is;
- ``windowstore_log`` (:data:`SEQ_SCHEMA` to :data:`ENTRY_SCHEMA`): snapshot chunks at negative
  keys (:func:`write_chunks`), the log of calls from key 0;
- ``windowstore_base`` (:data:`CHUNK_SCHEMA`): the base snapshot of earlier versions.

A log entry is one call's watermark and records, and a replay (:func:`replay`) applies it with
:func:`engine_calls`, the function that made the call: the engine is deterministic, so the
replay leaves the state the call left.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from windowstore._processor import WindowProcessor
from windowstore.exceptions import InvalidRecordError
from windowstore.spark._bucket_args import BucketArgs
from windowstore.spark._udf import invalid_row

__all__ = [
    "CHUNK_SCHEMA",
    "ENTRY_SCHEMA",
    "META_SCHEMA",
    "SEQ_SCHEMA",
    "STATE_SCHEMA",
    "Position",
    "base_snapshot",
    "chained",
    "engine_calls",
    "join_chunks",
    "read_log",
    "read_spilled",
    "replay",
    "replay_log",
    "write_chunks",
]

#: A bucket's state row in the whole layout: the parameters that made it, the engine's bytes,
#: and a random id made with each row (the worker cache's key: a processor a worker kept after
#: writing the row holds what the row holds).
STATE_SCHEMA = StructType(
    [
        StructField("params", StringType(), False),
        StructField("engine", BinaryType(), False),
        StructField("token", StringType(), False),
    ]
)
#: The base snapshot as earlier versions kept it: a list state of chunks, all of them one
#: RocksDB value. Read (and cleared), never written.
CHUNK_SCHEMA = StructType([StructField("chunk", BinaryType(), False)])
#: The log: one entry per call since the base (or several parts of one call's records), keyed
#: by number from 0; each names the entry before it (``prev``), so that a cached processor knows
#: whether the log continues what it has applied. The base snapshot's chunks are entries of the
#: same map at negative keys (:func:`write_chunks`).
SEQ_SCHEMA = StructType([StructField("seq", LongType(), False)])
ENTRY_SCHEMA = StructType(
    [
        StructField("token", StringType(), False),
        StructField("prev", StringType(), False),
        StructField("watermark", LongType(), False),
        StructField("part", IntegerType(), False),
        StructField("parts", IntegerType(), False),
        # The call's records (a part of them), Arrow IPC with LZ4; null: none.
        StructField("records", BinaryType(), True),
    ]
)


@dataclass
class Position:
    """Where a bucket's state is: its meta entry but ``params``, as a processor has applied it
    (``Position(*meta[1:])``)."""

    #: The bucket's state for all time (a random id made with it): the worker cache's key.
    lineage: str
    #: The base snapshot (a random id made with each): what the log applies to.
    base: str
    base_bytes: int
    #: The log's length (its entries are numbered 0 to log_next - 1) and size.
    log_next: int
    log_bytes: int
    #: The last entry's token (the base's id while the log is empty).
    head: str
    #: The bucket's registered timer, if any.
    timer: int | None


#: The Spark type of each type of a ``Position`` field, and whether it is nullable.
_SPARK_TYPES: dict[str, tuple[DataType, bool]] = {
    "str": (StringType(), False),
    "int": (LongType(), False),
    "int | None": (LongType(), True),
}
#: A bucket's position in the log layout (:class:`._bucket_log.LogBucketProcessor`), its one
#: value state: the parameters that made it, then the fields of a ``Position``.
META_SCHEMA = StructType(
    [
        StructField("params", StringType(), False),
        *(StructField(f.name, *_SPARK_TYPES[str(f.type)]) for f in fields(Position)),
    ]
)


def chained(entries: list[Any], first: str, last: str) -> bool:
    """Whether ``entries`` follow ``first`` one by one and end with ``last``."""
    head = first
    for entry in entries:
        if entry[1] != head:
            return False
        head = entry[0]
    return head == last


def write_chunks(log: Any, token: str, blob: bytes, limit: int) -> None:
    """Puts ``blob`` into the map state ``log`` (:data:`ENTRY_SCHEMA`) in chunks of at most
    ``limit`` bytes, each its own entry (its own RocksDB key): chunk ``i`` at key ``-1 - i``,
    with ``token``, its number and their count as ``part`` and ``parts``, its bytes as
    ``records``. The caller clears the map's earlier chunks first."""
    pieces = [blob[i : i + limit] for i in range(0, len(blob), limit)] or [b""]
    for part, piece in enumerate(pieces):
        log.updateValue((-1 - part,), (token, "", 0, part, len(pieces), piece))


def read_log(log: Any) -> tuple[list[Any], list[Any]]:
    """The map state ``log`` in one pass: its snapshot chunks in order (negative keys, see
    :func:`write_chunks`) and its log entries in order (keys from 0)."""
    items = sorted(log.iterator(), key=lambda kv: kv[0][0])
    chunks = [entry for key, entry in reversed(items) if key[0] < 0]
    return chunks, [entry for key, entry in items if key[0] >= 0]


def join_chunks(chunks: list[Any], token: str) -> bytes | None:
    """The blob that :func:`write_chunks` wrote under ``token``, from the chunks that
    :func:`read_log` found; None if there are none. Chunks of another snapshot, or missing
    ones, fail loudly: the state store does not hold what this query wrote."""
    if not chunks:
        return None
    if [c[3] for c in chunks] != list(range(len(chunks))) or any(
        c[0] != token or c[4] != len(chunks) for c in chunks
    ):
        raise RuntimeError(
            f"windowstore: a bucket's snapshot chunks ({len(chunks)} of them) are not the "
            f"{chunks[0][4]} chunks of snapshot {token}: the state store does not hold what "
            "this query wrote"
        )
    return b"".join(bytes(c[5]) for c in chunks)


def read_spilled(log: Any, token: str) -> bytes:
    """The snapshot of a whole-layout row past the bound (one holding no bytes, its ``token``
    naming its chunks in the map state ``log``). None there fails loudly."""
    engine = join_chunks(read_log(log)[0], token)
    if engine is None:
        raise RuntimeError(
            "windowstore: a bucket's state row holds its snapshot in chunks, and there are none: "
            "the state store does not hold what this query wrote"
        )
    return engine


def base_snapshot(at: Position, chunks: list[Any], old_base: Callable[[], Iterable[Any]]) -> bytes:
    """The base snapshot of a log-layout bucket at ``at``: its ``chunks`` (:func:`read_log`),
    else the list state of earlier versions (``old_base()``, read only then). None fails
    loudly."""
    base = join_chunks(chunks, at.base)
    if base is None:
        base = b"".join(bytes(row[0]) for row in old_base())
    if not base:
        raise RuntimeError(
            "windowstore: a bucket's meta entry names a base snapshot, and the state holds "
            "none: the state store does not hold what this query wrote"
        )
    return base


def replay_log(args: BucketArgs, p: WindowProcessor, at: Position, log: list[Any]) -> None:
    """Replays a bucket's whole ``log`` (:func:`read_log`) on ``p``, its base snapshot, after
    checking that it is the log the meta entry ``at`` counts."""
    if len(log) != at.log_next or not chained(log, at.base, at.head):
        raise RuntimeError(
            f"windowstore: a bucket's state log has {len(log)} entries, not the "
            f"{at.log_next} its meta entry counts, or they do not chain: the state store "
            "does not hold what this query wrote"
        )
    replay(args, p, log)


def replay(args: BucketArgs, p: WindowProcessor, entries: list[Any]) -> None:
    """Applies the log ``entries`` to ``p`` as their calls did; their output was emitted
    already."""
    parts: list[pa.Table] = []
    for _, _, watermark, part, n, blob in entries:
        if blob is not None:
            parts.append(pa.ipc.open_stream(blob).read_all())
        if part + 1 < n:
            continue
        records = pa.concat_tables(parts) if parts else None
        parts = []
        engine_calls(args, p, watermark, records, None)
        p.rejected()  # taken, as the call took them


def engine_calls(
    args: BucketArgs,
    p: WindowProcessor,
    watermark_ms: int,
    records: pa.Table | None,
    now_ms: int | None,
) -> list[pa.Table]:
    """The engine's calls of one bucket call (see :func:`._bucket.bucket_call`); returns their
    outputs."""
    # The wall clock's reading, for the processors that read it.
    wall: dict[str, Any] = {}
    if args.wall is not None:
        wall["now"] = now_ms
        p._resume_idle(_run_id())
    out: list[pa.Table] = []
    if watermark_ms > 0 and args.wall != "processing":
        # Spark's watermark is 0 until the first micro-batch ends.
        out.append(p.advance((watermark_ms + args.delay_ms) * 1000, **wall))
    if records is not None:
        records = args.to_engine(records)
        if args.time is not None:
            records = records.sort_by([(args.time, "ascending")])
        try:
            out.append(p.process(records, **wall))
        except InvalidRecordError as e:
            raise invalid_row(e, records) from None
    elif args.wall is not None:
        out.append(p.poll(now=now_ms))
    return out


def _run_id() -> str | None:
    """The run of the streaming query (Spark sets it as the job group of every micro-batch):
    a restart is a new run."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return None if context is None else context.getLocalProperty("spark.jobGroup.id")
