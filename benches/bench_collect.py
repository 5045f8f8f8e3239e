"""One long session with an unbounded ``collect``: streaming beside complete mode.

Issue 12, defect 4: every record merged into a session used to rebuild the session's whole
state, so one session of N records cost O(N^2) in the streaming processors. Prints, for each N,
the median seconds of the streaming processor (records fed one per call, or in batches) and of
complete mode (``session_windows``) on the same records, and checks that both give the same
list.

Run: python benches/bench_collect.py [--sizes 10000 20000 40000 80000] [--batch 1 100]
     [--emit final] [--repeat 3]
"""

from __future__ import annotations

import argparse

import pyarrow as pa
from harness import median_seconds

from windowstore import SessionWindowProcessor, agg, session_windows


def table(n: int) -> pa.Table:
    return pa.table({"k": ["a"] * n, "ts": list(range(n)), "v": list(range(n))})


def streaming(t: pa.Table, batch: int, emit: str, delay: int) -> list[int]:
    p = SessionWindowProcessor(
        key="k", time="ts", gap=10**9, grace=max(delay, 0), emit=emit, aggs=[agg.collect("v")]
    )
    if delay:
        # Swap every `delay`-th pair of neighbours: slightly out of order, within the grace.
        idx = list(range(t.num_rows))
        for i in range(0, len(idx) - 1, delay):
            idx[i], idx[i + 1] = idx[i + 1], idx[i]
        t = t.take(idx)
    last = None
    for start in range(0, t.num_rows, batch):
        out = p.process(t.slice(start, batch))
        if out.num_rows:
            last = out
    out = p.flush()
    if emit == "final":
        last = out
    assert last is not None
    return last.column("collect_v")[-1].as_py()


def complete(t: pa.Table) -> list[int]:
    out = session_windows(t, key="k", time="ts", gap=10**9, aggs=[agg.collect("v")])
    return out.column("collect_v")[0].as_py()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000, 40_000, 80_000])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--emit", default="final", choices=["final", "updates", "changes"])
    parser.add_argument("--delay", type=int, default=0, help="swap every DELAY-th pair")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cols = [f"stream b={b}" for b in args.batch] + ["complete"]
    print(f"emit={args.emit} delay={args.delay}; median of {args.repeat}, seconds")
    print(f"{'records':>8} " + " ".join(f"{c:>12}" for c in cols))
    for n in args.sizes:
        t = table(n)
        expected = list(range(n))
        row = []
        for b in args.batch:
            secs, got = median_seconds(
                lambda b=b, t=t: streaming(t, b, args.emit, args.delay), args.repeat
            )
            assert got == expected, "streaming result differs"
            row.append(secs)
        secs, got = median_seconds(lambda t=t: complete(t), args.repeat)
        assert got == expected
        row.append(secs)
        print(f"{n:>8} " + " ".join(f"{s:>12.3f}" for s in row), flush=True)


if __name__ == "__main__":
    main()
