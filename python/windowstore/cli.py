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
import csv
import gzip
import os
import re
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from windowstore import __version__, agg
from windowstore._durations import to_duration
from windowstore.clickstream import clickstream
from windowstore.exceptions import InvalidWindowSpec, SchemaError, WindowStoreError
from windowstore.sessions import SessionWindowProcessor, session_windows
from windowstore.sliding import sliding_windows

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation, SparkSession

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


class BadArgument(Exception):
    """A command-line argument or the input it names is unusable: exit code 2.

    ``flag`` is the argument as the user typed it (``--gap``, ``INPUT``), or ``None`` when the
    message names a column of the input instead.
    """

    def __init__(self, flag: str | None, message: str) -> None:
        super().__init__(message)
        self.flag = flag

    def __str__(self) -> str:
        text = super().__str__()
        return f"argument {self.flag}: {text}" if self.flag else text


#: The command-line flag of each parameter of the Python API that errors may name.
_FLAGS = {
    "key": "--key",
    "time": "--time",
    "time_unit": "--time-unit",
    "gap": "--gap",
    "gap_column": "--gap-column",
    "max_gap": "--max-gap",
    "max_duration": "--max-duration",
    "time_difference": "--time-difference",
    "aggs": "--agg",
    "max_size": "--agg collect:COL:MAX_SIZE",
    "overflow": "--agg collect:COL:MAX_SIZE:OVERFLOW",
    "on_invalid": "--on-invalid",
    "partitions": "--partitions",
    "conf": "--conf",
    "output": "--records",
    "clock": "--clock",
    "idle_timeout": "--idle-timeout",
}

#: Hints of the Python API's messages, in the command line's words.
_HINTS = [
    (re.compile(r"on_invalid='drop' with return_rejected=True"), "--on-invalid drop"),
    (re.compile(r"give gap \(fixed\) or gap_column and max_gap \(dynamic\)"),
     "give --gap (fixed) or --gap-column and --max-gap (dynamic)"),
    (re.compile(r"give gap or gap_column, not both"), "give --gap or --gap-column, not both"),
    (re.compile(r"a gap column needs max_gap"), "--gap-column needs --max-gap"),
    (re.compile(r"parse it into a timestamp first \([^)]*\)( or give integer epoch ticks)?"),
     "give its format with --time-format (a Spark datetime pattern such as "
     "'yyyy-MM-dd HH:mm:ss'), or use integer epoch ticks"),
]  # fmt: skip
_INVALID = re.compile(r"^invalid (\w+):")


def cli_words(message: str) -> str:
    """``message`` (an error of the Python API) with its parameters named as the command
    line's flags.

    Example:
        >>> cli_words("invalid max_gap: a gap column needs max_gap (the largest gap)")
        'invalid --max-gap: --gap-column needs --max-gap (the largest gap)'
    """
    for pattern, words in _HINTS:
        message = pattern.sub(words, message)
    return _INVALID.sub(lambda m: f"invalid {_FLAGS.get(m[1], m[1])}:", message)


def _ticks_or_text(text: str) -> str | int:
    """A duration argument: digits are integer ticks, anything else a duration string."""
    return int(text) if text.lstrip("-").isdigit() else text


def _duration(text: str | None, parameter: str) -> str | int | None:
    """A duration argument, checked now (a ``BadArgument`` naming its flag if unreadable)."""
    if text is None:
        return None
    value = _ticks_or_text(text)
    try:
        to_duration(value, parameter)
    except InvalidWindowSpec as e:
        raise BadArgument(_FLAGS[parameter], str(e).removeprefix(f"invalid {parameter}: ")) from e
    return value


def _format(path: str, given: str | None) -> str:
    if given:
        return given
    name = path.rstrip("/").lower()
    return "csv" if name.endswith((".csv", ".csv.gz")) else "parquet"


