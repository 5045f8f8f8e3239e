"""A session processor's state to bytes and back, as large as a Spark bucket's state grows.

The Spark adapter's whole layout (the only one with the default state store provider) writes
each bucket's processor with ``to_bytes`` on every call, and restores it with ``from_bytes``
when a worker does not hold it; the log layout does both when it compacts or restores. This
prints, per number of open sessions (one per key, as in the long-session streaming scenario:
count, sum, min and max of an int64), the medians of:

- ``to_bytes`` and ``from_bytes`` (which checks every state and key before it returns);
- the floor beside them: the same rows written and read as plain Arrow IPC by pyarrow (the
  snapshot's sessions, without windowstore's ordering, checks, store or compression), from
  the same run.

With ``--records`` the processor tags rows (``output="records"``) and holds each session's
input row (key, time and a string column) as well: its floor is the sessions and held rows.

Run: python benches/bench_snapshot.py [--sessions 125000,1000000] [--repeat 5] [--records]
"""

from __future__ import annotations

import argparse
import io

import numpy as np
import pyarrow as pa
import zstandard
from harness import alternating_medians

from windowstore import SessionWindowProcessor, agg

AGGS = [agg.count(), agg.sum("x"), agg.min("x"), agg.max("x")]
MINUTE_US = 60_000_000


def processor(sessions: int, records: bool, seed: int = 0) -> SessionWindowProcessor:
    """A processor holding ``sessions`` open sessions of one record each (gap 30 minutes)."""
    rng = np.random.default_rng(seed)
    output = {"output": "records"} if records else {"aggs": AGGS}
    p = SessionWindowProcessor(key="k", time="t", gap=30 * MINUTE_US, grace=MINUTE_US,
                               time_unit="us", **output)  # type: ignore[arg-type]  # fmt: skip
    table = pa.table(
        {
            "k": rng.permutation(sessions).astype(np.int64),
            "t": np.sort(rng.integers(0, 10 * MINUTE_US, sessions)),
            "x": rng.integers(0, 1000, sessions),
            "page": pa.array([f"/page/{i % 977}" for i in range(sessions)]),
        }
    )
    p.process(table)
    return p


def payload(data: bytes) -> list[pa.Table]:
    """Every IPC stream in a snapshot's payload, read by pyarrow, concatenated as columns."""
    stream = pa.BufferReader(zstandard.ZstdDecompressor().decompressobj().decompress(data[20:]))
    tables = []
    while stream.tell() < stream.size():
        tables.append(pa.ipc.open_stream(stream).read_all())
    return tables


def ipc_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def measure(sessions: int, repeat: int, records: bool) -> str:
    """One line of figures for ``sessions`` open sessions."""
    p = processor(sessions, records)
    aggs = [] if records else AGGS
    data = p.to_bytes()
    back = SessionWindowProcessor.from_bytes(data, aggs=aggs)
    if back.to_bytes() != data:
        raise AssertionError("a restored processor writes other bytes")
    tables = payload(data)
    if tables[0].num_rows != sessions:
        raise AssertionError(f"{tables[0].num_rows} sessions in the snapshot, not {sessions}")
    plain = [ipc_bytes(t) for t in tables]
    (to_s, from_s, write_s, read_s), _ = alternating_medians(
        [
            p.to_bytes,
            lambda: SessionWindowProcessor.from_bytes(data, aggs=aggs),
            lambda: [ipc_bytes(t) for t in tables],
            lambda: [pa.ipc.open_stream(b).read_all() for b in plain],
        ],
        repeat,
    )
    return (
        f"{sessions:>13,}  {len(data) / 2**20:6.1f} MiB  {to_s * 1e3:6.0f} ms  "
        f"{from_s * 1e3:7.0f} ms  | {write_s * 1e3:12.0f} ms  {read_s * 1e3:4.0f} ms   "
        f"({sessions / to_s / 1e6:.2f} M sessions/s written, {sessions / from_s / 1e6:.2f} M read)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", default="125000,1000000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--records", action="store_true", help='output="records"')
    a = parser.parse_args()
    print("open sessions  bytes      to_bytes  from_bytes  | Arrow IPC write  read  (floor)")
    for sessions in [int(n) for n in a.sessions.split(",")]:
        print(measure(sessions, a.repeat, a.records), flush=True)


if __name__ == "__main__":
    main()
