"""Wall-clock time for session processors: processing-time sessions and idle streams.

Two features read the wall clock (``SessionWindowProcessor(clock="processing")`` and
``idle_timeout=``). Both are built on the core's stream time, which only the records and
``advance(t)`` move: a processing-time processor stamps every record with its arrival time (epoch
milliseconds, in a hidden time column) and advances stream time to the clock's reading; an idle
event-time processor advances stream time with the wall clock once no record has arrived for
``idle_timeout``.

The settings (clock, idle timeout, the time column's tick) travel in the processor's bytes in a
small envelope around the core's (or records mode's) own bytes; see :func:`wrap` and
:func:`unwrap`.
"""

from __future__ import annotations

import hashlib
import json
import struct
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

import pyarrow as pa

from windowstore.exceptions import InvalidWindowSpec, SchemaError, SnapshotError

__all__ = [
    "ARRIVAL",
    "MAGIC",
    "Clock",
    "IdleClock",
    "Settings",
    "Stamp",
    "tick_nanos",
    "unwrap",
    "wall_ms",
    "wrap",
]

#: What gives a record its time: its time column, or its arrival on the wall clock.
Clock = Literal["event", "processing"]
#: A wall-clock reading: epoch milliseconds, or a timezone-aware ``datetime``.
Stamp = int | datetime
#: The hidden time column of a processing-time processor: arrival times, epoch milliseconds.
ARRIVAL = "__windowstore_arrival"
#: The first bytes of a processor's state with clock settings (the core's start ``WSSNAP``,
#: records mode's ``WSRECS``).
MAGIC = b"WSCLOCK\x01"

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_TICK_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def wall_ms(now: Stamp | None) -> int:
    """The clock reading ``now`` as epoch milliseconds; the system clock if ``None``.

    Raises:
        InvalidWindowSpec: ``now`` is a naive ``datetime`` (names ``now``).
        TypeError: ``now`` is neither an int, a ``datetime`` nor ``None``.
    """
    if now is None:
        return time.time_ns() // 1_000_000
    if isinstance(now, datetime):
        if now.tzinfo is None or now.utcoffset() is None:
            raise InvalidWindowSpec(
                f"invalid now: {now!r} has no time zone; pass an aware datetime "
                "(datetime.now(timezone.utc)) or epoch milliseconds",
                "now",
            )
        return (now - _EPOCH) // timedelta(milliseconds=1)
    if isinstance(now, bool) or not isinstance(now, int):
        raise TypeError(
            f"now must be epoch milliseconds (int) or an aware datetime, not {type(now).__name__}"
        )
    return now


def tick_nanos(schema: pa.Schema, time: str, time_unit: str | None) -> int | None:
    """The length of one tick of the time column in nanoseconds, or ``None`` if ``schema`` has
    no usable time column (the core then refuses the input with its own error)."""
    i = schema.get_field_index(time)
    if i < 0:
        return None
    t = schema.field(i).type
    if pa.types.is_timestamp(t):
        return _TICK_NANOS[t.unit]
    if pa.types.is_integer(t):
        return _TICK_NANOS[time_unit or "ms"]
    return None


def stamped(table: pa.Table, at_ms: int) -> pa.Table:
    """``table`` with every row's arrival time ``at_ms`` in the hidden column :data:`ARRIVAL`."""
    if ARRIVAL in table.column_names:
        raise SchemaError(
            f'column "{ARRIVAL}": a processing-time processor adds it to the input; rename '
            "the input column",
            ARRIVAL,
        )
    arrival = pa.array([at_ms] * table.num_rows, pa.int64()).cast(pa.timestamp("ms", "UTC"))
    return table.append_column(pa.field(ARRIVAL, arrival.type, nullable=False), arrival)


def without_arrival(table: pa.Table) -> pa.Table:
    """``table`` without the hidden arrival column (rejected and tagged rows show the input's
    own columns)."""
    return table.drop_columns([ARRIVAL]) if ARRIVAL in table.column_names else table


