"""Session windows on a generated clickstream: windowstore beside Polars and DuckDB, in the same
run.

Prints medians over --repeat runs (the machine is noisy) for:
- complete mode (count, sum, max; the sort included) beside Polars' sort, diff, cum_sum and
  group_by on the same table, and beside DuckDB's window functions (`lag` flags a session's
  first event, a running `sum` of the flags numbers the sessions, then a group by) on the same
  table loaded into DuckDB, results checked equal before any figure is printed. Polars and
  DuckDB run at their defaults (every core); Polars gives a DataFrame, DuckDB an Arrow table
  (its `to_arrow_table`), windowstore an Arrow table;
- the streaming processor fed in time order, and with 10% of the records delayed within the grace
  (results checked equal to complete mode);
- peak memory of complete mode over the input's Arrow size: RSS sampled while it runs, in a
  fresh process that only loaded the input (so no allocator holds pages of earlier runs).

Run: python benches/bench_sessions.py [--events 10000000] [--users 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import tempfile

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from harness import arguments, median_seconds, peak_extra_bytes, probed_bytes

from windowstore import SessionWindowProcessor, agg, session_windows
from windowstore.clickstream import clickstream

GAP_MS = 30 * 60 * 1000
GRACE_MS = 5 * 60 * 1000
AGGS = [agg.count(), agg.sum("amount"), agg.max("amount")]


def polars_sessions(df: pl.DataFrame) -> pl.DataFrame:
    user, ts = pl.col("user_id"), pl.col("ts")
    return (
        df.sort(["user_id", "ts"])
        .with_columns(new=(user != user.shift()).fill_null(True) | (ts.diff() > GAP_MS))
        .with_columns(session=pl.col("new").cum_sum())
        .group_by(["user_id", "session"])
        .agg(
            session_start=ts.min(),
            session_end=ts.max(),
            count=pl.len(),
            sum_amount=pl.col("amount").sum(),
            max_amount=pl.col("amount").max(),
        )
    )


#: The same sessions in SQL: a user's event opens a session when it is the user's first or comes
#: more than the gap after the user's previous event (`lag` is NULL for the first, and the
#: comparison with NULL is not true); the running sum of those flags numbers the sessions.
DUCKDB_SESSIONS = f"""
WITH flagged AS (
    SELECT user_id, ts, amount,
           CASE WHEN ts - lag(ts) OVER by_time <= {GAP_MS} THEN 0 ELSE 1 END AS new
    FROM clicks
    WINDOW by_time AS (PARTITION BY user_id ORDER BY ts)
), numbered AS (
    SELECT user_id, ts, amount,
           sum(new) OVER (PARTITION BY user_id ORDER BY ts ROWS UNBOUNDED PRECEDING) AS session
    FROM flagged
)
SELECT user_id, min(ts) AS session_start, max(ts) AS session_end, count(*) AS count,
       sum(amount) AS sum_amount, max(amount) AS max_amount
