"""Sessions with a maximum duration on a generated clickstream: what the cap costs.

No other engine has an exact session cap (Azure Stream Analytics cuts at fixed clock
boundaries; Spark, Flink, Kafka Streams and Polars have none), so the figures are windowstore
with the cap beside windowstore without it, and beside Polars' uncapped sessions (sort, diff,
cum_sum, group_by) for scale, all from the same run. Prints medians over --repeat runs of:

- complete mode, capped and uncapped (results checked against each other: the capped sessions
  are the uncapped ones cut, never joined);
- the streaming processor in time order and with 10% of the records delayed within the grace,
  capped and uncapped (the capped results checked equal to capped complete mode);
- the processor's state halfway through the stream (bytes of the store), capped and uncapped:
  the capped processor keeps the records of open sessions.

Run: python benches/bench_max_duration.py [--events 2000000] [--users 50000] [--repeat 3]
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from bench_sessions import AGGS, GAP_MS, GRACE_MS, delayed, polars_sessions
from harness import arguments, median_seconds

from windowstore import SessionWindowProcessor, session_windows
from windowstore.clickstream import clickstream

COLS = ["user_id", "session_start", "session_end", "count"]


def canonical(t: pa.Table) -> pa.Table:
    return t.select(COLS).sort_by([(c, "ascending") for c in COLS])


def stream(
    table: pa.Table, cap: int | None, batch_rows: int, batched: bool = True, **markers: str
) -> tuple[pa.Table, int, int]:
    """The stream's windows, the store's bytes halfway through, and the cuts counted; with
    `markers` (`starts_session=`, `ends_session=`), sessions those columns start or end;
    without `batched`, plain sessions take the record-by-record path on every call."""
    p = SessionWindowProcessor(
        key="user_id", time="ts", gap=GAP_MS, grace=GRACE_MS, aggs=AGGS, max_duration=cap,
        **markers,
    )  # fmt: skip
    p._inner._set_batched(batched)
    batches = table.to_batches(max_chunksize=batch_rows)
    out, half = [], 0
    for i, b in enumerate(batches):
        out.append(p.process(b))
        if i == len(batches) // 2:
            half = int(p.metrics()["store_bytes"] or 0)
    out.append(p.flush())
    m = p.metrics()
    if m["rejected"]:
        raise AssertionError(f"records rejected: {m}")
    return pa.concat_tables(out), half, int(m.get("max_duration_cuts") or 0)


def main() -> None:
    parser = arguments(__doc__, size=2_000_000, keys=50_000, repeat=3)
    parser.add_argument("--max-duration-min", type=int, default=3)
    args = parser.parse_args()
    cap = args.max_duration_min * 60 * 1000

    data = clickstream(args.events, users=args.users)
    n = data.num_rows
    print(
        f"{n:,} events, {pc.count_distinct(data['user_id']).as_py():,} users; gap 30 min, "
        f"grace 5 min, max_duration {args.max_duration_min} min; medians of {args.repeat}"
    )

    def complete(c: int | None) -> pa.Table:
        return session_windows(
            data, key="user_id", time="ts", gap=GAP_MS, aggs=AGGS, max_duration=c
        )

    plain_s, plain = median_seconds(lambda: complete(None), args.repeat)
    capped_s, capped = median_seconds(lambda: complete(cap), args.repeat)
    df = pl.from_arrow(data)
    assert isinstance(df, pl.DataFrame)
    pl_s, pl_out = median_seconds(lambda: polars_sessions(df), args.repeat)
    if not canonical(plain).equals(
        canonical(pl_out.to_arrow().select(COLS)).cast(plain.select(COLS).schema)
    ):
        raise AssertionError("windowstore and polars disagree (uncapped)")
    if pc.sum(capped["count"]).as_py() != n or capped.num_rows < plain.num_rows:
        raise AssertionError("the capped sessions are not a cut of the uncapped ones")
    print(f"sessions: {plain.num_rows:,} uncapped, {capped.num_rows:,} with the cap")

    late = delayed(data, 0.10, seed=1)
    rows = []
    for name, table in (("in time order", data), ("10% delayed", late)):
        for c in (None, cap):
            s, (got, half, cuts) = median_seconds(
                lambda t=table, c=c: stream(t, c, args.batch_rows), args.repeat
            )
            want = capped if c else plain
            if not canonical(got).equals(canonical(want)):
                raise AssertionError(f"streaming ({name}, cap {c}) differs from complete mode")
            rows.append((f"streaming {name}, {'capped' if c else 'uncapped'}", s, half, cuts))

    rate = lambda s: n / s / 1e6  # noqa: E731 - a one-line helper
    print(f"{'mode':<44}{'median s':>10}{'M rec/s':>10}{'cap cost':>10}")
    print(f"{'polars sessions, uncapped':<44}{pl_s:>10.3f}{rate(pl_s):>10.2f}")
    print(f"{'complete, uncapped':<44}{plain_s:>10.3f}{rate(plain_s):>10.2f}")
    print(f"{'complete, capped':<44}{capped_s:>10.3f}{rate(capped_s):>10.2f}"
          f"{capped_s / plain_s:>9.2f}x")  # fmt: skip
    for i in range(0, len(rows), 2):
        (n0, s0, h0, _), (n1, s1, h1, cuts) = rows[i], rows[i + 1]
        print(f"{n0:<44}{s0:>10.3f}{rate(s0):>10.2f}")
        print(f"{n1:<44}{s1:>10.3f}{rate(s1):>10.2f}{s1 / s0:>9.2f}x")
    (_, _, h0, _), (_, _, h1, cuts) = rows[0], rows[1]
    print(
        f"state halfway (in time order): {h0 / 1e6:,.1f} MB uncapped, {h1 / 1e6:,.1f} MB capped "
        f"({h1 / max(h0, 1):.2f}x); sessions cut by the cap: {cuts:,}"
    )


if __name__ == "__main__":
    main()
