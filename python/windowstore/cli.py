"""The ``windowstore`` command line.

``windowstore demo`` generates a clickstream, sessionizes it through the segmented session
store, checks the sessions against an independent computation, and prints a summary.
"""

from __future__ import annotations

import argparse
import struct
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from windowstore._core import SessionStore
from windowstore.clickstream import clickstream

__all__ = ["main"]

_AGG = struct.Struct("<qd")  # count, sum(amount): the aggregate bytes the demo stores


def sessionize(table: pa.Table, gap_ms: int) -> tuple[SessionStore, int]:
    """Sessionizes ``user_id, ts, amount`` rows through a store, merging as Kafka does.

    Each record looks up its key's sessions with ``end >= t - gap`` and ``start <= t + gap``,
    removes them, and puts the merged session. Returns the store and the number of merges.
    """
    span = int(pc.max(table["ts"]).as_py() - pc.min(table["ts"]).as_py()) if table.num_rows else 0
    store = SessionStore(retention=span + gap_ms + 1)
    merges = 0
    for user, t, amount in zip(
        table["user_id"].to_pylist(),
        table["ts"].to_pylist(),
        table["amount"].to_pylist(),
        strict=True,
    ):
        start, end, count, total = t, t, 1, amount
        for s, e, value in store.find_sessions(user, t - gap_ms, t + gap_ms):
            c, a = _AGG.unpack(value)
            start, end, count, total = min(start, s), max(end, e), count + c, total + a
            store.remove(user, s, e)
            merges += 1
        store.put(user, start, end, _AGG.pack(count, total))
    return store, merges


def expected_sessions(table: pa.Table, gap_ms: int) -> int:
    """Counts sessions independently: per user, a new session wherever the time step > gap."""
    ordered = table.sort_by([("user_id", "ascending"), ("ts", "ascending")])
    users, ts = ordered["user_id"].to_pylist(), ordered["ts"].to_pylist()
    return sum(
        1
        for i in range(len(ts))
        if i == 0 or users[i] != users[i - 1] or ts[i] - ts[i - 1] > gap_ms
    )


def demo(args: argparse.Namespace) -> int:
    """Runs the demo; returns the process exit code."""
    gap_ms = args.gap_minutes * 60_000
    began = time.perf_counter()
    table = clickstream(args.events, users=args.users, seed=args.seed)
    generated = time.perf_counter()
    store, merges = sessionize(table, gap_ms)
    done = time.perf_counter()

    sessions = store.to_arrow()
    counts, totals = [], []
    for value in sessions["value"].to_pylist():
        c, a = _AGG.unpack(value)
        counts.append(c)
        totals.append(a)
    lengths = pc.subtract(sessions["end"], sessions["start"])
    want = expected_sessions(table, gap_ms)
    if sum(counts) != table.num_rows or sessions.num_rows != want:
        print(
            f"error: {sessions.num_rows} sessions holding {sum(counts)} events; "
            f"expected {want} sessions holding {table.num_rows}",
            file=sys.stderr,
        )
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.snap"
        store.snapshot(path)
        restored = SessionStore.restore(path)
        snapshot_bytes = path.stat().st_size
    if not restored.to_arrow().equals(sessions):
        print("error: the restored snapshot differs from the store", file=sys.stderr)
        return 1

    metrics = store.metrics()
    rate = table.num_rows / (done - generated) if done > generated else float("inf")
    print(f"windowstore {args.gap_minutes}-minute sessions over a generated clickstream")
    rows = [
        ("events", f"{table.num_rows:,}"),
        ("users", f"{len(set(table['user_id'].to_pylist())):,}"),
        ("sessions", f"{sessions.num_rows:,} (independent check: {want:,})"),
        ("merges", f"{merges:,}"),
        ("events per session", f"mean {table.num_rows / max(sessions.num_rows, 1):.1f}"),
        ("session length", f"median {_median(lengths.to_pylist()) / 60_000:.1f} min"),
        ("amount per session", f"mean {sum(totals) / max(len(totals), 1):.2f}"),
        ("store", f"{metrics['segments']} segments, {metrics['bytes']:,} bytes"),
        ("snapshot", f"{snapshot_bytes:,} bytes, restored equal"),
        (
            "time",
            f"generate {generated - began:.2f}s, sessionize {done - generated:.2f}s "
            f"({rate:,.0f} events/s through the Python API)",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return 0


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``windowstore`` command."""
    parser = argparse.ArgumentParser(prog="windowstore", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("demo", help="sessionize a generated clickstream and summarize it")
    d.add_argument("--events", type=int, default=200_000, help="events to generate")
    d.add_argument("--users", type=int, default=2_000, help="distinct users")
    d.add_argument("--gap-minutes", type=int, default=30, help="session inactivity gap")
    d.add_argument("--seed", type=int, default=7, help="random seed")
    d.set_defaults(run=demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``windowstore`` console script."""
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
