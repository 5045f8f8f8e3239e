"""``windowstore sessions`` and ``windowstore sliding``: the Spark adapters over Parquet or CSV
files, on a local Spark session or a cluster. The arguments and a local input's columns are
checked first (``checks.check_job``); Spark starts only for a job that can run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa

from windowstore.cli import on_spark, outputs
from windowstore.cli.arguments import Command, output_format_option, spark_options
from windowstore.cli.causes import root_cause, show_trace
from windowstore.cli.checks import (
    PARSED_COLUMN,
    WindowJob,
    check_job,
    check_units,
    no_such_column,
)
from windowstore.cli.flags import BadArgument, cli_words
from windowstore.cli.progress import Say, counted, plural
from windowstore.exceptions import WindowStoreError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation, SparkSession

__all__ = ["SESSIONS", "SLIDING", "run"]


def run(args: argparse.Namespace) -> int:
    """Runs ``windowstore sessions`` or ``windowstore sliding``; returns the exit code."""
    try:
        job = check_job(args)
    except BadArgument as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if on_spark.pyspark_missing(args.command):
        return 2
    return on_spark.run_job(args, job.conf, lambda spark, say: _windows(spark, say, job, args))


def _windows(spark: SparkSession, say: Say, job: WindowJob, args: argparse.Namespace) -> int:
    """Reads the input, computes the windows and writes them (and the rejected rows); returns
    the exit code."""
    from windowstore.spark import session_windows as spark_sessions
    from windowstore.spark import sliding_windows as spark_sliding

    try:
        df = on_spark.read(spark, job.input, job.in_fmt)
    except Exception as e:  # Spark's own errors (a URL it cannot reach, not Parquet)
        show_trace(e, args.verbose)
        print(f"error: argument INPUT: Spark cannot read {job.input} as {job.in_fmt}: "
              f"{_job_error(e)}", file=sys.stderr)  # fmt: skip
        return 2
    say(f"read {job.input} ({job.in_fmt}): {len(df.columns)} columns")
    if job.time_format is None and job.time in df.columns:  # a CSV's types, or a URL's
        try:
            check_units(job, _arrow_time_type(df, job.time))
        except BadArgument as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    time_column = job.time
    if job.time_format is not None:
        df = df.withColumn(PARSED_COLUMN, _parse_time(df, job.time, job.time_format))
        time_column = PARSED_COLUMN
    df, rows_in = on_spark.counting(df, "input")
    common = {**job.common, "time": time_column, "partitions": args.partitions}
    windows = spark_sessions if job.command == "sessions" else spark_sliding
    try:
        result, rejected = windows(df, **job.windows, return_rejected=True, **common)
    except WindowStoreError as e:
        column = getattr(e, "column", None)
        if column and column not in df.columns:  # an input only Spark reads (a URL)
            print(f"error: {no_such_column(column, df.columns, job.input)}", file=sys.stderr)
        else:
            print(f"error: {job.input}: {cli_words(str(e))}", file=sys.stderr)
        return 2
    if job.time_format is not None:
        rejected = rejected.drop(PARSED_COLUMN)
        result = result.drop(PARSED_COLUMN) if "output" in job.common else result
    kind = "session" if job.command == "sessions" else "sliding"
    result, rows_out = on_spark.counting(result, "windows")
    say(f"computing {kind} windows and writing them to {job.output}")
    try:
        _write(say, job, kind, result, rejected, rows_in, rows_out)
    except Exception as e:  # a failed Spark job: its cause is the Python worker's error
        show_trace(e, args.verbose)
        print(f"error: the job failed: {_job_error(e, job)}", file=sys.stderr)
        return 1
    return 0


def _write(
    say: Say,
    job: WindowJob,
    kind: str,
    result: DataFrame,
    rejected: DataFrame,
    rows_in: Observation,
    rows_out: Observation,
) -> None:
    """Writes the ``kind`` windows (or tagged rows) and, when the job keeps them, the rejected
    rows, saying how many rows it read (``rows_in``) and wrote. Spark runs the job here: a
    failed job raises."""
    outputs.write(result, job.output, job.out_fmt, job.overwrite)
    read = on_spark.observed(rows_in)
    if read is not None:
        say(f"read {plural(read, 'row')}")
    noun = "tagged row" if "output" in job.common else f"{kind} window"
    print(f"{counted(on_spark.observed(rows_out), noun)} written to "
          f"{job.output} ({job.out_fmt})")  # fmt: skip
    if job.rejected is not None:
        rejected, rows_rejected = on_spark.counting(rejected, "rejected")
        say(f"writing rejected rows to {job.rejected}")
        outputs.write(rejected, job.rejected, job.rejected_fmt, job.overwrite)
        n = on_spark.observed(rows_rejected)
        print(f"{counted(n, 'rejected row')} written to {job.rejected}, with "
              f"{'its reason' if n == 1 else 'their reasons'}")  # fmt: skip


def _arrow_time_type(df: DataFrame, column: str) -> pa.DataType:
    """The Arrow type of a time column as the engines see it: timestamps (and dates) as
    microseconds, anything else as a 64-bit integer (``check_units`` tells only these apart)."""
    from pyspark.sql.types import DateType, TimestampNTZType, TimestampType

    dt = df.schema[column].dataType
    if isinstance(dt, TimestampType):
        return pa.timestamp("us", "UTC")
    if isinstance(dt, TimestampNTZType):
        return pa.timestamp("us")
    return pa.date32() if isinstance(dt, DateType) else pa.int64()


def _parse_time(df: DataFrame, column: str, pattern: str) -> Column:
    """The time column parsed with ``pattern`` (a Spark datetime pattern); a value that does
    not match is null (a ``null_time`` row). A column Spark already read as a timestamp is
    taken as it is."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType, TimestampNTZType, TimestampType

    dt = df.schema[column].dataType
    if isinstance(dt, TimestampType | TimestampNTZType | DateType):
        return F.col(column).cast("timestamp")
    return F.try_to_timestamp(F.col(column).cast("string"), F.lit(pattern))


