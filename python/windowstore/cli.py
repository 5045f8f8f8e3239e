"""The ``windowstore`` command line.

``windowstore sessions INPUT -o OUTPUT --key user_id --time ts --gap 30m --agg count ...`` and
``windowstore sliding INPUT -o OUTPUT ... --time-difference 5m`` run the Spark adapters over
Parquet or CSV files, on a local Spark session or on any cluster (``--master URL``).

``windowstore demo`` generates a clickstream (Zipf users, bursts separated by idle gaps),
sessionizes it on Spark (local by default), checks the sessions against the complete-data engine,
the streaming processor (records delayed within the grace, a snapshot and restore half-way) and an
independent computation, prints a summary and writes PNG plots.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from windowstore import agg
from windowstore.clickstream import clickstream
from windowstore.exceptions import InvalidWindowSpec, WindowStoreError
from windowstore.sessions import SessionWindowProcessor, session_windows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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


def parse_agg(text: str) -> agg.Agg:
    """An aggregation from its command-line form: ``count``, ``sum:amount``, ``max:amount``,
    ``collect:page:10:drop_oldest``, optionally named: ``total=sum:amount``.

    Example:
        >>> parse_agg("top=max:amount").output_name
        'top'
    """
    name, _, spec = text.rpartition("=")
    func, *rest = spec.split(":")
    simple = {"sum": agg.sum, "min": agg.min, "max": agg.max, "mean": agg.mean,
              "first": agg.first, "last": agg.last}  # fmt: skip
    if func == "count" and not rest:
        result = agg.count()
    elif func in simple and len(rest) == 1:
        result = simple[func](rest[0])
    elif func == "collect" and 1 <= len(rest) <= 3:
        size = None
        if len(rest) > 1 and rest[1]:
            if not rest[1].isdigit():
                raise InvalidWindowSpec(f"invalid aggs: max_size {rest[1]!r} in {text!r}", "aggs")
            size = int(rest[1])
        overflow = rest[2] if len(rest) > 2 else "drop_oldest"
        result = agg.collect(rest[0], size, overflow)  # type: ignore[arg-type]
    else:
        raise InvalidWindowSpec(
            f"invalid aggs: cannot read {text!r}; use count, sum:COL, min:COL, max:COL, mean:COL, "
            f"first:COL, last:COL or collect:COL[:MAX_SIZE[:OVERFLOW]], optionally NAME=...",
            "aggs",
        )
    return result.alias(name) if name else result


def _ticks_or_text(text: str) -> str | int:
    """A duration argument: digits are integer ticks, anything else a duration string."""
    return int(text) if text.lstrip("-").isdigit() else text


def _duration(text: str | None) -> str | int | None:
    return None if text is None else _ticks_or_text(text)


def _format(path: str, given: str | None) -> str:
    if given:
        return given
    return "csv" if path.rstrip("/").lower().endswith(".csv") else "parquet"


def _read(spark: SparkSession, path: str, fmt: str) -> DataFrame:
    if fmt == "csv":
        return spark.read.csv(path, header=True, inferSchema=True)
    return spark.read.parquet(path)


def _write(df: DataFrame, path: str, fmt: str, overwrite: bool) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    if fmt == "csv":  # CSV has no arrays: collected lists are written as JSON
        df = df.select(
            *[
                F.to_json(F.col(f.name)).alias(f.name)
                if isinstance(f.dataType, ArrayType)
                else F.col(f.name)
                for f in df.schema.fields
            ]
        )
    writer = df.write.mode("overwrite" if overwrite else "errorifexists")
    if fmt == "csv":
        writer.csv(path, header=True)
    else:
        writer.parquet(path)


def _confs(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidWindowSpec(f"invalid conf: {pair!r} is not KEY=VALUE", "conf")
        out[key] = value
    return out


def windows(args: argparse.Namespace) -> int:
    """Runs ``windowstore sessions`` or ``windowstore sliding``; returns the exit code."""
    try:
        from windowstore.spark import session_windows as spark_sessions
        from windowstore.spark import sliding_windows as spark_sliding
    except ImportError as e:
        print(f"error: {e}; install the Spark extra: pip install 'windowstore[spark]'",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        aggs = [parse_agg(a) for a in args.agg]
        keys = [k for given in args.key for k in given.split(",") if k]
        conf = _confs(args.conf)
    except WindowStoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    in_fmt, out_fmt = _format(args.input, args.format), _format(args.output, args.output_format)
    began = time.perf_counter()
    spark, owned = _session(args.master, conf, f"windowstore {args.command}")
    try:
        df = _read(spark, args.input, in_fmt)
        common: dict[str, Any] = {
            "key": keys,
            "time": args.time,
            "aggs": aggs,
            "on_invalid": args.on_invalid,
            "time_unit": args.time_unit,
            "partitions": args.partitions,
        }
        try:
            if args.command == "sessions":
                result, rejected = spark_sessions(
                    df,
                    gap=_duration(args.gap),
                    gap_column=args.gap_column,
                    max_gap=_duration(args.max_gap),
                    return_rejected=True,
                    **common,
                )
            else:
                result, rejected = spark_sliding(
                    df, time_difference=_ticks_or_text(args.time_difference), return_rejected=True,
                    **common,
                )  # fmt: skip
        except WindowStoreError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        try:
            _write(result, args.output, out_fmt, args.overwrite)
        except Exception as e:  # a failed Spark job: its cause is the Python worker's error
            print(f"error: the job failed: {_job_error(e)}", file=sys.stderr)
            return 1
        written = _read(spark, args.output, out_fmt).count()
        print(f"{written:,} {args.command} windows written to {args.output} ({out_fmt})")
        if args.on_invalid == "drop":
            path = args.rejected or args.output.rstrip("/") + ".rejected"
            _write(rejected, path, out_fmt, args.overwrite)
            count = _read(spark, path, out_fmt).count()
            print(f"{count:,} rejected rows (with their reason) written to {path}")
        print(f"done in {time.perf_counter() - began:.1f}s on {spark.sparkContext.master}")
        return 0
    finally:
        if owned:
            spark.stop()


def _session(master: str | None, conf: dict[str, str], app: str) -> tuple[SparkSession, bool]:
    """The active SparkSession if there is one (running inside a Spark program: it is not
    stopped afterwards), else a new one on ``master``; and whether it is ours to stop."""
    from pyspark.sql import SparkSession

    from windowstore.spark.session import spark_session

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    return spark_session(master, conf, app=app), True


def _job_error(e: Exception) -> str:
    """The windowstore error line of a failed Spark job's message, or its first line."""
    lines = str(e).splitlines()
    for line in lines:
        if "windowstore" in line and "Error" in line:
            return line.strip()
    return lines[0] if lines else type(e).__name__