def _local(path: str) -> Path | None:
    """The local file system path of ``path``, or ``None`` for a URL (``s3a://``, ``hdfs://``)
    that only Spark can read."""
    if path.startswith("file://"):
        return Path(path.removeprefix("file://"))
    return None if _SCHEME.match(path) else Path(path)


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _confs(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadArgument("--conf", f"{pair!r} is not KEY=VALUE")
        out[key] = value
    return out


def _data_files(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """The data files of an input file or directory, as Spark lists them (hidden and ``_``
    files skipped, directories searched)."""
    if path.is_file():
        return [path]
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
        and (not suffixes or p.name.lower().endswith(suffixes))
    )


def _spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark's executors hand Python for a Parquet column of Arrow type ``t``
    (Spark reads unsigned integers into wider signed ones, timestamps as microseconds)."""
    if pa.types.is_dictionary(t):
        return _spark_arrow_type(t.value_type)
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC" if t.tz else None)
    widened = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(),
               pa.uint64(): pa.decimal128(20, 0), pa.large_string(): pa.string(),
               pa.string_view(): pa.string(), pa.large_binary(): pa.binary(),
               pa.binary_view(): pa.binary(), pa.date64(): pa.date32()}  # fmt: skip
    return widened.get(t, t)


def _input_schema(path: Path, fmt: str) -> pa.Schema | list[str]:
    """The input's schema from a Parquet footer, or its column names from a CSV header."""
    if fmt == "csv":
        files = _data_files(path, ())
        files = [f for f in files if not f.name.lower().endswith((".crc",))]
        if not files:
            raise BadArgument("INPUT", f"no CSV file in {path}")
        first = files[0]
        opener: Any = gzip.open if first.name.lower().endswith(".gz") else open
        try:
            with opener(first, "rt", encoding="utf-8", newline="") as f:
                header = next(csv.reader(f), None)
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            raise BadArgument("INPUT", f"cannot read the CSV header of {first}: {e}") from e
        if not header:
            raise BadArgument("INPUT", f"{first} has no header line")
        return [name.strip() for name in header]
    files = _data_files(path, ())
    if not files:
        raise BadArgument("INPUT", f"no Parquet file in {path}")
    try:
        import pyarrow.dataset as ds

        schema: pa.Schema = ds.dataset(
            [str(f) for f in files] if path.is_dir() else str(path),
            format="parquet",
            partitioning=ds.HivePartitioning.discover() if path.is_dir() else None,
            partition_base_dir=str(path) if path.is_dir() else None,
        ).schema
    except (OSError, pa.ArrowException) as e:
        raise BadArgument("INPUT", f"cannot read a Parquet schema from {path}: {e}") from e
    return pa.schema([pa.field(f.name, _spark_arrow_type(f.type)) for f in schema])


@dataclass
class WindowJob:
    """A ``sessions`` or ``sliding`` command with every argument checked, before Spark starts."""

    command: str
    input: str
    output: str
    rejected: str | None
    in_fmt: str
    out_fmt: str
    keys: list[str]
    time: str
    time_format: str | None
    aggs: list[agg.Agg]
    windows: dict[str, Any]
    common: dict[str, Any]
    conf: dict[str, str]
    overwrite: bool


def _agg_argument(text: str) -> agg.Agg:
    """``parse_agg``, its errors as ``BadArgument`` naming ``--agg`` and the part at fault."""
    try:
        return parse_agg(text)
    except InvalidWindowSpec as e:
        detail = _INVALID.sub("", str(e)).strip()
        part = {"max_size": "MAX_SIZE ", "overflow": "OVERFLOW "}.get(e.parameter or "", "")
        if part:
            detail = f"{text!r}: {part}{detail}"
        raise BadArgument("--agg", detail) from e


def _check_clock(args: argparse.Namespace) -> None:
    """The command reads bounded input in one batch job: there is no wall clock to read."""
    if args.clock != "event":
        raise BadArgument(
            "--clock",
            f"{args.clock!r} needs a stream: the records of a file have no arrival time. For "
            'processing-time sessions use SessionWindowProcessor(clock="processing") or '
            'windowstore.spark.session_windows(clock="processing") on a streaming DataFrame',
        )
    if args.idle_timeout is not None:
        raise BadArgument(
            "--idle-timeout",
            "a bounded input is never idle: every session of it is written when the job "
            "ends. idle_timeout= is for streams (SessionWindowProcessor, or "
            "windowstore.spark.session_windows on a streaming DataFrame)",
        )


def check_job(args: argparse.Namespace) -> WindowJob:
    """Checks a ``sessions`` / ``sliding`` command's arguments and, for a local input, its
    schema (Parquet footer or CSV header) with the engines' own rules; all of this without
    Spark (pyspark is not imported).

    Raises:
        BadArgument: naming the flag, the input, or the column at fault.
    """
    keys = [k.strip() for given in args.key for k in given.split(",") if k.strip()]
    if not keys:
        raise BadArgument("--key", "give at least one key column")
    records = args.command == "sessions" and args.records
    if args.command == "sessions":
        _check_clock(args)
    if records and args.agg:
        raise BadArgument(
            "--records", "tagged rows take no --agg; aggregate them by session_id afterwards"
        )
    aggs = [] if records else [_agg_argument(a) for a in args.agg] or [agg.count()]
    if args.partitions is not None and args.partitions < 1:
        raise BadArgument("--partitions", f"must be at least 1, got {args.partitions}")
    conf = _confs(args.conf)

    windows: dict[str, Any]
    if args.command == "sessions":
        if args.gap is not None and args.gap_column is not None:
            raise BadArgument("--gap", "give --gap or --gap-column, not both")
        if args.gap is None and args.gap_column is None:
            raise BadArgument("--gap", "give --gap (fixed) or --gap-column and --max-gap (dynamic)")
        if args.gap_column is not None and args.max_gap is None:
            raise BadArgument("--max-gap", "--gap-column needs --max-gap (the largest gap)")
        if args.gap_column is None and args.max_gap is not None:
            raise BadArgument("--max-gap", "only with --gap-column (dynamic gaps)")
        windows = {
            "gap": _duration(args.gap, "gap"),
            "gap_column": args.gap_column,
            "max_gap": _duration(args.max_gap, "max_gap"),
            "max_duration": _duration(args.max_duration, "max_duration"),
        }
    else:
        windows = {"time_difference": _duration(args.time_difference, "time_difference")}

    in_fmt, out_fmt = _format(args.input, args.format), _format(args.output, args.output_format)
    rejected = None
    if args.on_invalid == "drop":
        rejected = args.rejected or args.output.rstrip("/") + ".rejected"
    elif args.rejected:
        raise BadArgument("--rejected", "rejected rows are only kept with --on-invalid drop")
    targets = [("-o/--output", args.output)] + ([("--rejected", rejected)] if rejected else [])
    for flag, target in targets:
        local = _local(target)
        if local is not None and local.exists() and not args.overwrite:
            raise BadArgument(flag, f"{target} exists; give --overwrite to replace it")
    common: dict[str, Any] = {
        "key": keys,
        "time": args.time,
        "aggs": aggs,
        "on_invalid": args.on_invalid,
        "time_unit": args.time_unit,
    }
    if records:
        common["output"] = "records"
    job = WindowJob(
        command=args.command,
        input=args.input,
        output=args.output,
        rejected=rejected,
        in_fmt=in_fmt,
        out_fmt=out_fmt,
        keys=keys,
        time=args.time,
        time_format=args.time_format,
        aggs=aggs,
        windows=windows,
        common=common,
        conf=conf,
        overwrite=args.overwrite,
    )
    source = _local(args.input)
    if source is not None:
        if not source.exists():
            raise BadArgument("INPUT", f"no such file or directory: {args.input}")
        _check_schema(job, _input_schema(source, in_fmt))
    return job


def _check_schema(job: WindowJob, schema: pa.Schema | list[str]) -> None:
    """The input's columns checked against the job: names first (a CSV header gives only
    names; Spark infers its types), then a Parquet schema's types through the engines' own
    checks on an empty table of it."""
    names = schema if isinstance(schema, list) else schema.names
    flags = {k: "--key" for k in job.keys}
    flags.update({a.column: "--agg" for a in job.aggs if a.column is not None})
    if job.windows.get("gap_column"):
        flags[job.windows["gap_column"]] = "--gap-column"
    flags[job.time] = "--time"
    for column, flag in flags.items():
        if column not in names:
            raise BadArgument(
                flag, f'column "{column}": no such column; {job.input} has {", ".join(names)}'
            )
    if isinstance(schema, list):
        return
    if job.time_format is not None:
        t = schema.field(job.time).type
        if not (pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_timestamp(t)
                or pa.types.is_date(t)):  # fmt: skip
            raise BadArgument(
                "--time-format", f'column "{job.time}" is {t}, not text to parse as a time'
            )
        schema = schema.set(schema.get_field_index(job.time), pa.field(job.time, _PARSED_TIME))
    empty = schema.empty_table()
    try:
        if job.command == "sessions":
            session_windows(empty, **job.windows, **job.common)
        else:
            sliding_windows(empty, **job.windows, **job.common)
    except SchemaError as e:
        raise BadArgument(flags.get(e.column or ""), f"{job.input}: {cli_words(str(e))}") from e
    except InvalidWindowSpec as e:
        raise BadArgument(_FLAGS.get(e.parameter or ""), cli_words(str(e))) from e


#: The type of a time column parsed with ``--time-format``.
_PARSED_TIME = pa.timestamp("us", "UTC")
#: The column holding the parsed time (the input's own time column stays as it was, so that
#: rejected rows keep the text that did not parse).
_PARSED_COLUMN = "__windowstore_time"


def _spark_install_hint() -> str:
    """How to install the Spark extra's packages into this environment, naming the packages
    (with the windowstore wheel's own version bounds) rather than a package index."""
    try:
        requirements = metadata.requires("windowstore") or []
    except metadata.PackageNotFoundError:
        requirements = []
    spark = [r.split(";")[0].strip() for r in requirements if 'extra == "spark"' in r]
    spark = spark or ["pyspark>=4.1,<5", "pandas<3", "matplotlib>=3.8", "protobuf>=5"]
    packages = " ".join(f"'{r.replace(' ', '')}'" for r in spark)
    return f"{sys.executable} -m pip install {packages}"


def windows(args: argparse.Namespace) -> int:
    """Runs ``windowstore sessions`` or ``windowstore sliding``; returns the exit code."""
    try:
        job = check_job(args)
    except BadArgument as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        from windowstore.spark import session_windows as spark_sessions
        from windowstore.spark import sliding_windows as spark_sliding
    except ImportError as e:
        print(
            f"error: windowstore {args.command} runs on Spark, and pyspark cannot be imported "
            f"({e}); install the Spark extra's packages: {_spark_install_hint()}",
            file=sys.stderr,
        )
        return 2
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    began = time.perf_counter()
    say = _Say(began)
    say(f"starting Spark ({args.master or 'local[*]'})")
    spark, owned = _session(args.master, job.conf, f"windowstore {args.command}", args.verbose)
    try:
        with _Progress(spark, say):
            try:
                df = _read(spark, job.input, job.in_fmt)
            except Exception as e:  # Spark's own errors (a URL it cannot reach, not Parquet)
                print(f"error: argument INPUT: Spark cannot read {job.input} as {job.in_fmt}: "
                      f"{_job_error(e)}", file=sys.stderr)  # fmt: skip
                return 2
            say(f"read {job.input} ({job.in_fmt}): {len(df.columns)} columns")
            time_column = job.time
            if job.time_format is not None:
                df = df.withColumn(_PARSED_COLUMN, _parse_time(df, job.time, job.time_format))
                time_column = _PARSED_COLUMN
            rows_in = Observation("input")
            df = df.observe(rows_in, F.count(F.lit(1)).alias("rows"))
            common = {**job.common, "time": time_column, "partitions": args.partitions}
            try:
                if job.command == "sessions":
                    result, rejected = spark_sessions(
                        df, **job.windows, return_rejected=True, **common
                    )
                else:
                    result, rejected = spark_sliding(
                        df, **job.windows, return_rejected=True, **common
                    )
            except WindowStoreError as e:
                print(f"error: {job.input}: {cli_words(str(e))}", file=sys.stderr)
                return 2
            if job.time_format is not None:
                rejected = rejected.drop(_PARSED_COLUMN)
                result = result.drop(_PARSED_COLUMN) if "output" in job.common else result
            kind = "session" if job.command == "sessions" else "sliding"
            rows_out = Observation("windows")
            result = result.observe(rows_out, F.count(F.lit(1)).alias("rows"))
            say(f"computing {kind} windows and writing them to {job.output}")
            try:
                _write(result, job.output, job.out_fmt, job.overwrite)
                read = _observed(rows_in)
                if read is not None:
                    say(f"read {_plural(read, 'row')}")
                noun = "tagged row" if "output" in job.common else f"{kind} window"
                print(f"{_counted(_observed(rows_out), noun)} written to "
                      f"{job.output} ({job.out_fmt})")  # fmt: skip
                if job.rejected is not None:
                    rows_rejected = Observation("rejected")
                    rejected = rejected.observe(rows_rejected, F.count(F.lit(1)).alias("rows"))
                    say(f"writing rejected rows to {job.rejected}")
                    _write(rejected, job.rejected, job.out_fmt, job.overwrite)
                    n = _observed(rows_rejected)
                    print(f"{_counted(n, 'rejected row')} written to {job.rejected}, with "
                          f"{'its reason' if n == 1 else 'their reasons'}")  # fmt: skip
            except Exception as e:  # a failed Spark job: its cause is the Python worker's error
                print(f"error: the job failed: {_job_error(e, job)}", file=sys.stderr)
                return 1
        print(f"done in {time.perf_counter() - began:.1f}s on {spark.sparkContext.master}")
        return 0
    finally:
        if owned:
            spark.stop()


def _observed(observation: Observation, timeout: float = 60.0) -> int | None:
    """The ``rows`` an observation counted during the action that just ran, or ``None`` if
    Spark has not reported it within ``timeout`` seconds (``Observation.get`` would wait
    forever)."""
    box: list[int] = []

    def get() -> None:
        box.append(int(observation.get["rows"]))

    thread = threading.Thread(target=get, name="windowstore-observation", daemon=True)
    thread.start()
    thread.join(timeout)
    return box[0] if box else None


def _counted(n: int | None, noun: str) -> str:
    """``_plural``, or ``<noun>s`` alone when the count is unknown."""
    return f"{noun}s" if n is None else _plural(n, noun)


def _plural(n: int, noun: str) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1: ``1 row``, ``4 rows``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _read(spark: SparkSession, path: str, fmt: str) -> DataFrame:
    if fmt == "csv":
        return spark.read.csv(path, header=True, inferSchema=True)
    return spark.read.parquet(path)


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


class _Say:
    """Progress lines on stderr, each with the seconds since the command began."""

    def __init__(self, began: float) -> None:
        self.began = began
        self.lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self.lock:
            print(f"[{time.perf_counter() - self.began:6.1f}s] {text}", file=sys.stderr,
                  flush=True)  # fmt: skip


class _Progress:
    """While a Spark job runs: its stages' tasks, on stderr, from Spark's status tracker (a
    line when a stage starts, then at most every ``every`` seconds while it makes progress)."""

    def __init__(self, spark: SparkSession, say: _Say, every: float = 10.0) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.say = say
        self.every = every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="windowstore-progress",
                                       daemon=True)  # fmt: skip

    def __enter__(self) -> _Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def _watch(self) -> None:
        shown: dict[int, tuple[int, float]] = {}
        try:
            while not self.stop.wait(1.0):
                for stage in self.tracker.getActiveStageIds():
                    info = self.tracker.getStageInfo(stage)
                    if info is None:
                        continue
                    done, now = info.numCompletedTasks, time.perf_counter()
                    last = shown.get(stage)
                    if last is None or (done != last[0] and now - last[1] >= self.every):
                        shown[stage] = (done, now)
                        self.say(f"  stage {stage}: {done}/{info.numTasks} tasks done "
                                 f"({info.numActiveTasks} running)")  # fmt: skip
        except Exception:  # the session stopped under us: progress is best-effort
            return


