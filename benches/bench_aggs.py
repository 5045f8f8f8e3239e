"""The aggregates of issue 16 beside Polars, in the same run: count_distinct, udf, records output.

Data: windowstore.clickstream (Zipf users, bursts of clicks separated by idle gaps; about 11
events per 30-minute session) with three columns added: ``page`` (a string, one of 2,000 pages
drawn Zipf-like, 2% null), ``item`` (an int64 product id, one of 50,000, Zipf-like) and
``dwell_ms`` (an int64, exponential). Session gap 30 minutes. The contenders of each table run in
turn (A, B, A, B, ...), --repeat rounds, so load from elsewhere hits them alike; medians are
printed with the ratio to the peer (peer's time / windowstore's time: above 1, windowstore is
faster). windowstore runs on one core, Polars on its thread pool. Every result is checked equal
before it is timed.

1. ``agg.count_distinct`` per session (complete mode; the string column ``page`` and the int
   column ``item``) beside Polars' sort, diff, cum_sum, then ``group_by(...).agg(
   col.drop_nulls().n_unique())`` (``n_unique`` alone counts null as a value); ``agg.count()``
   beside ``pl.len()`` as the reference for the sessionizing itself. At every --growth size
   (events; users grow with them, 100 events per user), to show how the cost grows.
2. ``agg.udf``: ``max - min`` of ``dwell_ms`` as a udf (numpy body, pyarrow.compute body, and a
   body that returns 0, which measures the udf machinery alone) beside the built-ins
   ``agg.max`` + ``agg.min``, and beside Polars' expression ``max() - min()`` and its per-group
   Python function (``map_batches`` in ``group_by().agg``). The udf's own cost per window is
   (udf time - built-in time) / sessions. Then the same for windowstore alone at other event
   counts (more windows) and longer bursts (--burst-events: bigger windows).
3. ``output="records"`` (complete mode): every row tagged with session_start, session_end,
   session_id, beside Polars computing the same tags (sort, diff, cum_sum, then ts.min() and
   ts.max() ``over`` the session; Polars' id is the session's running number, not a hash); and
   the streaming processor in records mode beside windows mode (count), in time order, events/s.

4. Only when asked for (--only spark; --spark-events, default 1M):
   ``windowstore.spark.session_windows(aggs=[agg.count_distinct("page")])``
   beside Spark's ``groupBy(user_id, session_window(ts, "30 minutes")).agg(countDistinct)``,
   local[2], on the same Parquet input, each a full job into the ``noop`` sink.

Run: python benches/bench_aggs.py [--events 2000000] [--users 20000] [--repeat 3]
     [--growth 500000,2000000,8000000] [--udf-events 500000,8000000] [--burst-events 48,192]
     [--only count_distinct|udf|records|spark]... [--spark-events 1000000]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from harness import alternating_medians, arguments

from windowstore import SessionWindowProcessor, agg, session_windows
from windowstore.clickstream import clickstream

GAP_MS = 30 * 60 * 1000
GRACE_MS = 5 * 60 * 1000
SESSION = ["user_id", "session_start", "session_end"]


# ----------------------------------------------------------------------------- data


def events(n: int, users: int, burst_events: int = 12, seed: int = 7) -> pa.Table:
    """A clickstream with ``page`` (string, 2% null), ``item`` and ``dwell_ms`` (int64)."""
    t = clickstream(n, users=users, seed=seed, burst_events=burst_events)
    rng = np.random.default_rng(seed + 1)
    names = pa.array([f"/page/{i:04d}" for i in range(2_000)], pa.string())
    page = names.take(pa.array((rng.zipf(1.3, n) - 1) % 2_000))
    page = pc.if_else(pa.array(rng.random(n) < 0.02), pa.scalar(None, pa.string()), page)
    item = pa.array((rng.zipf(1.2, n) - 1) % 50_000, pa.int64())
    dwell = pa.array(rng.exponential(30_000, n).astype(np.int64), pa.int64())
    return (
        t.append_column("page", page).append_column("item", item).append_column("dwell_ms", dwell)
    )


def sessionized(df: pl.DataFrame) -> pl.DataFrame:
    """Polars' sessions: sort by user and time (stable), a new session where the user changes
    or the gap is exceeded, numbered by a running sum."""
    user, ts = pl.col("user_id"), pl.col("ts")
    return (
        df.sort(["user_id", "ts"], maintain_order=True)
        .with_columns(new=(user != user.shift()).fill_null(True) | (ts.diff() > GAP_MS))
        .with_columns(session=pl.col("new").cum_sum())
    )


def polars_per_session(df: pl.DataFrame, **aggs: pl.Expr) -> pl.DataFrame:
    ts = pl.col("ts")
    return (
        sessionized(df)
        .group_by(["user_id", "session"])
        .agg(session_start=ts.min(), session_end=ts.max(), **aggs)
    )


def ours(t: pa.Table, *aggs: agg.Agg) -> pa.Table:
    return session_windows(t, key="user_id", time="ts", gap=GAP_MS, aggs=list(aggs))


def canonical(t: pa.Table, columns: list[str]) -> pa.Table:
    """The session columns and ``columns`` as int64 (user_id a string), sorted by session."""
    types = {"user_id": pa.string()}
    t = t.select(SESSION + columns)
    t = t.cast(pa.schema([(c, types.get(c, pa.int64())) for c in t.column_names]))
    return t.sort_by([(c, "ascending") for c in SESSION])


def check(name: str, got: pa.Table, want: pl.DataFrame, columns: list[str]) -> None:
    if not canonical(got, columns).equals(canonical(want.to_arrow(), columns)):
        raise AssertionError(f"{name}: windowstore and polars disagree")


def show(title: str, rows: list[tuple[str, float, str]], times: list[list[float]]) -> None:
    print(f"\n{title}")
    print(f"  {'contender':<60}{'median s':>10}  {'':<38}runs")
    for (name, s, note), runs in zip(rows, times, strict=True):
        print(f"  {name:<60}{s:>10.3f}  {note:<38}{' '.join(f'{r:.2f}' for r in runs)}")


# ----------------------------------------------------------------------------- 1. count_distinct


def bench_count_distinct(n: int, repeat: int) -> None:
    t = events(n, users=max(1, n // 100))
    df = pl.from_arrow(t)
    assert isinstance(df, pl.DataFrame)
    contenders: list[tuple[str, Callable[[], Any]]] = []
    for column in ("page", "item"):
        name = f"count_distinct_{column}"
        got = ours(t, agg.count_distinct(column))
        want = polars_per_session(df, **{name: pl.col(column).drop_nulls().n_unique()})
        check(name, got, want, [name])
        contenders += [
            (
                f"windowstore count_distinct({column!r})",
                lambda c=column: ours(t, agg.count_distinct(c)),
            ),
            (
                f"polars n_unique of {column!r}",
                lambda c=column, nm=name: polars_per_session(
                    df, **{nm: pl.col(c).drop_nulls().n_unique()}
                ),
            ),
        ]
    sessions = ours(t, agg.count())
    check("count", sessions, polars_per_session(df, count=pl.len()), ["count"])
    contenders += [
        ("windowstore count() (the sessionizing alone)", lambda: ours(t, agg.count())),
        ("polars len() (the sessionizing alone)", lambda: polars_per_session(df, count=pl.len())),
    ]
    medians, times = alternating_medians([fn for _, fn in contenders], repeat)
    rows = []
    for i, (name, _) in enumerate(contenders):
        note = f"{n / medians[i] / 1e6:.2f} M ev/s"
        if i % 2 == 0:  # windowstore, its peer next
            note = f"x{medians[i + 1] / medians[i]:.2f} vs polars, {note}"
        rows.append((name, medians[i], note))
    show(
        f"count_distinct per session: {n:,} events, {max(1, n // 100):,} users, "
        f"{sessions.num_rows:,} sessions (results equal)",
        rows,
        times,
    )


# ----------------------------------------------------------------------------- 2. udf


def np_spread(x: pa.Array) -> int:
    a = x.to_numpy(zero_copy_only=False)
    return int(a.max() - a.min())


def pc_spread(x: pa.Array) -> int:
    return int(pc.max(x).as_py() - pc.min(x).as_py())


def zero(x: pa.Array) -> int:
    return 0


def udf(fn: Callable[[pa.Array], int]) -> agg.Udf:
    return agg.udf(fn, "dwell_ms", returns=pa.int64()).alias("spread")


BUILTIN = [agg.max("dwell_ms"), agg.min("dwell_ms")]


def spread_of(builtin: pa.Table) -> pa.Table:
    spread = pc.subtract(builtin["max_dwell_ms"], builtin["min_dwell_ms"])
    return builtin.select(SESSION).append_column("spread", spread)


def polars_expr(df: pl.DataFrame) -> pl.DataFrame:
    return polars_per_session(df, spread=pl.col("dwell_ms").max() - pl.col("dwell_ms").min())


def polars_udf(df: pl.DataFrame) -> pl.DataFrame:
    per_group = pl.col("dwell_ms").map_batches(
        lambda s: s.max() - s.min(), returns_scalar=True, return_dtype=pl.Int64
    )
    return polars_per_session(df, spread=per_group)


def bench_udf(t: pa.Table, repeat: int) -> None:
    df = pl.from_arrow(t)
    assert isinstance(df, pl.DataFrame)
    # The checks run on the first 200,000 events: the same code paths, a fraction of the time.
    small = t.slice(0, 200_000)
    small_df = df.slice(0, 200_000)
    want = spread_of(ours(small, *BUILTIN))
    for name, got in (
        ("udf numpy", ours(small, udf(np_spread))),
        ("udf pyarrow.compute", ours(small, udf(pc_spread))),
        ("polars expression", polars_expr(small_df).to_arrow()),
        ("polars map_batches", polars_udf(small_df).to_arrow()),
    ):
        if not canonical(got, ["spread"]).equals(canonical(want, ["spread"])):
            raise AssertionError(f"{name} differs from the built-ins")
    sessions = ours(t, agg.count()).num_rows
    contenders: list[tuple[str, Callable[[], Any]]] = [
        ("windowstore agg.max + agg.min (built-ins)", lambda: ours(t, *BUILTIN)),
        ("windowstore agg.udf returning 0 (the machinery alone)", lambda: ours(t, udf(zero))),
        ("windowstore agg.udf, numpy body", lambda: ours(t, udf(np_spread))),
        ("windowstore agg.udf, pyarrow.compute body", lambda: ours(t, udf(pc_spread))),
        ("polars expression max() - min()", lambda: polars_expr(df)),
        ("polars map_batches per group (Python)", lambda: polars_udf(df)),
    ]
    medians, times = alternating_medians([fn for _, fn in contenders], repeat)
    base, pl_expr, pl_udf = medians[0], medians[4], medians[5]
    rows = []
    for i, (name, _) in enumerate(contenders):
        if i in (1, 2, 3):
            per = (medians[i] - base) / sessions * 1e6
            note = f"+{per:.1f} us/window, x{pl_udf / medians[i]:.2f} vs pl udf"
        elif i == 0:
            note = f"x{pl_expr / base:.2f} vs pl expr"
        elif i == 5:
            note = f"+{(pl_udf - pl_expr) / sessions * 1e6:.1f} us/window"
        else:
            note = ""
        rows.append((name, medians[i], note))
    show(
        f"udf (max - min of dwell_ms): {t.num_rows:,} events, {sessions:,} sessions, "
        f"{t.num_rows / sessions:.1f} events/session",
        rows,
        times,
    )


def bench_udf_scaling(t: pa.Table, label: str, repeat: int) -> None:
    sessions = ours(t, agg.count()).num_rows
    contenders = [
        lambda: ours(t, *BUILTIN),
        lambda: ours(t, udf(zero)),
        lambda: ours(t, udf(np_spread)),
    ]
    (base, machinery, body), _ = alternating_medians(contenders, repeat)
    print(
        f"  {label:<44}{sessions:>10,} sessions {t.num_rows / sessions:>7.1f} ev/session  "
        f"built-ins {base:6.3f}s  udf 0 {machinery:6.3f}s "
        f"(+{(machinery - base) / sessions * 1e6:5.1f} us/window)  "
        f"udf numpy {body:6.3f}s (+{(body - base) / sessions * 1e6:5.1f} us/window)"
    )


# ----------------------------------------------------------------------------- 3. records


def ours_records(t: pa.Table) -> pa.Table:
    return session_windows(t, key="user_id", time="ts", gap=GAP_MS, output="records")


def polars_records(df: pl.DataFrame) -> pl.DataFrame:
    ts, s = pl.col("ts"), pl.col("session")
    return (
        sessionized(df)
        .with_columns(session_start=ts.min().over(s), session_end=ts.max().over(s))
        .drop("new")
    )


def stream(t: pa.Table, batch_rows: int, records: bool) -> int:
    """Rows (records mode) or sessions (windows mode) out of the processor, in time order."""
    kind: dict[str, Any] = {"output": "records"} if records else {"aggs": [agg.count()]}
    p = SessionWindowProcessor(key="user_id", time="ts", gap=GAP_MS, grace=GRACE_MS, **kind)
    out = sum(p.process(b).num_rows for b in t.to_batches(max_chunksize=batch_rows))
    out += p.flush().num_rows
    if p.metrics()["rejected"]:
        raise AssertionError(f"records rejected: {p.metrics()}")
    return out


def bench_records(t: pa.Table, repeat: int, batch_rows: int) -> None:
    df = pl.from_arrow(t)
    assert isinstance(df, pl.DataFrame)
    got, want = ours_records(t), polars_records(df)
    # Both list rows by user, then time, ties in input order: compare row by row.
    columns = [*t.column_names, "session_start", "session_end"]
    if not got.select(columns).equals(
        want.select(columns).to_arrow().cast(got.select(columns).schema)
    ):
        raise AssertionError("records: windowstore's tags differ from polars'")
    pairs = pl.DataFrame({"id": got["session_id"].to_numpy(), "s": want["session"].to_numpy()})
    sessions = pairs["s"].n_unique()
    if pairs.unique().height != sessions or pairs["id"].n_unique() != sessions:
        raise AssertionError("records: session_id does not name the sessions one to one")
    if stream(t, batch_rows, records=True) != t.num_rows:
        raise AssertionError("records: the processor did not tag every row")
    contenders: list[tuple[str, Callable[[], Any]]] = [
        ('windowstore session_windows(output="records")', lambda: ours_records(t)),
        ("polars sort/diff/cum_sum + min/max over session", lambda: polars_records(df)),
        ('windowstore processor, output="records"', lambda: stream(t, batch_rows, True)),
        ("windowstore processor, windows (count)", lambda: stream(t, batch_rows, False)),
    ]
    medians, times = alternating_medians([fn for _, fn in contenders], repeat)
    n = t.num_rows
    notes = [
        f"x{medians[1] / medians[0]:.2f} vs polars",
        "",
        f"x{medians[3] / medians[2]:.2f} vs windows mode",
        "",
    ]
    rows = [
        (name, medians[i], f"{n / medians[i] / 1e6:.2f} M ev/s {notes[i]}")
        for i, (name, _) in enumerate(contenders)
    ]
    show(
        f'output="records": {n:,} rows tagged, {sessions:,} sessions (tags equal); '
        f"processor batches of {batch_rows:,}",
        rows,
        times,
    )


# ----------------------------------------------------------------------------- 4. Spark


def bench_spark(n: int, repeat: int) -> None:
    """count_distinct per session on Spark (local[2]), beside native session_window +
    countDistinct, on the same Parquet input (8 files), each a full job into the noop sink."""
    import tempfile

    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from windowstore import spark as ws_spark
    from windowstore.spark import spark_session

    t = events(n, users=max(1, n // 100)).select(["user_id", "ts", "page"])
    t = t.set_column(1, "ts", t["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us", "UTC")))
    with tempfile.TemporaryDirectory() as tmp:
        rows = -(-t.num_rows // 8)
        for i in range(8):
            pq.write_table(t.slice(i * rows, rows), f"{tmp}/part-{i}.parquet")
        spark = spark_session(
            "local[2]",
            {
                "spark.driver.memory": "4g",
                "spark.sql.shuffle.partitions": "8",
                "spark.sql.files.maxPartitionBytes": "4m",
                # Spark's default, as the figures of docs/benchmarks.md were measured.
                "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
            },
            app="windowstore-bench-aggs",
        )
        df = spark.read.parquet(tmp)
        partitions = df.rdd.getNumPartitions()

        def native() -> Any:
            return df.groupBy("user_id", F.session_window("ts", "30 minutes")).agg(
                F.countDistinct("page").alias("count_distinct_page")
            )

        def windowstore() -> Any:
            return ws_spark.session_windows(
                df, key="user_id", time="ts", gap="30 minutes", aggs=[agg.count_distinct("page")]
            )

        want = native().select(
            "user_id",
            F.col("session_window.start").alias("session_start"),
            (F.col("session_window.end") - F.expr("INTERVAL 30 minutes")).alias("session_end"),
            "count_distinct_page",
        )
        got, exp = windowstore().toArrow(), want.toArrow()
        for name in ("session_start", "session_end"):
            got = got.set_column(got.column_names.index(name), name, got[name].cast(pa.int64()))
            exp = exp.set_column(exp.column_names.index(name), name, exp[name].cast(pa.int64()))
        if not canonical(got, ["count_distinct_page"]).equals(
            canonical(exp, ["count_distinct_page"])
        ):
            raise AssertionError("spark: windowstore and native count_distinct disagree")
        medians, times = alternating_medians(
            [
                lambda: native().write.format("noop").mode("overwrite").save(),
                lambda: windowstore().write.format("noop").mode("overwrite").save(),
            ],
            repeat,
        )
        spark.stop()
    show(
        f"Spark local[2], count_distinct('page') per session: {n:,} events, "
        f"{got.num_rows:,} sessions (results equal), {partitions} input partitions",
        [
            ("native groupBy(session_window).agg(countDistinct)", medians[0], ""),
            (
                "windowstore.spark.session_windows(count_distinct)",
                medians[1],
                f"x{medians[0] / medians[1]:.2f} vs native",
            ),
        ],
        times,
    )


# ----------------------------------------------------------------------------- main


def sizes(text: str) -> list[int]:
    return [int(float(s)) for s in text.split(",") if s]


def main() -> None:
    parser = arguments(__doc__, size=2_000_000, keys=20_000, repeat=3)
    parser.add_argument("--growth", type=sizes, default=sizes("500000,2000000,8000000"))
    parser.add_argument("--udf-events", type=sizes, default=sizes("500000,8000000"))
    parser.add_argument("--burst-events", type=sizes, default=sizes("48,192"))
    parser.add_argument(
        "--spark-events", type=int, default=1_000_000, help="the Spark part's size (--only spark)"
    )
    parser.add_argument(
        "--only", choices=["count_distinct", "udf", "records", "spark"], action="append", default=[]
    )
    args = parser.parse_args()
    parts = args.only or ["count_distinct", "udf", "records"]
    load = open("/proc/loadavg").read().split()[:3]  # noqa: SIM115 - one read
    print(
        f"gap 30 min; polars {pl.__version__} on {pl.thread_pool_size()} threads, windowstore "
        f"on 1 core; medians of {args.repeat}, contenders alternating; load average "
        f"{' '.join(load)} at start"
    )
    started = time.perf_counter()
    if "count_distinct" in parts:
        for n in args.growth:
            bench_count_distinct(n, args.repeat)
    if "udf" in parts or "records" in parts:
        t = events(args.events, args.users)
    if "udf" in parts:
        bench_udf(t, args.repeat)
        print("\nudf cost as windows grow in number (events) and in size (burst length):")
        bench_udf_scaling(t, f"{args.events:,} events, bursts of 12", args.repeat)
        for n in args.udf_events:
            big = events(n, users=max(1, n // 100))
            bench_udf_scaling(big, f"{n:,} events, bursts of 12", args.repeat)
        for burst in args.burst_events:
            long = events(args.events, args.users, burst_events=burst)
            bench_udf_scaling(long, f"{args.events:,} events, bursts of {burst}", args.repeat)
    if "records" in parts:
        bench_records(t, args.repeat, args.batch_rows)
    if "spark" in parts:
        bench_spark(args.spark_events, args.repeat)
    load = open("/proc/loadavg").read().split()[:3]  # noqa: SIM115 - one read
    print(f"\ntook {time.perf_counter() - started:.0f} s; load average {' '.join(load)} at the end")


if __name__ == "__main__":
    main()
