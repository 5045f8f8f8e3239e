"""``windowstore demo``: a generated clickstream (Zipf users, bursts separated by idle gaps)
sessionized in complete mode, by the streaming processor (records delayed within the grace, a
snapshot and restore half-way) and on Spark, all checked against an independent count; then a
summary table and PNG plots."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from windowstore import agg
from windowstore.cli import on_spark
from windowstore.cli.arguments import Command, spark_options
from windowstore.cli.causes import root_cause, show_trace
from windowstore.cli.flags import BadArgument, check_master, confs
from windowstore.cli.progress import Progress, Say, plural
from windowstore.clickstream import clickstream
from windowstore.sessions import SessionWindowProcessor, session_windows

__all__ = ["DEMO", "expected_sessions", "run"]

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


def _spark_demo(table: pa.Table, args: argparse.Namespace, say: Say) -> tuple[pa.Table, float, str]:
    """The demo's sessions computed on Spark (timestamps), as epoch-ms sessions; the seconds
    the job took and the master it ran on."""
    import pyarrow.parquet as pq

    from windowstore.spark import session_windows as spark_sessions

    ts = table["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us", "UTC"))
    say(f"starting Spark ({args.master or 'local[*]'})")
    spark, owned = on_spark.session(args.master, confs(args.conf), "windowstore demo", args.verbose)
    try:
        with tempfile.TemporaryDirectory() as tmp, Progress(spark, say):
            pq.write_table(table.set_column(1, "ts", ts), os.path.join(tmp, "clicks.parquet"))
            say(f"the same sessions on Spark ({spark.sparkContext.master})")
            began = time.perf_counter()
            df = spark.read.parquet(tmp)
            out = spark_sessions(df, key="user_id", time="ts", gap=f"{args.gap_minutes}m",
                                 aggs=_AGGS).toArrow()  # fmt: skip
            seconds = time.perf_counter() - began
        master = str(spark.sparkContext.master)
    finally:
        if owned:
            spark.stop()
    for name in ("session_start", "session_end"):
        ms = pc.divide(out[name].cast(pa.int64()), 1000)
        out = out.set_column(out.schema.get_field_index(name), name, ms)
    return out, seconds, master


def _sorted(t: pa.Table) -> pa.Table:
    return pa.table({c: t[c] for c in _KEYS}).sort_by([(c, "ascending") for c in _KEYS])


def _check(args: argparse.Namespace) -> None:
    """The demo's numbers in range, and no Spark option without Spark."""
    for flag, value, least in [("--events", args.events, 1), ("--users", args.users, 1),
                               ("--gap-minutes", args.gap_minutes, 1),
                               ("--grace-minutes", args.grace_minutes, 0)]:  # fmt: skip
        if value < least:
            raise BadArgument(flag, f"must be at least {least}, got {value}")
    if args.no_spark:
        given = [f for f, v in [("--master", args.master), ("--conf", args.conf)] if v]
        if given:
            raise BadArgument(given[0], "means nothing with --no-spark")


def run(args: argparse.Namespace) -> int:
    """Runs the demo; returns the process exit code."""
    try:
        confs(args.conf)
        check_master(args.master)
        _check(args)
    except BadArgument as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    gap_ms, grace_ms = args.gap_minutes * 60_000, args.grace_minutes * 60_000
    began = time.perf_counter()
    say = Say(began)
    say(f"generating {plural(args.events, 'event')} from {plural(args.users, 'user')}")
    table = clickstream(args.events, users=args.users, seed=args.seed)
    generated = time.perf_counter()
    say("sessions in complete mode")
    sessions = session_windows(table, key="user_id", time="ts", gap=gap_ms, aggs=_AGGS)
    completed = time.perf_counter()
    say(f"{plural(sessions.num_rows, 'session')}; now streaming, 10% of events delayed")
    streamed, snapshot_bytes = _streamed(table, gap_ms, grace_ms, args.seed)
    done = time.perf_counter()
    spark_table, spark_seconds, master = (None, 0.0, "")
    if not args.no_spark:
        try:
            spark_table, spark_seconds, master = _spark_demo(table, args, say)
        except ImportError as e:
            print(
                f"error: the demo's Spark run needs pyspark, which cannot be imported ({e}); "
                f"install the Spark extra's packages: {on_spark.install_hint()}, or give "
                f"--no-spark",
                file=sys.stderr,
            )
            return 2
        except Exception as e:  # Spark did not start, or its job failed
            show_trace(e, args.verbose)
            cause = root_cause(e)
            print(f"error: the demo's Spark run failed: {cause}", file=sys.stderr)
            return 2 if "Master URL" in cause else 1
    want = expected_sessions(table, gap_ms)
    same = _sorted(sessions).equals(_sorted(streamed))
    spark_same = spark_table is None or _sorted(sessions).equals(_sorted(spark_table))
    counted = pc.sum(sessions["count"]).as_py() or 0
    if sessions.num_rows != want or counted != table.num_rows or not same or not spark_same:
        print(
            f"error: {sessions.num_rows} sessions holding {counted} events (streaming equal: "
            f"{same}, Spark equal: {spark_same}); expected {want} sessions holding "
            f"{table.num_rows}",
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
            "spark",
            "skipped (--no-spark)"
            if spark_table is None
            else f"same sessions from windowstore.spark on {master} in {spark_seconds:.1f}s",
        ),
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
    if not args.no_plots:
        from windowstore.cli.plots import plot_sessions

        say(f"plotting into {args.out}")
        pngs = plot_sessions(spark_table or sessions, Path(args.out), args.gap_minutes)
        rows.append(("plots", ", ".join(str(p) for p in pngs)))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return 0


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", type=int, default=1_000_000, help="events to generate")
    p.add_argument("--users", type=int, default=10_000, help="distinct users")
    p.add_argument("--gap-minutes", type=int, default=30, help="session inactivity gap")
    p.add_argument("--grace-minutes", type=int, default=5, help="lateness accepted in streaming")
    p.add_argument("--seed", type=int, default=7, help="random seed")
    p.add_argument("--out", default="windowstore-demo", help="directory of the PNG plots")
    p.add_argument("--no-spark", action="store_true", help="skip the Spark run")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    spark_options(p)


_EXAMPLES = """\
examples:
  windowstore demo                              # 1,000,000 events, Spark on local[*], plots
  windowstore demo --events 100000 --no-spark   # without pyspark
"""

DEMO = Command(
    name="demo",
    synopsis="[--events N] [--no-spark]",
    help="sessionize a generated clickstream, check and summarize it",
    epilog=_EXAMPLES,
    options=_options,
    run=run,
)