_LOG4J = """\
# Spark's log lines for the windowstore command: quiet (nothing) unless --verbose. The root
# level stays WARN either way (Spark prints "Setting default log level" when it differs from
# its shell default); the quiet appender's filter drops every line.
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = {threshold}
"""


def _log_options(conf: dict[str, str], verbose: bool) -> dict[str, str]:
    """``conf`` with the driver's log4j set up: quiet (nothing but the command's own lines)
    unless ``verbose`` (Spark's warnings and errors). A ``spark.driver.extraJavaOptions`` of
    the user's is kept, after the setting."""
    name = "verbose" if verbose else "quiet"
    path = Path(tempfile.gettempdir()) / f"windowstore-{os.getuid()}-log4j2-{name}.properties"
    text = _LOG4J.format(threshold="all" if verbose else "off")
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    option = f"-Dlog4j2.configurationFile=file:{path}"
    given = conf.get("spark.driver.extraJavaOptions")
    return {**conf, "spark.driver.extraJavaOptions": f"{option} {given}" if given else option}


def _session(
    master: str | None, conf: dict[str, str], app: str, verbose: bool = False
) -> tuple[SparkSession, bool]:
    """The active SparkSession if there is one (running inside a Spark program: it is not
    stopped afterwards), else a new one on ``master``; and whether it is ours to stop.
    Spark's own log lines are off unless ``verbose``."""
    from pyspark.sql import SparkSession

    from windowstore.spark.session import spark_session

    if not verbose:
        warnings.filterwarnings("ignore", module="pyspark")
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    spark = spark_session(master, _log_options(conf, verbose), app=app)
    if verbose:
        spark.sparkContext.setLogLevel("WARN")
    return spark, True


