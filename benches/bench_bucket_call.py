"""What windowstore's Python does in one bucket call of a streaming query, by part, without Spark.

The short-session scenario of bench_spark_streaming.py with the default provider, one bucket's
share of it: --keys keys and --events events a micro-batch spread over --buckets buckets, gap 1
minute, grace 30 s, event time +60 s a micro-batch, Spark's input frames of --arrow-batch rows.
Each micro-batch is one call of the whole layout's ``step`` (what ``applyInPandasWithState``
runs per bucket): the input frames to Arrow, the engine, the output to pandas, the snapshot and
its compression. Prints the median call (the first two excluded as warm-up) and where the calls'
time went (cProfile, the functions with the most time of their own).

Everything outside this (Spark's Arrow and pandas conversions of the input and output rows, the
state row's trip to the JVM and into the state store) is in bench_spark_streaming.py's figures
and not here: the difference between the two is Spark's cost of what windowstore hands it.

Run: python benches/bench_bucket_call.py [--keys 100000] [--events 200000] [--buckets 8]
     [--batches 12] [--arrow-batch 10000]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

import numpy as np
import pandas as pd
import pyarrow as pa

from windowstore import agg
from windowstore.sessions import SessionWindowProcessor
from windowstore.spark._bucket import output_schema, step
from windowstore.spark._bucket_args import BucketArgs

SCHEMA = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("x", pa.int64())])
PARAMS = {
    "key": "k",
    "time": "ts",
    "gap": 60_000_000,
    "grace": 30_000_000,
    "time_unit": "us",
    "emit": "final",
    "aggs": (agg.count(), agg.sum("x"), agg.min("x"), agg.max("x")),
}


def bucket_args() -> BucketArgs:
    """A bucket's arguments as the driver makes them for this query (delay 30 s)."""
    windows = SessionWindowProcessor(**PARAMS).process(SCHEMA.empty_table()).schema
    output = output_schema(windows)
    return BucketArgs("sessions", PARAMS, "ts", SCHEMA, output, 30_000, "bench", False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--arrow-batch", type=int, default=10_000)
    a = parser.parse_args()
    args = bucket_args()
    rng = np.random.default_rng(1)
    events = a.events // a.buckets
    saved, seconds, out_rows = None, [], 0
    profile = cProfile.Profile()
    for b in range(a.batches):
        clock_ms = (b + 1) * 60_000
        frame = pd.DataFrame(
            {
                # One bucket's keys: every --buckets-th key.
                "k": rng.integers(0, a.keys // a.buckets, events) * a.buckets,
                "ts": (clock_ms - rng.integers(0, 30_000, events)) * 1000,
                "x": rng.integers(0, 100, events),
            }
        )
        frames = [
            frame.iloc[i : i + a.arrow_batch].reset_index(drop=True)
            for i in range(0, events, a.arrow_batch)
        ]
        watermark_ms = max(b * 60_000 - 30_000, 0)
        warm = b >= 2
        start = time.perf_counter()
        if warm:
            profile.enable()
        out, saved, _ = step(args, saved, watermark_ms, iter(frames))
        if warm:
            profile.disable()
            seconds.append(time.perf_counter() - start)
            out_rows += sum(len(f) for f in out)
    assert saved is not None
    calls = len(seconds)
    print(
        f"{events:,} events a call ({a.keys // a.buckets:,} keys), {calls} calls: median "
        f"{statistics.median(seconds) * 1000:.1f} ms a call, state row {len(saved[1]):,} bytes, "
        f"{out_rows / calls:,.0f} rows out a call"
    )
    stats = pstats.Stats(profile)
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    print(f"{'ms a call (own time)':>22}  function")
    for (path, line, name), (_, _, own, _, _) in rows[:8]:
        where = name if path == "~" else f"{name} ({path.rsplit('/', 1)[-1]}:{line})"
        print(f"{own / calls * 1000:>22.2f}  {where}")


if __name__ == "__main__":
    main()
