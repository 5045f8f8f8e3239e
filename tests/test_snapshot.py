"""Store snapshots from Python: round trip, damage refused whole, and real crashes mid-write;
processor snapshots edited and re-checksummed, refused on what they hold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import zstandard

from windowstore import SessionStore, SessionWindowProcessor, SnapshotError, agg

HEADER_LEN = 20


def sample() -> SessionStore:
    store = SessionStore(100, segment_interval=10)
    for i in range(300):
        store.put(f"user-{i % 13}", i * 3, i * 3 + i % 4, i.to_bytes(8, "little"))
    store.put("late", 0, 0, b"expired")
    return store


def rows(store: SessionStore) -> list[tuple[bytes, int, int, bytes]]:
    return store.fetch_range(b"", b"\xff" * 16)


def test_round_trip(tmp_path: Path) -> None:
    store = sample()
    path = tmp_path / "s.snap"
    store.snapshot(path)
    back = SessionStore.restore(str(path))
    assert rows(back) == rows(store)
    assert rows(store)
    assert back.store_time == store.store_time
    assert (back.retention, back.segment_interval) == (100, 10)
    for name in ("puts", "removes", "expired_puts"):
        assert back.metrics()[name] == store.metrics()[name], name
    assert back.metrics()["expired_puts"] == 1
    # Sessions that expired in a segment still held for its live ones are left out of the
    # snapshot and counted as expired: the count the store reaches once their segment goes.
    live, expired = store.metrics()["live_sessions"], store.metrics()["expired_sessions"]
    assert live is not None
    assert expired is not None
    held_expired = live - len(rows(store))
    assert held_expired > 0, "the sample has a segment of expired and live sessions"
    assert back.metrics()["live_sessions"] == len(rows(store))
    assert back.metrics()["expired_sessions"] == expired + held_expired
    store.put("later", 2000, 2000, b"")
    back.put("later", 2000, 2000, b"")
    assert back.metrics()["expired_sessions"] == store.metrics()["expired_sessions"]


def test_payload_is_arrow_ipc(tmp_path: Path) -> None:
    path = tmp_path / "s.snap"
    sample().snapshot(path)
    # The payload is a zstd frame of an Arrow IPC stream.
    table = pa.ipc.open_stream(zstandard.decompress(path.read_bytes()[HEADER_LEN:])).read_all()
    assert table.column_names == ["key", "start", "end", "value"]
    assert table.num_rows == len(rows(sample()))
    assert table.schema.metadata[b"windowstore.retention"] == b"100"


@pytest.mark.parametrize("tenth", range(10))
def test_truncated_file_is_refused(tmp_path: Path, tenth: int) -> None:
    path = tmp_path / "s.snap"
    sample().snapshot(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * tenth // 10])
    with pytest.raises(SnapshotError, match="truncated") as info:
        SessionStore.restore(path)
    assert info.value.path == str(path)


@pytest.mark.parametrize("where", [0, 9, 17, HEADER_LEN + 3, -100, -1])
def test_flipped_byte_is_refused(tmp_path: Path, where: int) -> None:
    path = tmp_path / "s.snap"
    sample().snapshot(path)
    data = bytearray(path.read_bytes())
    data[where] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(SnapshotError):
        SessionStore.restore(path)


def test_missing_and_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="cannot read"):
        SessionStore.restore(tmp_path / "nope")
    (tmp_path / "x.parquet").write_bytes(b"PAR1" + b"\0" * 64)
    with pytest.raises(SnapshotError, match="not a windowstore snapshot"):
        SessionStore.restore(tmp_path / "x.parquet")


WRITER = textwrap.dedent(
    """
    import sys
    from windowstore import SessionStore
    path = sys.argv[1]
    stores = []
    for tag in (b"A", b"B"):
        s = SessionStore(10**12)
        for i in range(200_000):
            s.put(b"key-%d" % (i % 5000), i, i, tag * 64)
        stores.append(s)
    stores[0].snapshot(path)
    print("ready", flush=True)
    i = 1
    while True:
        stores[i % 2].snapshot(path)
        i += 1
    """
)


def test_killed_writer_never_leaves_a_damaged_snapshot(tmp_path: Path) -> None:
    """SIGKILL a process that snapshots in a loop: every restore gives one whole snapshot."""
    path = tmp_path / "s.snap"
    seen: set[bytes] = set()
    for delay in (0.0, 0.05, 0.13, 0.31, 0.6):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        store = SessionStore.restore(path)
        values = {v for _, _, _, v in store.find_sessions_by_end(0, 10**9)}
        assert len(values) == 1, "one snapshot, not a mix"
        assert store.metrics()["live_sessions"] == 200_000
        seen |= values
    assert seen <= {b"A" * 64, b"B" * 64}


# --- edited processor snapshots: a valid checksum is not enough -------------------------------


def _streams(data: bytes) -> list[pa.Table]:
    """The Arrow IPC streams of snapshot bytes: the sessions, then the processor's tables."""
    payload = zstandard.ZstdDecompressor().decompressobj().decompress(data[HEADER_LEN:])
    source = pa.BufferReader(payload)
    streams = []
    while source.tell() < len(payload):
        streams.append(pa.ipc.open_stream(source).read_all())
    return streams