def _job_error(e: Exception, job: WindowJob | None = None) -> str:
    """The windowstore error line of a failed Spark job's message (in the command line's
    words), or its first line."""
    lines = str(e).splitlines()
    found = next(
        (line.strip() for line in lines if "windowstore" in line and "Error" in line),
        lines[0] if lines else type(e).__name__,
    )
    found = cli_words(found)
    if job is not None and job.time_format is not None:
        found = found.replace(f"'{_PARSED_COLUMN}'", f"'{job.time}' (parsed)")
        if "null_time" in found:
            found += (
                f" (with --time-format, a time that does not match {job.time_format!r} is null)"
            )
    return found


def _spark_demo(
    table: pa.Table, args: argparse.Namespace, say: _Say
) -> tuple[pa.Table, float, str]:
    """The demo's sessions computed on Spark (timestamps), as epoch-ms sessions; the seconds
    the job took and the master it ran on."""
    import pyarrow.parquet as pq

    from windowstore.spark import session_windows as spark_sessions

    ts = table["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us", "UTC"))
    say(f"starting Spark ({args.master or 'local[*]'})")
    spark, owned = _session(args.master, _confs(args.conf), "windowstore demo", args.verbose)
    try:
        with tempfile.TemporaryDirectory() as tmp, _Progress(spark, say):
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


