"""The ``windowstore`` command line.

``windowstore demo`` generates a clickstream (Zipf users, bursts separated by idle gaps),
sessionizes it with the complete-data engine and with the streaming processor (records delayed
within the grace, a snapshot and restore half-way), checks that both give the same sessions as an
independent computation, and prints a summary.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from windowstore import agg
from windowstore.clickstream import clickstream
from windowstore.sessions import SessionWindowProcessor, session_windows

__all__ = ["main"]

_AGGS = [agg.count(), agg.sum("amount"), agg.max("amount")]
_KEYS = ["user_id", "session_start", "session_end", "count"]


def expected_sessions(table: pa.Table, gap_ms: int) -> int:
    """Counts sessions independently: per user, a new session wherever the time step > gap."""
    ordered = table.sort_by([("user_id", "ascending"), ("ts", "ascending")])
    users = ordered["user_id"].to_numpy(zero_copy_only=False)
    ts = ordered["ts"].to_numpy()
    if len(ts) == 0:
        return 0
    new = np.ones(len(ts), dtype=bool)
    new[1:] = (users[1:] != users[:-1]) | (np.diff(ts) > gap_ms)
    return int(new.sum())


def _streamed(table: pa.Table, gap_ms: int, grace_ms: int, seed: int) -> tuple[pa.Table, int]:
    """The records delayed within the grace, streamed in batches with a snapshot half-way."""
    rng = np.random.default_rng(seed)
    n = table.num_rows
    delay = np.where(rng.random(n) < 0.1, rng.integers(0, grace_ms, n), 0)
    arriving = table.take(pa.array(np.argsort(table["ts"].to_numpy() + delay, kind="stable")))
    batches = arriving.to_batches(max_chunksize=50_000)
    p = SessionWindowProcessor(key="user_id", time="ts", gap=gap_ms, grace=grace_ms, aggs=_AGGS)
    out = [p.process(b) for b in batches[: len(batches) // 2]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "processor.snap"
        p.snapshot(path)
        size = path.stat().st_size
        p = SessionWindowProcessor.restore(path)
    out += [p.process(b) for b in batches[len(batches) // 2 :]]
    out.append(p.flush())
    late = p.metrics()["rejected"]
    if late:
        raise RuntimeError(f"{late} records were rejected although all arrived within the grace")
    return pa.concat_tables(out), size


def demo(args: argparse.Namespace) -> int:
    """Runs the demo; returns the process exit code."""
    gap_ms, grace_ms = args.gap_minutes * 60_000, args.grace_minutes * 60_000
    began = time.perf_counter()
    table = clickstream(args.events, users=args.users, seed=args.seed)
    generated = time.perf_counter()
    sessions = session_windows(table, key="user_id", time="ts", gap=gap_ms, aggs=_AGGS)
    completed = time.perf_counter()
    streamed, snapshot_bytes = _streamed(table, gap_ms, grace_ms, args.seed)
    done = time.perf_counter()

    want = expected_sessions(table, gap_ms)
    same = (
        sessions.select(_KEYS)
        .sort_by([(c, "ascending") for c in _KEYS])
        .equals(streamed.select(_KEYS).sort_by([(c, "ascending") for c in _KEYS]))
    )
    counted = pc.sum(sessions["count"]).as_py() or 0
    if sessions.num_rows != want or counted != table.num_rows or not same:
        print(
            f"error: {sessions.num_rows} sessions holding {counted} events (streaming equal: "
            f"{same}); expected {want} sessions holding {table.num_rows}",
            file=sys.stderr,
        )
        return 1

    minutes = pc.divide(pc.subtract(sessions["session_end"], sessions["session_start"]), 60_000.0)
    top = sessions.sort_by([("count", "descending")]).slice(0, 1).to_pylist()
    print(f"windowstore: {args.gap_minutes}-minute sessions over a generated clickstream")
    rows = [
        ("events", f"{table.num_rows:,} from {args.users:,} users (Zipf)"),
        ("sessions", f"{sessions.num_rows:,} (independent check: {want:,})"),
        ("events per session", f"mean {table.num_rows / max(sessions.num_rows, 1):.1f}"),
        (
            "session length",
            f"median {pc.approximate_median(minutes).as_py() or 0:.1f} min, "
            f"max {pc.max(minutes).as_py() or 0:.0f} min",
        ),
        ("busiest session", f"{top[0]['user_id']}: {top[0]['count']} events" if top else "-"),
        (
            "streaming",
            f"same sessions with 10% of events up to {args.grace_minutes} min late, "
            f"snapshot ({snapshot_bytes:,} bytes) and restore half-way",
        ),
        (
            "time",
            f"generate {generated - began:.2f}s, complete mode {completed - generated:.2f}s, "
            f"streaming {done - completed:.2f}s",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``windowstore`` command."""
    parser = argparse.ArgumentParser(prog="windowstore", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("demo", help="sessionize a generated clickstream and summarize it")
    d.add_argument("--events", type=int, default=1_000_000, help="events to generate")
    d.add_argument("--users", type=int, default=10_000, help="distinct users")
    d.add_argument("--gap-minutes", type=int, default=30, help="session inactivity gap")
    d.add_argument("--grace-minutes", type=int, default=5, help="lateness accepted in streaming")
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
