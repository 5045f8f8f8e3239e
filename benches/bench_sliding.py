"""Sliding windows: windowstore beside Polars' rolling windows and DuckDB's window frames, in the
same run.

Data: --records records (default 10M) over --keys keys (default 100k), times uniform over a
span such that the time difference D covers about --per-window records of a key (default 10);
integer values (so sums compare exactly). Aggregates: count, sum, max.

Prints medians over --repeat runs (the machine is noisy) for:
- complete mode: Kafka's full window set (left and right windows, about two per record; the
  sort included), beside Polars' `rolling` over the same table and DuckDB's window functions
  over a `RANGE BETWEEN D PRECEDING AND CURRENT ROW` frame on the same table loaded into DuckDB
  (both left windows only: one window per record), with the left windows checked equal to
  Polars' and to DuckDB's before any figure is printed. Polars and DuckDB run at their defaults
  (every core); DuckDB's result is an Arrow table (its `to_arrow_table`);
- the streaming processor fed in time order (its final windows checked equal to complete mode);
- peak memory of complete mode above its input (in a fresh process).

Run: python benches/bench_sliding.py [--records 10000000] [--keys 100000] [--repeat 5]
     [--no-streaming]  (complete mode, Polars and DuckDB only: streaming 10M records takes
                        minutes)
     [--only-streaming] (the streaming processor alone, each run's wall time beside the user
                         and system CPU it took: the kernel's share of fresh pages shows there,
                         and the store's bytes per window it holds before the flush)
        [--delayed 0.1] (that share of the records moved back in the stream by up to half
                         the time difference, within a grace of that much)
        [--emit updates] (the changelog instead of final windows)
     [--keys-series 20000,50000,100000 [--records-per-key 40]] (the streaming processor
                         alone over each number of keys, each key --records-per-key records,
                         ~10 a window: how a record's cost grows with the open state, which
                         grows with the keys; the state is steady after ~30 records a key)
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from harness import arguments, median_seconds, peak_extra_bytes, probed_bytes

from windowstore import SlidingWindowProcessor, agg, sliding_windows

AGGS = [agg.count(), agg.sum("v"), agg.max("v")]


def generate(records: int, keys: int, per_window: int, seed: int) -> tuple[pa.Table, int]:
    """Records in time order, and the time difference D covering ~per_window of a key's."""
    rng = np.random.default_rng(seed)
    span = 1_000 * records  # ms; a key's mean spacing is span / (records / keys)
    t = np.sort(rng.integers(0, span, records))
    k = rng.integers(0, keys, records)
    v = rng.integers(0, 1_000, records)
    d = per_window * span * keys // records
    return pa.table({"k": k, "t": t, "v": v}), d


def polars_rolling(df: pl.DataFrame, d: int) -> pl.DataFrame:
    """One window [t - D, t] per record, per key (Polars needs each key's times sorted)."""
    return (
        df.sort(["k", "t"])
        .rolling(index_column="t", period=f"{d}i", closed="both", group_by="k")
        .agg(count=pl.len(), sum_v=pl.col("v").sum(), max_v=pl.col("v").max())
    )


def duckdb_rolling(con: duckdb.DuckDBPyConnection, d: int) -> pa.Table:
    """Polars' windows in SQL, over the table ``records`` of ``con``: one window [t - D, t] per
    record, per key (the frame holds the records of equal time too, as Polars' window does)."""
    out = con.sql(
        f"""
        SELECT k, t, count(*) OVER w AS count, sum(v) OVER w AS sum_v, max(v) OVER w AS max_v
        FROM records
        WINDOW w AS (PARTITION BY k ORDER BY t RANGE BETWEEN {d} PRECEDING AND CURRENT ROW)
        """
    ).to_arrow_table()
    assert out is not None
    return out


def left_windows(t: pa.Table) -> pa.Table:
    """windowstore's left windows ([u - D, u] for each record time u: the windows whose end
    is their latest record) as (k, t, count, sum_v, max_v), sorted."""
    left = t.filter(pc.equal(t["window_end"], t["window_time"]))
    out = pa.table(
        {
            "k": left["k"],
            "t": left["window_end"],
            "count": left["count"],
            "sum_v": left["sum_v"],
            "max_v": left["max_v"],
        }
    )
    return out.sort_by([("k", "ascending"), ("t", "ascending")])


def polars_left(out: pl.DataFrame) -> pa.Table:
    """Polars' windows, one per distinct (key, time) (equal times share a window), sorted."""
    unique = out.unique(subset=["k", "t"], keep="first").sort(["k", "t"])
    return (
        unique.select(["k", "t", "count", "sum_v", "max_v"])
        .to_arrow()
        .cast(pa.schema([(c, pa.int64()) for c in ["k", "t", "count", "sum_v", "max_v"]]))
    )