def demo(args: argparse.Namespace) -> int:
    """Runs the demo; returns the process exit code."""
    try:
        _confs(args.conf)
    except BadArgument as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    gap_ms, grace_ms = args.gap_minutes * 60_000, args.grace_minutes * 60_000
    began = time.perf_counter()
    say = _Say(began)
    say(f"generating {_plural(args.events, 'event')} from {_plural(args.users, 'user')}")
    table = clickstream(args.events, users=args.users, seed=args.seed)
    generated = time.perf_counter()
    say("sessions in complete mode")
    sessions = session_windows(table, key="user_id", time="ts", gap=gap_ms, aggs=_AGGS)
    completed = time.perf_counter()
    say(f"{_plural(sessions.num_rows, 'session')}; now streaming, 10% of events delayed")
    streamed, snapshot_bytes = _streamed(table, gap_ms, grace_ms, args.seed)
    done = time.perf_counter()
    on_spark, spark_seconds, master = (None, 0.0, "")
    if not args.no_spark:
        try:
            on_spark, spark_seconds, master = _spark_demo(table, args, say)
        except ImportError as e:
            print(
                f"error: the demo's Spark run needs pyspark, which cannot be imported ({e}); "
                f"install the Spark extra's packages: {_spark_install_hint()}, or give "
                f"--no-spark",
                file=sys.stderr,
            )
            return 2

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

        say(f"plotting into {args.out}")
        pngs = plot_sessions(on_spark or sessions, Path(args.out), args.gap_minutes)
        rows.append(("plots", ", ".join(str(p) for p in pngs)))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return 0


