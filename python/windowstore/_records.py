"""Sessions tagged on rows (``output="records"``): every input row with its session's bounds and id.

The core only outputs windows, so rows are tagged with its own means: every row gets a hidden
sequence number (column `ROW`), the sessions collect those numbers (an unbounded
``agg.collect``, which keeps them in event-time order, ties in arrival order), and the collected
lists are exploded to take the rows back. This works for every column type, since the core reads
only the key, time and gap columns and the sequence numbers.

The streaming processor holds the accepted rows of open sessions (`HeldRecords`) until their
session closes; they are part of its state and travel in its bytes and snapshots.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from windowstore import _core
from windowstore._processor import arrow_data
from windowstore.agg import Agg
from windowstore.exceptions import InternalError, InvalidWindowSpec, SchemaError, SnapshotError

__all__ = [
    "MAGIC",
    "ROW",
    "ROWS",
    "SESSION_COLUMNS",
    "HeldRecords",
    "Output",
    "as_table",
    "check_columns",
    "check_output",
    "complete_records",
    "rows_agg",
    "session_ids",
]

#: The hidden input column of row sequence numbers.
ROW = "__windowstore_row"
#: The hidden aggregate: the sequence numbers of a session's rows, in event-time order.
ROWS = "__windowstore_rows"
#: The columns ``output="records"`` adds to every row.
SESSION_COLUMNS = ("session_start", "session_end", "session_id")
#: The first bytes of a records-mode processor's state (the core's own start ``WSSNAP``).
MAGIC = b"WSRECS\x00\x01"

#: What session windows output: one row per session, or every input row tagged with its session.
Output = Literal["windows", "records"]

_CoreAgg = tuple[str, str | None, str | None, int | None, str | None]


def rows_agg() -> _CoreAgg:
    """The hidden ``collect`` of the row numbers, in the form the core takes (unbounded)."""
    return ("collect", ROW, ROWS, None, "drop_oldest")


def check_output(output: object, aggs: Sequence[Agg], emit: str = "final") -> bool:
    """Whether ``output`` asks for records; refuses what records mode cannot do."""
    if output not in ("windows", "records"):
        raise InvalidWindowSpec(
            f'invalid output: {output!r}; expected "windows" or "records"', "output"
        )
    if output == "windows":
        return False
    if emit != "final":
        raise InvalidWindowSpec(
            f'invalid output: "records" needs emit="final" (a session\'s rows come out once, '
            f"when it closes), not emit={emit!r}",
            "output",
        )
    if isinstance(aggs, Agg | str) or len(list(aggs)):
        raise InvalidWindowSpec(
            'invalid aggs: output="records" tags rows with their session and takes no '
            "aggregations; group the tagged rows by session_id to aggregate them",
            "aggs",
        )
    return True


def as_table(data: Any) -> pa.Table:
    """``data`` (anything with the Arrow PyCapsule interface) as one table, view-typed columns
    (polars' strings) read as their plain types, as the core reads them: records mode needs the
    rows at hand, and takes rows by index, which view types do not support."""
    if isinstance(data, pa.Table):
        table = data
    elif isinstance(data, pa.RecordBatch):
        table = pa.Table.from_batches([data])
    elif isinstance(data, pa.RecordBatchReader):
        table = data.read_all()
    else:
        table = pa.table(arrow_data(data))
    for i, f in enumerate(table.schema):
        plain = _PLAIN.get(f.type)
        if plain is not None:
            table = table.set_column(i, f.with_type(plain), table.column(i).cast(plain))
    return table


#: View types and the plain types the core reads them as.
_PLAIN = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` in ``schema`` (the columns of the first batch, plus the hidden row column): the
    same columns by name in any order, each cast to its first type (nullability, encodings);
    a column that cannot be is a ``SchemaError`` naming it, raised before any state changes."""
    names = [f.name for f in schema if f.name != ROW]
    if sorted(names) != sorted(table.column_names):
        return table  # the core refuses it, naming the column
    columns = []
    for f in schema:
        if f.name == ROW:
            continue
        column = table.column(f.name)
        try:
            columns.append(column.cast(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaError(
                f'column "{f.name}": type {column.type} where the first batch had {f.type}: {e}',
                f.name,
            ) from None
    return pa.Table.from_arrays(columns, schema=pa.schema([f for f in schema if f.name != ROW]))


def check_columns(names: Sequence[str]) -> None:
    """Refuses input columns whose names records mode needs for itself."""
    for name in (*SESSION_COLUMNS, ROW, ROWS):
        if name in names:
            raise SchemaError(
                f'column "{name}": output="records" adds session_start, session_end and '
                f"session_id to the input's columns (and uses {ROW} internally); rename the "
                "input column",
                name,
            )


def numbered(table: pa.Table, first: int) -> pa.Table:
    """``table`` with the hidden column of sequence numbers ``first, first + 1, ...``."""
    seq = np.arange(first, first + table.num_rows, dtype=np.int64)
    return table.append_column(pa.field(ROW, pa.int64(), nullable=False), pa.array(seq))


# --- session ids -------------------------------------------------------------------------------

_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _id_fields(column: pa.ChunkedArray | pa.Array) -> list[bytes]:
    """The canonical form of each value for the session id: a type tag and the value's text.

    Integers in decimal (``i``), booleans (``b``), strings as UTF-8 (``s``), binary as is
    (``y``), dates as days since the epoch (``d``), timestamps as nanoseconds since the epoch
    whatever their unit and zone (``t``): the same value gives the same form in every engine
    (Spark's long, Arrow's int32; Spark's microseconds, Arrow's milliseconds)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = array.type
    if pa.types.is_dictionary(t):
        array = array.dictionary_decode()
        t = array.type
    if pa.types.is_timestamp(t):
        factor = _NANOS[t.unit]
        return [b"t%d" % (v * factor) for v in array.cast(pa.int64()).to_pylist()]
    if pa.types.is_date32(t):
        return [b"d%d" % v for v in array.cast(pa.int32()).to_pylist()]
    if pa.types.is_date64(t):
        return [b"d%d" % (v // 86_400_000) for v in array.cast(pa.int64()).to_pylist()]
    if pa.types.is_integer(t):
        return [b"i%d" % v for v in array.to_pylist()]
    if pa.types.is_boolean(t):
        return [b"b1" if v else b"b0" for v in array.to_pylist()]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return [b"s" + v.encode() for v in array.to_pylist()]
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return [b"y" + v for v in array.to_pylist()]
    return [b"o" + repr(v).encode() for v in array.to_pylist()]


def session_ids(windows: pa.Table, key: Sequence[str]) -> pa.Array:
    """The ``session_id`` of each window: a signed 64-bit BLAKE2b hash (8-byte digest, read
    big-endian) of the key values in key order then ``session_start``, each in its canonical
    form (:func:`_id_fields`) behind its length as 4 big-endian bytes."""
    columns = [_id_fields(windows.column(k)) for k in key]
    columns.append(_id_fields(windows.column("session_start")))
    ids = []
    for values in zip(*columns, strict=True):
        h = hashlib.blake2b(digest_size=8)
        for v in values:
            h.update(len(v).to_bytes(4, "big"))
            h.update(v)
        ids.append(int.from_bytes(h.digest(), "big", signed=True))
    return pa.array(ids, pa.int64())


# --- from windows to rows ----------------------------------------------------------------------


def _in_order(windows: pa.Table, key: Sequence[str]) -> pa.Table:
    """``windows`` by key values (dictionaries decoded), then session start."""
    if windows.num_rows < 2:
        return windows
    columns = {}
    for i, k in enumerate(key):
        c = windows.column(k)
        if pa.types.is_dictionary(c.type):
            c = c.combine_chunks().dictionary_decode()
        columns[f"k{i}"] = c
    columns["start"] = windows.column("session_start")
    order = pc.sort_indices(pa.table(columns), sort_keys=[(n, "ascending") for n in columns])
    return windows.take(order)


def _exploded(windows: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The row numbers the windows collected, in output order, and each one's window index."""
    lists = windows.column(ROWS).combine_chunks()
    seqs = pc.list_flatten(lists).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    return seqs, parents


def _tagged(rows: pa.Table, windows: pa.Table, parents: np.ndarray, key: Sequence[str]) -> pa.Table:
    """``rows`` (one per exploded row number, hidden column dropped) with their session's
    ``session_start``, ``session_end`` and ``session_id``."""
    at = pa.array(parents, pa.int64())
    out = rows.drop_columns([ROW]) if ROW in rows.column_names else rows
    start = windows.column("session_start")
    end = windows.column("session_end")
    out = out.append_column(pa.field("session_start", start.type), start.take(at))
    out = out.append_column(pa.field("session_end", end.type), end.take(at))
    ids = session_ids(windows, key)
    return out.append_column(pa.field("session_id", pa.int64()), ids.take(at))


def complete_records(data: Any, core_kwargs: dict[str, Any]) -> tuple[pa.Table, pa.Table]:
    """Complete mode, records output: ``(tagged rows, rejected rows)``.

    ``core_kwargs`` are those of ``_core.session_windows`` without ``aggs``. Sessions come by
    key, then start; the rows of a session by time, ties in input order."""
    table = as_table(data)
    check_columns(table.column_names)
    windows, rejected, _clamped = _core.session_windows(
        numbered(table, 0), **core_kwargs, aggs=[rows_agg()]
    )
    windows = _in_order(windows, core_kwargs["key"])
    seqs, parents = _exploded(windows)
    rows = table.take(pa.array(seqs, pa.int64()))
    return _tagged(rows, windows, parents, core_kwargs["key"]), rejected.drop_columns([ROW])


# --- the streaming processor's held rows --------------------------------------------------------


@dataclass(frozen=True)
class _Segment:
    """Held rows of one call: their sequence numbers (ascending) and the rows themselves."""

    seqs: np.ndarray
    rows: pa.Table


@dataclass
class HeldRecords:
    """A records-mode processor's Python-side state: the accepted rows not emitted yet (one
    segment per call, shrunk as sessions close), the rejected rows not taken yet, and the next
    sequence number. Every method that changes it commits only once nothing can fail."""

    key: list[str]
    next_seq: int = 0
    #: The input's schema with the hidden column, once a call has bound it.
    schema: pa.Schema | None = None
    segments: list[_Segment] = field(default_factory=list)
    rejected: list[pa.Table] = field(default_factory=list)
    rejected_schema: pa.Schema | None = None

    @property
    def held_rows(self) -> int:
        """How many rows are held."""
        return sum(s.rows.num_rows for s in self.segments)

    @property
    def held_bytes(self) -> int:
        """The Arrow size of the held rows' buffers (shared buffers counted once per segment)."""
        return sum(s.rows.nbytes for s in self.segments)

    def number(self, data: Any) -> pa.Table:
        """The call's input with the hidden sequence numbers (changes nothing)."""
        table = as_table(data)
        check_columns(table.column_names)
        if self.schema is not None:
            table = conformed(table, self.schema)
        return numbered(table, self.next_seq)

    def processed(self, table: pa.Table, windows: pa.Table, rejected: pa.Table | None) -> pa.Table:
        """After the core accepted ``table`` (numbered): holds its accepted rows, keeps its
        rejected rows, and returns the rows of the sessions ``windows`` closes."""
        segments = list(self.segments)
        if self.schema is not None and table.schema != self.schema:
            table = table.cast(self.schema)  # the core checked the types: only nullability
        accepted = table
        if rejected is not None and rejected.num_rows:
            accepted = table.filter(pc.invert(pc.is_in(table.column(ROW), rejected.column(ROW))))
        if accepted.num_rows:
            seqs = accepted.column(ROW).to_numpy().astype(np.int64, copy=False)
            segments.append(_Segment(seqs, accepted))
        records, segments = self._emit(segments, windows, table.schema)
        kept = [] if rejected is None else [rejected.drop_columns([ROW])]
        # Commit: nothing below can fail.
        self.schema = table.schema
        self.segments = segments
        self.next_seq += table.num_rows
        if kept:
            self.rejected_schema = kept[0].schema
            if kept[0].num_rows:
                self.rejected.append(kept[0])
        return records

    def emitted(self, windows: pa.Table | None) -> pa.Table:
        """The rows of the sessions ``windows`` (from ``advance`` or ``flush``) closes."""
        if windows is None:
            return pa.table({})
        records, segments = self._emit(list(self.segments), windows, self.schema)
        self.segments = segments
        return records

    def take_rejected(self) -> pa.Table:
        """The rejected rows not taken yet (input columns and ``reason``), and forgets them."""
        if self.rejected_schema is None:
            return pa.table({})
        out = (
            pa.concat_tables(self.rejected) if self.rejected else self.rejected_schema.empty_table()
        )
        self.rejected = []
        return out

    def _emit(
        self, segments: list[_Segment], windows: pa.Table, schema: pa.Schema | None
    ) -> tuple[pa.Table, list[_Segment]]:
        """The tagged rows of ``windows`` and the segments without them (``segments`` itself is
        not changed)."""
        windows = _in_order(windows, self.key)
        seqs, parents = _exploded(windows)
        if not len(seqs):
            if schema is None:  # no rows seen yet: nothing to tag, no schema to give
                return pa.table({}), segments
            rows = schema.empty_table()
            return _tagged(rows, windows, parents, self.key), segments
        starts = np.array([s.seqs[0] for s in segments], dtype=np.int64)
        which = np.searchsorted(starts, seqs, side="right") - 1
        missing = InternalError("records mode: a closed session holds a row that is not held")
        if (which < 0).any():
            raise missing
        pieces: list[pa.Table] = []
        order: list[np.ndarray] = []
        out = list(segments)
        for i in np.unique(which):
            segment = segments[i]
            wanted = np.flatnonzero(which == i)
            pos = np.searchsorted(segment.seqs, seqs[wanted])
            if (pos >= len(segment.seqs)).any() or (segment.seqs[pos] != seqs[wanted]).any():
                raise missing
            pieces.append(segment.rows.take(pa.array(pos, pa.int64())))
            order.append(wanted)
            keep = np.ones(len(segment.seqs), dtype=bool)
            keep[pos] = False
            out[i] = _Segment(segment.seqs[keep], segment.rows.filter(pa.array(keep)))
        rows = pa.concat_tables(pieces)
        # The pieces come segment by segment: put the rows back in output order.
        rows = rows.take(pa.array(np.argsort(np.concatenate(order), kind="stable"), pa.int64()))
        remaining = [s for s in out if len(s.seqs)]
        return _tagged(rows, windows, parents, self.key), remaining

    # --- bytes ---------------------------------------------------------------------------------

    def to_bytes(self, core: bytes) -> bytes:
        """The whole state: ``MAGIC``, a SHA-256 of the rest, then four length-prefixed
        sections: a JSON header, the core's bytes, the held rows and the rejected rows (Arrow
        IPC streams)."""
        header = json.dumps({"version": 1, "key": self.key, "next_seq": self.next_seq}).encode()
        held = None
        if self.schema is not None:
            held = pa.concat_tables([self.schema.empty_table(), *(s.rows for s in self.segments)])
        rejected = None
        if self.rejected_schema is not None:
            rejected = pa.concat_tables([self.rejected_schema.empty_table(), *self.rejected])
        body = b"".join(
            struct.pack("<Q", len(part)) + part
            for part in (header, core, _ipc(held), _ipc(rejected))
        )
        return MAGIC + hashlib.sha256(body).digest() + body

    @staticmethod
    def from_bytes(data: bytes, kind: str, path: str | None = None) -> tuple[Any, HeldRecords]:
        """The core processor and the held records of :meth:`to_bytes`'s output; refuses
        damaged bytes whole with ``SnapshotError``."""

        def damaged(why: str) -> SnapshotError:
            return SnapshotError(f"records-mode processor state refused: {why}", path)

        digest, body = data[len(MAGIC) : len(MAGIC) + 32], data[len(MAGIC) + 32 :]
        if hashlib.sha256(body).digest() != digest:
            raise damaged("checksum mismatch (truncated or altered)")
        parts: list[bytes] = []
        at = 0
        while at < len(body):
            (n,) = struct.unpack_from("<Q", body, at)
            parts.append(body[at + 8 : at + 8 + n])
            at += 8 + n
        if len(parts) != 4 or at != len(body):
            raise damaged("unexpected layout")
        try:
            header = json.loads(parts[0])
            if header.get("version") != 1:
                raise damaged(f"unknown version {header.get('version')!r}")
            state = HeldRecords(key=list(header["key"]), next_seq=int(header["next_seq"]))
            held, rejected = _from_ipc(parts[2]), _from_ipc(parts[3])
        except (ValueError, KeyError, TypeError, pa.ArrowException) as e:
            raise damaged(str(e)) from None
        if held is not None:
            if ROW not in held.column_names or held.schema.field(ROW).type != pa.int64():
                raise damaged("held rows without their sequence numbers")
            seqs = held.column(ROW).to_numpy().astype(np.int64, copy=False)
            if (np.diff(seqs) <= 0).any() or (len(seqs) and seqs[-1] >= state.next_seq):
                raise damaged("held rows out of sequence")
            state.schema = held.schema
            if len(seqs):
                state.segments = [_Segment(seqs, held)]
        if rejected is not None:
            state.rejected_schema = rejected.schema
            state.rejected = [rejected] if rejected.num_rows else []
        try:
            inner = _core.Processor.from_bytes(parts[1], kind)
        except SnapshotError as e:
            raise SnapshotError(str(e), path) from None
        return inner, state


def _ipc(table: pa.Table | None) -> bytes:
    if table is None:
        return b""
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _from_ipc(data: bytes) -> pa.Table | None:
    return pa.ipc.open_stream(data).read_all() if data else None
