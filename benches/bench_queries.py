"""Reads of a running processor's open windows: one key's windows from a processor holding
--sessions open sessions (one per key), beside Polars filtering the same open windows as a
table, in the same run.

Prints medians of:
- ``windows(key)`` and ``find_sessions(key, ...)`` per call, over --lookups random keys;
- Polars ``filter(key == k)`` per call over the same keys, on a DataFrame of every open window
  (what a user without reads would scan: the windows as a table);
- ``windows()`` of every key, and ``to_bytes()`` before and after all reads (equal, or the
  benchmark fails: a read changes nothing).

Each lookup's rows are checked equal to Polars' before any figure is printed.

Run: python benches/bench_queries.py [--sessions 1000000] [--lookups 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import polars as pl
import pyarrow as pa
from harness import median_seconds

from windowstore import SessionWindowProcessor, agg


def per_call(fn: object, keys: list[str]) -> float:
    """Median seconds of one call of ``fn(key)`` over ``keys``."""
    times = []
    for k in keys:
        t = time.perf_counter()
        fn(k)  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--lookups", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    n = args.sessions
    users = [f"u{i:08d}" for i in range(n)]
    rng = random.Random(7)
    table = pa.table(
        {
            "user_id": users,
            "ts": pa.array([rng.randrange(0, 3_600_000) for _ in range(n)], pa.int64()),
            "x": pa.array([rng.randrange(100) for _ in range(n)], pa.int64()),
        }
    )
    p = SessionWindowProcessor(
        key="user_id",
        time="ts",
        gap=1_800_000,
        grace=3_600_000,
        aggs=[agg.count(), agg.sum("x")],
    )
    p.process(table)
    before = p.to_bytes()
    keys = [rng.choice(users) for _ in range(args.lookups)]

    every, windows = median_seconds(p.windows, args.repeat)
    assert windows.num_rows == n, windows.num_rows
    frame = pl.from_arrow(windows)
    assert isinstance(frame, pl.DataFrame)
    for k in keys[:200]:
        ours = p.windows(k).to_pylist()
        theirs = frame.filter(pl.col("user_id") == k).to_dicts()
        assert ours == theirs, (k, ours, theirs)

    ours_key = statistics.median(per_call(p.windows, keys) for _ in range(args.repeat))
    ours_find = statistics.median(
        per_call(lambda k: p.find_sessions(k, 0, 3_600_000), keys) for _ in range(args.repeat)
    )
    polars_key = statistics.median(
        per_call(lambda k: frame.filter(pl.col("user_id") == k), keys) for _ in range(args.repeat)
    )
    assert p.to_bytes() == before, "a read changed the processor"

    print(f"{n:,} open sessions, one per key; medians over {args.repeat} runs")
    print(f"windows(key)             {ours_key * 1e6:10.1f} us per call")
    print(f"find_sessions(key, ...)  {ours_find * 1e6:10.1f} us per call")
    print(
        f"Polars filter(key == k)  {polars_key * 1e6:10.1f} us per call"
        f"   ratio {polars_key / ours_key:.0f}x"
    )
    print(f"windows() of every key   {every * 1e3:10.1f} ms")


if __name__ == "__main__":
    main()