def _job_error(e: Exception, job: WindowJob | None = None) -> str:
    """The root cause of a failed Spark call, on one line, in the command line's words."""
    found = cli_words(root_cause(e))
    if job is not None and job.time_format is not None:
        found = found.replace(f"'{PARSED_COLUMN}'", f"'{job.time}' (parsed)")
        if "null_time" in found:
            found += (
                f" (with --time-format, a time that does not match {job.time_format!r} is null)"
            )
    return found


def _window_options(
    p: argparse.ArgumentParser, specific: Callable[[argparse.ArgumentParser], None]
) -> None:
    """The options of a window command, with the window kind's ``specific`` ones."""
    p.add_argument("input", metavar="INPUT",
                   help="input file or directory (Parquet, or CSV with a header); a local path "
                   "or a URL Spark reads (s3a://, hdfs://)")  # fmt: skip
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                   help="output: one file where the name ends with .parquet, .csv, .csv.gz, "
                   ".json or .jsonl (JSON Lines), else a directory of Spark part files (must "
                   "not exist, unless --overwrite)")  # fmt: skip
    p.add_argument("--key", action="append", required=True, metavar="COL",
                   help="key column (repeat, or comma-separated, for several)")  # fmt: skip
    p.add_argument("--time", required=True, metavar="COL",
                   help="time column: a timestamp, integer epoch ticks, or text with "
                   "--time-format")  # fmt: skip
    p.add_argument("--time-unit", choices=["s", "ms", "us", "ns"],
                   help="tick of an integer time column (default: ms); not for a "
                   "timestamp column")  # fmt: skip
    p.add_argument("--time-format", metavar="PATTERN",
                   help="parse a text time column with this Spark datetime pattern, e.g. "
                   "'yyyy-MM-dd HH:mm:ss' (times in UTC unless the text has a zone); a time "
                   "that does not match is a null_time row")  # fmt: skip
    specific(p)  # the window kind's own options
    p.add_argument("--agg", action="append", default=[], metavar="FUNC[:COL[:...]]",
                   help="an aggregation, see below (repeatable; default: count)")  # fmt: skip
    p.add_argument("--on-invalid", choices=["error", "drop"], default="error",
                   help="unusable rows (null key or time, invalid gap): fail the job (error), "
                   "or write them with their reason to --rejected (drop)")  # fmt: skip
    p.add_argument("--rejected", metavar="PATH",
                   help="where --on-invalid drop writes rejected rows, a file or a directory "
                   "as -o (default: NAME.rejected.csv beside a file NAME.csv, else "
                   "OUTPUT.rejected)")  # fmt: skip
    p.add_argument("--format", choices=["parquet", "csv"],
                   help="input format (default: csv for a name ending in .csv, else "
                   "parquet)")  # fmt: skip
    output_format_option(p, "by the output's name, else parquet")
    p.add_argument("--partitions", type=int, metavar="N",
                   help="partitions of the shuffle by key (default: "
                   "spark.sql.shuffle.partitions)")  # fmt: skip
    p.add_argument(
        "--overwrite", action="store_true", help="replace an existing OUTPUT (and --rejected)"
    )
    spark_options(p)


