"""``windowstore state``: the open windows of a streaming query, read from its checkpoint
(``windowstore.spark.read_state``), printed or written to Parquet or CSV."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import pyarrow as pa

from windowstore.cli import on_spark, outputs
from windowstore.cli.arguments import Command, output_format_option, spark_options
from windowstore.cli.causes import root_cause, show_trace
from windowstore.cli.flags import BadArgument, check_master, confs
from windowstore.cli.inputs import local_path
from windowstore.cli.outputs import output_format
from windowstore.cli.progress import Say, counted, plural
from windowstore.exceptions import SnapshotError, WindowStoreError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["STATE", "run"]


def run(args: argparse.Namespace) -> int:
    """Runs ``windowstore state``; returns the exit code."""
    try:
        conf = confs(args.conf)
        check_master(args.master)
        _check(args)
    except BadArgument as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if on_spark.pyspark_missing(args.command):
        return 2
    return on_spark.run_job(args, conf, lambda spark, say: _state(spark, say, args))


def _state(spark: SparkSession, say: Say, args: argparse.Namespace) -> int:
    """Reads the open windows of the checkpoint's micro-batch and shows them; returns the exit
    code."""
    from windowstore.spark import read_state

    try:
        batch = args.batch_id
        if batch is None:
            batch = _latest(spark, args.checkpoint)
        say(f"reading the state of micro-batch {batch} of {args.checkpoint}")
        windows = read_state(spark, args.checkpoint, batch, timestamps=args.timestamp)
    except WindowStoreError as e:
        print(f"error: {args.checkpoint}: {_words(str(e))}", file=sys.stderr)
        return 2
    except Exception as e:  # Spark's own: an unreadable path, a batch it no longer keeps
        show_trace(e, args.verbose)
        print(f"error: argument CHECKPOINT: {root_cause(e)}", file=sys.stderr)
        return 2
    try:
        _show(windows, args, batch, say)
    except Exception as e:  # a failed Spark job: its cause is the Python worker's error
        show_trace(e, args.verbose)
        print(f"error: the job failed: {root_cause(e)}", file=sys.stderr)
        return 1
    return 0


def _show(windows: DataFrame, args: argparse.Namespace, batch: int, say: Say) -> None:
    """Prints the open windows (the first ``--limit``), or writes them to ``--output``."""
    if args.output is None:
        table = _sorted(windows.toArrow())
        print(f"{plural(table.num_rows, 'open window')} at micro-batch {batch}")
        shown = table if args.limit == 0 else table.slice(0, args.limit)
        if shown.num_rows:
            print(shown.to_pandas().to_string(index=False))
        if shown.num_rows < table.num_rows:
            print(f"(the first {shown.num_rows:,}; --limit 0 prints all, -o OUT writes them)")
        return
    fmt = output_format(args.output, args.output_format)
    windows, rows_out = on_spark.counting(windows, "windows")
    say(f"writing them to {args.output}")
    outputs.write(windows, args.output, fmt, args.overwrite)
    print(f"{counted(on_spark.observed(rows_out), 'open window')} of micro-batch {batch} "
          f"written to {args.output} ({fmt})")  # fmt: skip


def _sorted(table: pa.Table) -> pa.Table:
    """``table`` ordered as a processor's windows are: by the columns up to the window's start
    (the key columns, or a tagged row's columns), then the start."""
    names = table.column_names
    start = next((n for n in ("session_start", "window_start") if n in names), None)
    if start is None:
        return table
    by = [n for n in names[: names.index(start) + 1] if not pa.types.is_nested(table[n].type)]
    return table.sort_by([(n, "ascending") for n in by])


def _check(args: argparse.Namespace) -> None:
    """The arguments that need no Spark: an existing output, a local checkpoint, the limit."""
    if args.batch_id is not None and args.batch_id < 0:
        raise BadArgument("--batch-id", f"must be at least 0, got {args.batch_id}")
    if args.limit < 0:
        raise BadArgument("--limit", f"must be at least 0, got {args.limit}")
    checkpoint = local_path(args.checkpoint)
    if checkpoint is not None and not (checkpoint / "commits").is_dir():
        raise BadArgument(
            "CHECKPOINT", f"{args.checkpoint} is no streaming query's checkpoint (no commits/)"
        )
    if args.output is not None:
        out = local_path(args.output)
        if out is not None and out.exists() and not args.overwrite:
            raise BadArgument(
                "-o/--output", f"{args.output} exists; give --overwrite to replace it"
            )


def _latest(spark: SparkSession, checkpoint: str) -> int:
    """The latest committed micro-batch of ``checkpoint``, as Spark lists it."""
    rows = spark.read.format("state-metadata").load(checkpoint).select("maxBatchId").collect()
    latest = max((int(r[0]) for r in rows), default=-1)
    if latest < 0:
        raise SnapshotError(f"no committed micro-batch of a stateful query in {checkpoint}")
    return latest


def _words(message: str) -> str:
    """A read_state error in the command's words."""
    return message.replace(
        "pass the aggs=[...] the query was started with",
        (
            "the command cannot take Python functions: read it with "
            "windowstore.spark.read_state(spark, CHECKPOINT, aggs=[...])"
        ),
    ).replace("invalid timestamps:", "invalid --timestamp:")


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoint", metavar="CHECKPOINT",
                   help="the query's checkpointLocation: a local path or a URL Spark reads "
                   "(s3a://, hdfs://)")  # fmt: skip
    p.add_argument("-o", "--output", metavar="OUT",
                   help="write the open windows instead of printing them: one file where the "
                   "name ends with .parquet, .csv, .csv.gz, .json or .jsonl, else a directory "
                   "of Spark part files (must not exist, unless --overwrite)")  # fmt: skip
    output_format_option(p, "by the name of OUT, else parquet")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    p.add_argument("--batch-id", type=int, metavar="N",
                   help="the committed micro-batch whose state to read (default: the latest; "
                   "Spark keeps the last spark.sql.streaming.minBatchesToRetain)")  # fmt: skip
    p.add_argument("--timestamp", action="append", default=[], metavar="COL",
                   help="a key or aggregated column, other than the time column, that is a "
                   "Spark timestamp (repeatable; else epoch microseconds)")  # fmt: skip
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="open windows printed without -o; 0 prints all")  # fmt: skip
    spark_options(p)


_EXAMPLES = """\
examples:
  windowstore state ck/sessions/                      # the latest micro-batch's open windows
  windowstore state ck/sessions/ --batch-id 41 -o open.parquet
  windowstore state s3a://bucket/ck/ -o s3a://bucket/open.csv --master spark://host:7077

The query may be running: a committed micro-batch's state does not change. Its parameters are
read from the checkpoint; a query with user-defined aggregates (agg.udf) is read from Python,
with windowstore.spark.read_state(spark, CHECKPOINT, aggs=[...]).
"""

STATE = Command(
    name="state",
    synopsis="CHECKPOINT [-o OUT]",
    help="the open windows of a streaming query, from its checkpoint",
    epilog=_EXAMPLES,
    options=_options,
    run=run,
)
