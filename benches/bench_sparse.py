"""The streaming processors' batched path beside their record path, on sparse and dense keys.

Data: --records records in time order (one every 100 ms) over --records / 100 string keys drawn
at random, so a key's records are about 1,000 s apart; integer values; batches of 65,536 rows;
count and sum. Four streams:
- sessions with a 30 s gap and sliding windows with D = 30 s: each record makes windows of its
  own (sparse: runs per key gain nothing);
- sessions with a 1 h gap and sliding windows with D = 1,000 s: records share windows (dense).

Each stream runs through the default processor (batched path, which falls back to the record
path on sparse keys, see `processor::batched`) and through the record path alone (the model,
`_set_batched(False)`), taking turns; prints medians, the ratio, and how many calls the default
processor batched. Both outputs are checked equal.

Run: python benches/bench_sparse.py [--records 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from windowstore import SessionWindowProcessor, SlidingWindowProcessor, agg

AGGS = [agg.count(), agg.sum("v")]
Make = Callable[[], SessionWindowProcessor | SlidingWindowProcessor]


def generate(records: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, max(records // 100, 1), records)
    return pa.table(
        {
            "k": pa.array([f"k{x}" for x in keys]),
            "t": np.arange(records, dtype=np.int64) * 100,
            "v": rng.integers(0, 1_000, records),
        }
    )


def stream(make: Make, batches: list[pa.RecordBatch], batched: bool) -> tuple[pa.Table, int]:
    p = make()
    p._inner._set_batched(batched)
    out = [p.process(b) for b in batches]
    out.append(p.flush())
    return pa.concat_tables(out), p._inner._batched_calls()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    batches = generate(args.records, seed=1).to_batches(max_chunksize=1 << 16)

    def sessions(gap: int) -> Make:
        return lambda: SessionWindowProcessor(key="k", time="t", gap=gap, grace=0, aggs=AGGS)

    def sliding(d: int) -> Make:
        return lambda: SlidingWindowProcessor(
            key="k", time="t", time_difference=d, grace=0, aggs=AGGS
        )

    streams = [
        ("sessions, gap 30 s (sparse)", sessions(30_000)),
        ("sliding, D = 30 s (sparse)", sliding(30_000)),
        ("sessions, gap 1 h (dense)", sessions(3_600_000)),
        ("sliding, D = 1,000 s (dense)", sliding(1_000_000)),
    ]
    print(f"{args.records:,} records in {len(batches)} calls; medians of {args.repeat}")
    print(f"{'stream':<32} {'default s':>10} {'record path s':>14} {'ratio':>6}  batched calls")
    for name, make in streams:
        times: dict[bool, list[float]] = {True: [], False: []}
        results: dict[bool, tuple[pa.Table, int]] = {}
        for _ in range(args.repeat):
            for batched in (True, False):
                start = time.perf_counter()
                results[batched] = stream(make, batches, batched)
                times[batched].append(time.perf_counter() - start)
        if not results[True][0].equals(results[False][0]):
            raise AssertionError(f"{name}: the two paths' outputs differ")
        default, model = statistics.median(times[True]), statistics.median(times[False])
        print(
            f"{name:<32} {default:>10.3f} {model:>14.3f} "
            f"{default / model:>6.2f}  {results[True][1]} of {len(batches)}"
        )


if __name__ == "__main__":
    main()