def duckdb_left(out: pa.Table) -> pa.Table:
    """DuckDB's windows as polars_left gives Polars' (its sums are 128-bit: cast back)."""
    cast = out.cast(pa.schema([(c, pa.int64()) for c in out.column_names]))
    df = pl.from_arrow(cast)
    assert isinstance(df, pl.DataFrame)
    return polars_left(df)


def stream(
    table: pa.Table, d: int, batch_rows: int, grace: int = 0, emit: str = "final"
) -> tuple[pa.Table, dict[str, int]]:
    """The processor's output over `table` fed in calls of `batch_rows`, and its metrics just
    before the flush (what it holds)."""
    p = SlidingWindowProcessor(
        key="k", time="t", time_difference=d, grace=grace, emit=emit, aggs=AGGS
    )
    out = [p.process(b) for b in table.to_batches(max_chunksize=batch_rows)]
    held = p.metrics()
    out.append(p.flush())
    m = p.metrics()
    if m["rejected"] or m["late_window_update"]:
        raise AssertionError(f"records rejected or skipped: {m}")
    return pa.concat_tables(out), held


def delay(data: pa.Table, share: float, most: int, seed: int) -> pa.Table:
    """`data` with `share` of its records moved back in arrival order: each arrives after the
    records up to `most` ms later than it (so within a grace of `most`)."""
    rng = np.random.default_rng(seed)
    t = data["t"].to_numpy()
    arrival = t.copy()
    moved = rng.random(len(t)) < share
    arrival[moved] += rng.integers(0, most + 1, int(moved.sum()))
    return data.take(pa.array(np.argsort(arrival, kind="stable")))


def only_streaming(
    data: pa.Table, d: int, batch_rows: int, repeat: int, grace: int, emit: str
) -> None:
    """Each run of the streaming processor alone: wall time, and the user and system CPU it
    took (system CPU is mostly the kernel zeroing fresh pages for the output and buffers), and
    the store's bytes per window it holds before the flush."""
    n = data.num_rows
    print(
        f"{n:,} records, D = {d:,} ms, grace {grace:,} ms, emit={emit}, "
        f"{batch_rows:,} records a call"
    )
    walls = []
    for run in range(repeat):
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        out, held = stream(data, d, batch_rows, grace, emit)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        user = after.ru_utime - before.ru_utime
        system = after.ru_stime - before.ru_stime
        walls.append(wall)
        windows = held["store_live_sessions"]
        print(
            f"run {run + 1}: {wall:.2f} s, {n / wall / 1e6:.2f} M rec/s, user {user:.2f} s "
            f"({user / n * 1e6:.2f} µs a record), system {system:.2f} s, {out.num_rows:,} rows; "
            f"held {windows:,} windows, {held['store_bytes'] / max(windows, 1):.0f} B each"
        )
        del out
    median = statistics.median(walls)
    print(f"median {median:.2f} s, {n / median / 1e6:.2f} M rec/s")


def keys_series(
    per_key: int, series: list[int], per_window: int, batch_rows: int, repeat: int
) -> None:
    """The streaming processor on `per_key` records a key over each number of keys in `series`
    (each record's windows alike: ~per_window records a window), with the state it holds just
    before the flush: the windows in the store and its bytes."""
    print(f"{per_key} records a key in time order, ~{per_window} a window, {batch_rows:,} a call")
    head = f"{'keys':>9}{'records':>12}{'windows held':>14}{'store MB':>10}"
    print(f"{head}{'median s':>10}{'M rec/s':>9}{'µs/rec':>8}")
    for keys in series:
        records = keys * per_key
        data, d = generate(records, keys, per_window, seed=1)
        times, held = [], {}
        for _ in range(repeat):
            p = SlidingWindowProcessor(key="k", time="t", time_difference=d, grace=0, aggs=AGGS)
            start = time.perf_counter()
            for b in data.to_batches(max_chunksize=batch_rows):
                p.process(b)
            held = p.metrics()
            p.flush()
            if held["rejected"] or held["late_window_update"]:
                raise AssertionError(f"records rejected or skipped: {held}")
            times.append(time.perf_counter() - start)
            del p
        s = statistics.median(times)
        print(
            f"{keys:>9,}{records:>12,}{held['store_live_sessions']:>14,}"
            f"{held['store_bytes'] / 1e6:>10,.0f}"
            f"{s:>10.2f}{records / s / 1e6:>9.2f}{s / records * 1e6:>8.2f}"
        )


def canonical(t: pa.Table) -> pa.Table:
    cols = ["k", "window_start", "window_end", "window_time", "count", "sum_v", "max_v"]
    return t.select(cols).sort_by([(c, "ascending") for c in cols[:2]])