@dataclass(frozen=True)
class IdleClock:
    """When the last record arrived (epoch ms) and the stream time just after it: an idle
    processor's stream time runs from there with the wall clock."""

    wall_ms: int
    stream_time: int
    #: An opaque token of whoever drives the processor (the Spark adapter: the query's run),
    #: so that a restore can tell a continuation from a restart.
    run: str | None = None


@dataclass(frozen=True)
class Settings:
    """What a processor's bytes carry beside the core's state."""

    clock: Clock
    #: ``idle_timeout`` as ``to_duration`` gives it, or ``None``.
    idle_timeout: tuple[str, int] | None
    #: The tick of the time column in nanoseconds, once a batch has shown it.
    tick_ns: int | None
    #: The idle clock when the bytes were written (kept only by a caller that says so).
    idle: IdleClock | None
    #: The time column and the unit of an integer one (the tick of a later first batch).
    time: str | None
    time_unit: str | None

    def header(self) -> bytes:
        idle = None if self.idle is None else [*_idle_fields(self.idle)]
        return json.dumps(
            {
                "version": 1,
                "clock": self.clock,
                "idle_timeout": None if self.idle_timeout is None else list(self.idle_timeout),
                "tick_ns": self.tick_ns,
                "idle": idle,
                "time": self.time,
                "time_unit": self.time_unit,
            }
        ).encode()


def _idle_fields(idle: IdleClock) -> tuple[int, int, str | None]:
    return idle.wall_ms, idle.stream_time, idle.run


def wrap(settings: Settings, inner: bytes) -> bytes:
    """``MAGIC``, a SHA-256 of the rest, then the JSON header and the inner state, each behind
    its length (8 bytes, little-endian)."""
    header = settings.header()
    body = struct.pack("<Q", len(header)) + header + struct.pack("<Q", len(inner)) + inner
    return MAGIC + hashlib.sha256(body).digest() + body


def unwrap(data: bytes, path: str | None = None) -> tuple[Settings, bytes]:
    """The settings and the inner state of :func:`wrap`'s output; refuses damaged bytes whole
    with ``SnapshotError``."""

    def damaged(why: str) -> SnapshotError:
        return SnapshotError(f"processor state with clock settings refused: {why}", path)

    digest, body = data[len(MAGIC) : len(MAGIC) + 32], data[len(MAGIC) + 32 :]
    if hashlib.sha256(body).digest() != digest:
        raise damaged("checksum mismatch (truncated or altered)")
    try:
        (n,) = struct.unpack_from("<Q", body, 0)
        header = body[8 : 8 + n]
        (m,) = struct.unpack_from("<Q", body, 8 + n)
        inner = body[16 + n : 16 + n + m]
        if 16 + n + m != len(body):
            raise damaged("unexpected layout")
        fields: dict[str, Any] = json.loads(header)
        if fields.get("version") != 1:
            raise damaged(f"unknown version {fields.get('version')!r}")
        clock = fields["clock"]
        if clock not in ("event", "processing"):
            raise damaged(f"unknown clock {clock!r}")
        idle_timeout = fields["idle_timeout"]
        tick_ns = fields["tick_ns"]
        idle = fields["idle"]
        settings = Settings(
            clock=clock,
            idle_timeout=None
            if idle_timeout is None
            else (str(idle_timeout[0]), int(idle_timeout[1])),
            tick_ns=None if tick_ns is None else int(tick_ns),
            idle=None
            if idle is None
            else IdleClock(int(idle[0]), int(idle[1]), None if idle[2] is None else str(idle[2])),
            time=None if fields["time"] is None else str(fields["time"]),
            time_unit=None if fields["time_unit"] is None else str(fields["time_unit"]),
        )
    except (struct.error, ValueError, KeyError, TypeError, IndexError) as e:
        raise damaged(str(e)) from None
    return settings, inner