def _edited(data: bytes, meta: dict[str, str] | None = None, rows: int | None = None) -> bytes:
    """``data`` with metadata fields of the sessions' stream replaced (the processor's under
    ``windowstore.session.``) or its rows cut to ``rows``, re-checksummed: what an editor that
    knows the layout writes."""
    streams = _streams(data)
    first = streams[0] if rows is None else streams[0].slice(0, rows)
    fields = dict(first.schema.metadata)
    fields.update({k.encode(): v.encode() for k, v in (meta or {}).items()})
    streams[0] = first.replace_schema_metadata(fields)
    sink = pa.BufferOutputStream()
    for table in streams:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    payload = zstandard.ZstdCompressor(level=1).compress(sink.getvalue().to_pybytes())
    header = b"WSSNAP\x00\x02" + len(payload).to_bytes(8, "little")
    return header + zlib.crc32(payload).to_bytes(4, "little") + payload


def _running() -> SessionWindowProcessor:
    p = SessionWindowProcessor(key="k", time="t", gap=5, grace=0, aggs=[agg.count(), agg.sum("v")])
    p.process(pa.table({"k": ["a", "b", "a", "c"], "t": [1, 2, 30, 31], "v": [1, 2, 3, 4]}))
    return p


def test_an_edit_with_a_valid_checksum_reads_back_when_nothing_changed() -> None:
    data = _running().to_bytes()
    assert SessionWindowProcessor.from_bytes(_edited(data)).to_bytes() == data


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        # Stream time behind the records the windows hold.
        ({"meta": {"windowstore.session.stream_time": "-1"}}, "after the stream time -1"),
        ({"meta": {"windowstore.session.stream_time": "30"}}, "after the stream time 30"),
        # The aggregate list emptied or cut: the states hold more than it says.
        ({"meta": {"windowstore.session.aggs": ""}}, "do not hold the snapshot's 0 aggregates"),
        (
            {"meta": {"windowstore.session.aggs": "count:-:-:-:-"}},
            "do not hold the snapshot's 1 aggregates",
        ),
        # A session row dropped.
        ({"rows": 1}, "declares 2 sessions and holds 1"),
    ],
)
def test_an_edited_snapshot_is_refused_naming_what_is_inconsistent(
    edit: dict[str, Any], why: str
) -> None:
    with pytest.raises(SnapshotError, match=why):
        SessionWindowProcessor.from_bytes(_edited(_running().to_bytes(), **edit))


def test_emitted_windows_beyond_stream_time_are_refused() -> None:
    p = _running()
    p.advance(100)
    data = p.to_bytes()
    with pytest.raises(SnapshotError, match="emitted up to 100, beyond stream time 50"):
        SessionWindowProcessor.from_bytes(_edited(data, {"windowstore.session.stream_time": "50"}))