def main() -> None:
    parser = arguments(__doc__, size=10_000_000, keys=100_000, repeat=5, names=("records", "keys"))
    parser.add_argument("--per-window", type=int, default=10)
    parser.add_argument("--no-streaming", action="store_true", help="skip the streaming run")
    parser.add_argument(
        "--only-streaming", action="store_true", help="run the streaming processor alone"
    )
    parser.add_argument(
        "--keys-series",
        help="comma-separated numbers of keys: the streaming processor alone over each",
    )
    parser.add_argument("--records-per-key", type=int, default=40)
    parser.add_argument(
        "--delayed", type=float, default=0.0, help="share of records delayed (--only-streaming)"
    )
    parser.add_argument(
        "--emit", default="final", choices=["final", "updates", "changes"], help="--only-streaming"
    )
    parser.add_argument("--memory-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.keys_series:
        series = [int(k) for k in args.keys_series.split(",")]
        keys_series(args.records_per_key, series, args.per_window, args.batch_rows, args.repeat)
        return
    data, d = generate(args.records, args.keys, args.per_window, seed=1)
    if args.memory_probe:
        print(
            peak_extra_bytes(
                lambda: sliding_windows(data, key="k", time="t", time_difference=d, aggs=AGGS)
            )
        )
        return
    n = data.num_rows
    if args.only_streaming:
        grace = d // 2 if args.delayed else 0
        if args.delayed:
            data = delay(data, args.delayed, grace, seed=2)
        only_streaming(data, d, args.batch_rows, args.repeat, grace, args.emit)
        return
    ws_s, ws = median_seconds(
        lambda: sliding_windows(data, key="k", time="t", time_difference=d, aggs=AGGS),
        args.repeat,
    )
    df = pl.from_arrow(data)
    assert isinstance(df, pl.DataFrame)
    pl_s, pl_out = median_seconds(lambda: polars_rolling(df, d), args.repeat)
    if not left_windows(ws).equals(polars_left(pl_out)):
        raise AssertionError("windowstore's left windows and polars' rolling windows disagree")
    # DuckDB at its defaults (every core, its memory limit), the input loaded into a table of
    # its own before the timing, as Polars' DataFrame is.
    con = duckdb.connect()
    con.register("input", data)
    con.execute("CREATE TABLE records AS SELECT * FROM input")
    con.unregister("input")
    duck_threads = con.sql("SELECT current_setting('threads')").fetchall()[0][0]
    duck_s, duck_out = median_seconds(lambda: duckdb_rolling(con, d), args.repeat)
    if not left_windows(ws).equals(duckdb_left(duck_out)):
        raise AssertionError("windowstore's left windows and duckdb's RANGE windows disagree")
    mean_left = pc.mean(left_windows(ws)["count"]).as_py()
    print(
        f"{n:,} records, {args.keys:,} keys, D = {d:,} ms (a left window holds {mean_left:.1f} "
        f"records on average); polars {pl.__version__} on {pl.thread_pool_size()} threads, "
        f"duckdb {duckdb.__version__} on {duck_threads} threads; medians of {args.repeat}"
    )
    print(
        f"windows: windowstore {ws.num_rows:,} (Kafka's full set, {ws.num_rows / n:.2f} per "
        f"record), polars {pl_out.height:,} and duckdb {duck_out.num_rows:,} (left windows, one "
        "per record); left windows equal"
    )
    del duck_out
    con.close()

    rows = [
        ("windowstore complete, full window set (1 core)", ws_s),
        (f"polars rolling, left windows only ({pl.thread_pool_size()} threads)", pl_s),
        (f"duckdb RANGE frame, left windows only ({duck_threads} threads)", duck_s),
    ]
    if not args.no_streaming:
        st_s, (streamed, _) = median_seconds(lambda: stream(data, d, args.batch_rows), args.repeat)
        if not canonical(streamed).equals(canonical(ws)):
            raise AssertionError("streaming differs from complete mode")
        rows.append(("windowstore streaming, in time order (1 core)", st_s))

    print(f"{'mode':<52}{'median s':>10}{'M rec/s':>10}{'vs polars':>11}{'vs duckdb':>11}")
    for name, s in rows:
        print(f"{name:<52}{s:>10.3f}{n / s / 1e6:>10.2f}{pl_s / s:>10.2f}x{duck_s / s:>10.2f}x")
    # In a fresh process: this one's allocator holds pages of the runs above.
    extra = probed_bytes(__file__, *sys.argv[1:])
    print(
        f"complete mode peak memory above its input: {extra / 1e6:,.0f} MB "
        f"(input {data.nbytes / 1e6:,.0f} MB, output {ws.nbytes / 1e6:,.0f} MB)"
    )


if __name__ == "__main__":
    main()