_DESCRIPTION = """\
Session and sliding windows of Parquet or CSV files on Spark (local or a cluster), with the
semantics of Kafka Streams; and a demo on generated data.

commands:
  windowstore sessions INPUT -o OUTPUT --key COL --time COL --gap 30m [--agg ...]
  windowstore sliding  INPUT -o OUTPUT --key COL --time COL --time-difference 5m [--agg ...]
  windowstore demo     [--events N] [--no-spark]

'windowstore COMMAND --help' shows a command's options and examples.
"""

_EXIT_CODES = """\
exit codes:
  0  done
  1  the Spark job failed (the row and its reason are printed)
  2  bad arguments or input (the flag or column at fault is named), or pyspark is missing
"""

_DURATIONS = """\
durations: 30m, 90s, 1h30m, 1.5s, '5 minutes', or an integer count of ticks of the time column
(--time-unit). aggregations (--agg, repeatable; default: count): count, sum:COL, min:COL,
max:COL, mean:COL, first:COL, last:COL, collect:COL[:MAX_SIZE[:OVERFLOW]] (OVERFLOW:
drop_oldest, drop_newest or fail), each optionally named NAME=... (top=max:amount).
"""

_SESSIONS_EXAMPLES = """\
examples:
  windowstore sessions clicks.parquet -o sessions/ --key user_id --time ts --gap 30m \\
      --agg count --agg sum:amount --agg top=max:amount --agg collect:page:10
  windowstore sessions clicks.csv -o sessions.csv --key user_id --time ts --gap 30m \\
      --time-format 'yyyy-MM-dd HH:mm:ss' --on-invalid drop     # rejects: sessions.csv.rejected
  windowstore sessions events/ -o out/ --key device --time t --time-unit s \\
      --gap-column idle --max-gap 2h                              # a gap per record
  windowstore sessions clicks.parquet -o tagged/ --key user_id --time ts --gap 30m \\
      --records                                  # every row, tagged with its session
  windowstore sessions clicks.parquet -o sessions/ --key user_id --time ts --gap 30m \\
      --max-duration 4h                          # no session longer than 4 hours
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

_DEMO_EXAMPLES = """\
examples:
  windowstore demo                              # 1,000,000 events, Spark on local[*], plots
  windowstore demo --events 100000 --no-spark   # without pyspark