def _spark_demo(table: pa.Table, args: argparse.Namespace) -> tuple[pa.Table, float, str]:
    """The demo's sessions computed on Spark (timestamps), as epoch-ms sessions; the seconds
    the job took and the master it ran on."""
    import pyarrow.parquet as pq

    from windowstore.spark import session_windows as spark_sessions

    ts = table["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us", "UTC"))
    spark, owned = _session(args.master, _confs(args.conf), "windowstore demo")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            pq.write_table(table.set_column(1, "ts", ts), os.path.join(tmp, "clicks.parquet"))
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
    on_spark, spark_seconds, master = (None, 0.0, "")
    if not args.no_spark:
        on_spark, spark_seconds, master = _spark_demo(table, args)

    want = expected_sessions(table, gap_ms)
    same = _sorted(sessions).equals(_sorted(streamed))
    spark_same = on_spark is None or _sorted(sessions).equals(_sorted(on_spark))
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
            if on_spark is None
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
        from windowstore._plots import plot_sessions

        pngs = plot_sessions(on_spark or sessions, Path(args.out), args.gap_minutes)
        rows.append(("plots", ", ".join(str(p) for p in pngs)))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return 0


def _spark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", help="Spark master URL (default: local[*])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark configuration entry (repeatable)")  # fmt: skip


def _window_command(commands: Any, name: str, help: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = commands.add_parser(name, help=help)
    p.add_argument("input", help="input file or directory (Parquet or CSV with a header)")
    p.add_argument("-o", "--output", required=True, help="output directory")
    p.add_argument("--key", action="append", required=True,
                   help="key column (repeat, or comma-separated, for several)")  # fmt: skip
    p.add_argument("--time", required=True, help="time column (timestamp or epoch ticks)")
    p.add_argument("--time-unit", choices=["s", "ms", "us", "ns"],
                   help="tick of an integer time column (default ms)")  # fmt: skip
    p.add_argument("--agg", action="append", default=[], metavar="FUNC[:COL[:...]]",
                   help="count, sum:COL, min:COL, max:COL, mean:COL, first:COL, last:COL, "
                   "collect:COL[:MAX_SIZE[:OVERFLOW]]; NAME=... names the output "
                   "(repeatable)")  # fmt: skip
    p.add_argument("--on-invalid", choices=["error", "drop"], default="error",
                   help="unusable rows (null key or time, invalid gap): fail the job, or write "
                   "them with their reason to --rejected")  # fmt: skip
    p.add_argument("--rejected", help="where rejected rows go (default: OUTPUT.rejected)")
    p.add_argument("--format", choices=["parquet", "csv"], help="input format (default: by "
                   "extension, else parquet)")  # fmt: skip
    p.add_argument("--output-format", choices=["parquet", "csv"], help="output format")
    p.add_argument("--partitions", type=int, help="partitions of the shuffle by key")
    p.add_argument("--overwrite", action="store_true", help="replace existing output")
    _spark_options(p)
    p.set_defaults(run=windows)
    return p


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``windowstore`` command."""
    parser = argparse.ArgumentParser(prog="windowstore", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    s = _window_command(commands, "sessions", "session windows of a Parquet/CSV input on Spark")
    s.add_argument("--gap", help="fixed gap: 30m, 90s, 1h30m, or integer ticks")
    s.add_argument("--gap-column", help="column of per-record gaps (dynamic gaps)")
    s.add_argument("--max-gap", help="cap on dynamic gaps")
    w = _window_command(commands, "sliding", "sliding windows of a Parquet/CSV input on Spark")
    w.add_argument("--time-difference", required=True, help="window length D: 5m, or ticks")
    d = commands.add_parser("demo", help="sessionize a generated clickstream and summarize it")
    d.add_argument("--events", type=int, default=1_000_000, help="events to generate")
    d.add_argument("--users", type=int, default=10_000, help="distinct users")
    d.add_argument("--gap-minutes", type=int, default=30, help="session inactivity gap")
    d.add_argument("--grace-minutes", type=int, default=5, help="lateness accepted in streaming")
    d.add_argument("--seed", type=int, default=7, help="random seed")
    d.add_argument("--out", default="windowstore-demo", help="directory of the PNG plots")
    d.add_argument("--no-spark", action="store_true", help="skip the Spark run")
    d.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    _spark_options(d)
    d.set_defaults(run=demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``windowstore`` console script."""
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
