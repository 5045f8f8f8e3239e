"""A session processor's state to bytes and back, as large as a Spark bucket's state grows.

The Spark adapter's whole layout (the only one with the default state store provider) writes
each bucket's processor with ``to_bytes`` on every call, and restores it with ``from_bytes``
when a worker does not hold it; the log layout does both when it compacts or restores. This
prints, per number of open sessions (one per key, as in the long-session streaming scenario:
count, sum, min and max of an int64), the medians of:

- ``to_bytes`` and ``from_bytes`` (which checks every state and key before it returns);
- the floor beside them: the same rows written and read as plain Arrow IPC by pyarrow (the
  snapshot's payload, without windowstore's ordering, checks or store), from the same run.

Run: python benches/bench_snapshot.py [--sessions 125000,1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import io

import numpy as np
import pyarrow as pa
from harness import alternating_medians

from windowstore import SessionWindowProcessor, agg

AGGS = [agg.count(), agg.sum("x"), agg.min("x"), agg.max("x")]
MINUTE_US = 60_000_000


def processor(sessions: int, seed: int = 0) -> SessionWindowProcessor:
    """A processor holding ``sessions`` open sessions of one record each (gap 30 minutes)."""
    rng = np.random.default_rng(seed)
    p = SessionWindowProcessor(key="k", time="t", gap=30 * MINUTE_US, grace=MINUTE_US,
                               time_unit="us", aggs=AGGS)  # fmt: skip
    table = pa.table(
        {
            "k": rng.permutation(sessions).astype(np.int64),
            "t": np.sort(rng.integers(0, 10 * MINUTE_US, sessions)),
            "x": rng.integers(0, 1000, sessions),
        }
    )
    p.process(table)
    return p


def ipc_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def measure(sessions: int, repeat: int) -> str:
    """One line of figures for ``sessions`` open sessions."""
    p = processor(sessions)
    data = p.to_bytes()
    back = SessionWindowProcessor.from_bytes(data, aggs=AGGS)
    if back.to_bytes() != data:
        raise AssertionError("a restored processor writes other bytes")
    rows = pa.ipc.open_stream(data[20:]).read_all()
    if rows.num_rows != sessions:
        raise AssertionError(f"{rows.num_rows} rows in the snapshot, not {sessions}")
    plain = ipc_bytes(rows)
    (to_s, from_s, write_s, read_s), _ = alternating_medians(
        [
            p.to_bytes,
            lambda: SessionWindowProcessor.from_bytes(data, aggs=AGGS),
            lambda: ipc_bytes(rows),
            lambda: pa.ipc.open_stream(plain).read_all(),
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
    a = parser.parse_args()
    print("open sessions  bytes      to_bytes  from_bytes  | Arrow IPC write  read  (floor)")
    for sessions in [int(n) for n in a.sessions.split(",")]:
        print(measure(sessions, a.repeat), flush=True)


if __name__ == "__main__":
    main()