FROM numbered
GROUP BY user_id, session
"""


def duckdb_sessions(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """DUCKDB_SESSIONS over the table ``clicks`` of ``con``, as an Arrow table."""
    out = con.sql(DUCKDB_SESSIONS).to_arrow_table()
    assert out is not None
    return out


def canonical(t: pa.Table) -> pa.Table:
    cols = ["user_id", "session_start", "session_end", "count"]
    return (
        t.select(cols)
        .cast(
            pa.schema(
                [
                    ("user_id", pa.string()),
                    ("session_start", pa.int64()),
                    ("session_end", pa.int64()),
                    ("count", pa.int64()),
                ]
            )
        )
        .sort_by([(c, "ascending") for c in cols])
    )


def stream(table: pa.Table, batch_rows: int) -> pa.Table:
    p = SessionWindowProcessor(key="user_id", time="ts", gap=GAP_MS, grace=GRACE_MS, aggs=AGGS)
    out = [p.process(b) for b in table.to_batches(max_chunksize=batch_rows)]
    out.append(p.flush())
    if p.metrics()["rejected"]:
        raise AssertionError(f"records rejected: {p.metrics()}")
    return pa.concat_tables(out)


def delayed(table: pa.Table, fraction: float, seed: int) -> pa.Table:
    """The same records in arrival order, `fraction` of them delayed by up to the grace."""
    rng = np.random.default_rng(seed)
    n = table.num_rows
    delay = np.where(rng.random(n) < fraction, rng.integers(0, GRACE_MS, n), 0)
    arrival = table["ts"].to_numpy() + delay
    order = np.argsort(arrival, kind="stable")
    return table.take(pa.array(order))


def main() -> None:
    parser = arguments(__doc__, size=10_000_000, keys=100_000, repeat=5)
    parser.add_argument("--memory-probe", metavar="ARROW_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_probe:
        memory_probe(args.memory_probe)
        return

    data = clickstream(args.events, users=args.users)
    n = data.num_rows
    # DuckDB at its defaults (every core, its memory limit), the input loaded into a table of
    # its own before the timing, as Polars' DataFrame is.
    con = duckdb.connect()
    con.register("input", data)
    con.execute("CREATE TABLE clicks AS SELECT * FROM input")
    con.unregister("input")
    duck_threads = con.sql("SELECT current_setting('threads')").fetchall()[0][0]
    print(
        f"{n:,} events, {pc.count_distinct(data['user_id']).as_py():,} users, "
        f"{data.nbytes / 1e6:,.0f} MB of Arrow; gap 30 min, grace 5 min; polars "
        f"{pl.__version__} on {pl.thread_pool_size()} threads, duckdb {duckdb.__version__} on "
        f"{duck_threads} threads; medians of {args.repeat}"
    )

    ws_s, ws = median_seconds(
        lambda: session_windows(data, key="user_id", time="ts", gap=GAP_MS, aggs=AGGS),
        args.repeat,
    )
    df = pl.from_arrow(data)
    assert isinstance(df, pl.DataFrame)
    pl_s, pl_out = median_seconds(lambda: polars_sessions(df), args.repeat)
    if not canonical(ws).equals(canonical(pl_out.to_arrow())):
        raise AssertionError("windowstore and polars disagree")
    duck_s, duck_out = median_seconds(lambda: duckdb_sessions(con), args.repeat)
    if not canonical(ws).equals(canonical(duck_out)):
        raise AssertionError("windowstore and duckdb disagree")
    del duck_out
    con.close()
    print(f"sessions: {ws.num_rows:,} (equal in all three)")

    in_order_s, s1 = median_seconds(lambda: stream(data, args.batch_rows), args.repeat)
    late = delayed(data, 0.10, seed=1)
    late_s, s2 = median_seconds(lambda: stream(late, args.batch_rows), args.repeat)
    for name, got in (("in order", s1), ("10% delayed", s2)):
        if not canonical(got).equals(canonical(ws)):
            raise AssertionError(f"streaming ({name}) differs from complete mode")

    rate = lambda s: n / s / 1e6  # noqa: E731 - a one-line helper
    print(f"{'mode':<48}{'median s':>10}{'M rec/s':>10}{'vs polars':>11}{'vs duckdb':>11}")
    for name, s in (
        ("windowstore complete (1 core)", ws_s),
        (f"polars sort/diff/cum_sum/group_by ({pl.thread_pool_size()} threads)", pl_s),
        (f"duckdb lag/running sum/group by ({duck_threads} threads)", duck_s),
        ("windowstore streaming, in time order (1 core)", in_order_s),
        ("windowstore streaming, 10% delayed (1 core)", late_s),
    ):
        print(f"{name:<48}{s:>10.3f}{rate(s):>10.2f}{pl_s / s:>10.2f}x{duck_s / s:>10.2f}x")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input.arrow")
        with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, data.schema) as w:
            w.write_table(data)
        extra = probed_bytes(__file__, path)
    print(
        f"complete mode peak memory above its input: {extra / 1e6:,.0f} MB = "
        f"{extra / data.nbytes:.2f}x the input's {data.nbytes / 1e6:,.0f} MB "
        f"(peak total {(extra + data.nbytes) / data.nbytes:.2f}x)"
    )


def memory_probe(path: str) -> None:
    """Loads the input into memory, then prints complete mode's peak RSS above that."""
    with pa.memory_map(path) as source:
        data = pa.ipc.open_file(source).read_all()
    data = data.combine_chunks()  # a private in-memory copy, not the mapped file
    extra = peak_extra_bytes(
        lambda: session_windows(data, key="user_id", time="ts", gap=GAP_MS, aggs=AGGS)
    )
    print(extra)


if __name__ == "__main__":
    main()