"""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written; every option with a default shows it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default:" in text
            or default is None
            or default is False
            or default == []
            or default is argparse.SUPPRESS
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


def _parser(commands: Any, name: str, help: str, epilog: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help,
        description=help[0].upper() + help[1:] + ".",
        epilog=epilog + "\n" + _EXIT_CODES,
        formatter_class=_HelpFormatter,
    )
    return p


def _common_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", help="Spark master URL (default: local[*])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark configuration entry (repeatable)")  # fmt: skip
    p.add_argument("--verbose", action="store_true",
                   help="show Spark's own log lines (warnings and errors)")  # fmt: skip


def _window_command(
    commands: Any, name: str, help: str, epilog: str, specific: Callable[[Any], None]
) -> argparse.ArgumentParser:
    p = _parser(commands, name, help, epilog + "\n" + _DURATIONS)
    p.add_argument("input", metavar="INPUT",
                   help="input file or directory (Parquet, or CSV with a header); a local path "
                   "or a URL Spark reads (s3a://, hdfs://)")  # fmt: skip
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                   help="output directory (must not exist, unless --overwrite)")  # fmt: skip
    p.add_argument("--key", action="append", required=True, metavar="COL",
                   help="key column (repeat, or comma-separated, for several)")  # fmt: skip
    p.add_argument("--time", required=True, metavar="COL",
                   help="time column: a timestamp, integer epoch ticks, or text with "
                   "--time-format")  # fmt: skip
    p.add_argument("--time-unit", choices=["s", "ms", "us", "ns"],
                   help="tick of an integer time column (default: ms)")  # fmt: skip
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
                   help="where --on-invalid drop writes rejected rows (default: "
                   "OUTPUT.rejected)")  # fmt: skip
    p.add_argument("--format", choices=["parquet", "csv"],
                   help="input format (default: csv for a name ending in .csv, else "
                   "parquet)")  # fmt: skip
    p.add_argument(
        "--output-format",
        choices=["parquet", "csv"],
        help="output format (default: by the output's name, as --format)",
    )
    p.add_argument("--partitions", type=int, metavar="N",
                   help="partitions of the shuffle by key (default: "
                   "spark.sql.shuffle.partitions)")  # fmt: skip
    p.add_argument(
        "--overwrite", action="store_true", help="replace an existing OUTPUT (and --rejected)"
    )
    _common_options(p)
    p.set_defaults(run=windows)
    return p


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``windowstore`` command."""
    parser = argparse.ArgumentParser(
        prog="windowstore",
        description=_DESCRIPTION,
        epilog=_EXIT_CODES,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"windowstore {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def gaps(p: argparse.ArgumentParser) -> None:
        p.add_argument("--gap", metavar="DURATION",
                       help="fixed inactivity gap that closes a session")  # fmt: skip
        p.add_argument(
            "--gap-column",
            metavar="COL",
            help="column of per-record gaps (dynamic gaps; needs --max-gap)",
        )
        p.add_argument("--max-gap", metavar="DURATION", help="cap on the dynamic gaps")
        p.add_argument("--max-duration", metavar="DURATION",
                       help="longest span of a session from its first to its last event: a "
                       "record later than that after its session's start starts a new "
                       "session")  # fmt: skip
        p.add_argument("--records", action="store_true",
                       help="write every input row with session_start, session_end and "
                       "session_id instead of one row per session (no --agg)")  # fmt: skip
        p.add_argument("--clock", choices=("event", "processing"), default="event",
                       help="what gives a record its time: its --time column (event, the "
                       "only clock of a bounded input; processing time is for streams, in "
                       "the Python API)")  # fmt: skip
        p.add_argument("--idle-timeout", metavar="DURATION",
                       help="streams only (the Python API): refused here, since a bounded "
                       "input is never idle and every window of it is written")  # fmt: skip

    def length(p: argparse.ArgumentParser) -> None:
        p.add_argument("--time-difference", required=True, metavar="DURATION",
                       help="window length D (windows [start, start + D], both ends "
                       "inclusive)")  # fmt: skip

    _window_command(commands, "sessions", "session windows of a Parquet/CSV input on Spark",
                    _SESSIONS_EXAMPLES, gaps)  # fmt: skip
    _window_command(commands, "sliding", "sliding windows of a Parquet/CSV input on Spark",
                    _SLIDING_EXAMPLES, length)  # fmt: skip
    d = _parser(commands, "demo", "sessionize a generated clickstream, check and summarize it",
                _DEMO_EXAMPLES)  # fmt: skip
    d.add_argument("--events", type=int, default=1_000_000, help="events to generate")
    d.add_argument("--users", type=int, default=10_000, help="distinct users")
    d.add_argument("--gap-minutes", type=int, default=30, help="session inactivity gap")
    d.add_argument("--grace-minutes", type=int, default=5, help="lateness accepted in streaming")
    d.add_argument("--seed", type=int, default=7, help="random seed")
    d.add_argument("--out", default="windowstore-demo", help="directory of the PNG plots")
    d.add_argument("--no-spark", action="store_true", help="skip the Spark run")
    d.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    _common_options(d)
    d.set_defaults(run=demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``windowstore`` console script."""
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