def _gaps(p: argparse.ArgumentParser) -> None:
    """The options of ``sessions``: the gap, the cap on a session, its markers, tagged
    rows."""
    p.add_argument("--gap", metavar="DURATION",
                   help="fixed inactivity gap that closes a session: 30m, 90s (see "
                   "durations below)")  # fmt: skip
    p.add_argument(
        "--gap-column",
        metavar="COL",
        help="column of per-record gaps (dynamic gaps; needs --max-gap)",
    )
    p.add_argument("--max-gap", metavar="DURATION", help="cap on the dynamic gaps")
    p.add_argument("--max-duration", metavar="DURATION",
                   help="longest span of a session from its first to its last event: a record "
                   "later than that after its session's start starts a new session")  # fmt: skip
    p.add_argument("--starts-session", metavar="COL",
                   help="boolean column whose true rows start a session (a login): no earlier "
                   "row shares a session with them")  # fmt: skip
    p.add_argument("--ends-session", metavar="COL",
                   help="boolean column whose true rows end their session (a logout): no "
                   "later row shares a session with them")  # fmt: skip
    p.add_argument("--records", action="store_true",
                   help="write every input row with session_start, session_end and session_id "
                   "instead of one row per session (no --agg)")  # fmt: skip


def _length(p: argparse.ArgumentParser) -> None:
    """The option of ``sliding``: the window length."""
    p.add_argument("--time-difference", required=True, metavar="DURATION",
                   help="window length D (windows [start, start + D], both ends "
                   "inclusive)")  # fmt: skip


_DURATIONS = """\
durations: 30m, 90s, 1h30m, 1.5s, '5 minutes'. A bare integer (--gap 30) is a count of ticks
of an integer time column (--time-unit, default ms); on a timestamp column it is refused.

aggregations (--agg, repeatable; default: count), each optionally named NAME=... (top=max:amount):
  count                                  records of the window
  sum|min|max|mean:COL                   of the non-null values
  first|last:COL                         the non-null value earliest / latest in event time
  count_distinct:COL                     distinct non-null values (exact)
  collect:COL[:MAX_SIZE[:OVERFLOW]]      the non-null values, in event-time order
  collect_all:COL[:MAX_SIZE[:OVERFLOW]]  every record's value, nulls included
  OVERFLOW (beyond MAX_SIZE): drop_oldest (the default), drop_newest or fail
"""

_SESSIONS_EXAMPLES = """\
examples:
  windowstore sessions clicks.parquet -o sessions/ --key user_id --time ts --gap 30m \\
      --agg count --agg sum:amount --agg top=max:amount --agg collect:page:10
  windowstore sessions clicks.csv -o sessions.csv --key user_id --time ts --gap 30m \\
      --time-format 'yyyy-MM-dd HH:mm:ss' --on-invalid drop  # rejects: sessions.rejected.csv
  windowstore sessions events/ -o out/ --key device --time t --time-unit s \\
      --gap-column idle --max-gap 2h                              # a gap per record
  windowstore sessions clicks.parquet -o tagged/ --key user_id --time ts --gap 30m \\
      --records                                  # every row, tagged with its session
  windowstore sessions clicks.parquet -o sessions/ --key user_id --time ts --gap 30m \\
      --max-duration 4h                          # no session longer than 4 hours
  windowstore sessions clicks.parquet -o sessions/ --key user_id --time ts --gap 30m \\
      --starts-session is_login --ends-session is_logout  # boolean columns
"""

_SLIDING_EXAMPLES = """\
examples:
  windowstore sliding clicks.parquet -o windows/ --key user_id --time ts \\
      --time-difference 5m --agg count --agg max:amount
  windowstore sliding s3a://bucket/clicks/ -o s3a://bucket/windows/ --key user_id --time ts \\
      --time-difference 5m --master spark://host:7077 \\
      --conf spark.archives=env.tar.gz#environment \\
      --conf spark.pyspark.python=./environment/bin/python
"""


def _window_command(
    name: str,
    kind: str,
    window: str,
    examples: str,
    specific: Callable[[argparse.ArgumentParser], None],
) -> Command:
    """A window command: ``kind`` windows, ``window`` the synopsis' window argument."""
    return Command(
        name=name,
        synopsis=f"INPUT -o OUTPUT --key COL --time COL {window} [--agg ...]",
        help=f"{kind} windows of a Parquet/CSV input on Spark",
        epilog=examples + "\n" + _DURATIONS,
        options=lambda p: _window_options(p, specific),
        run=run,
    )


SESSIONS = _window_command("sessions", "session", "--gap 30m", _SESSIONS_EXAMPLES, _gaps)
SLIDING = _window_command("sliding", "sliding", "--time-difference 5m", _SLIDING_EXAMPLES, _length)
