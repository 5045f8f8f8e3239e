"""A ``sessions`` or ``sliding`` command checked whole before Spark starts: its arguments and,
for a local input, the input's columns, through the engines' own rules (pyspark is not
imported). Every problem is a ``BadArgument`` naming the flag, the input or the column."""

from __future__ import annotations

import argparse
import difflib
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from windowstore import agg
from windowstore._durations import check_session_durations, check_sliding_durations
from windowstore.cli.flags import (
    FLAGS,
    BadArgument,
    check_master,
    cli_words,
    confs,
    duration,
    parse_agg,
    without_name,
)
from windowstore.cli.inputs import file_format, input_schema, local_path
from windowstore.cli.outputs import names_a_file, output_format, rejected_path
from windowstore.exceptions import InvalidWindowSpec, SchemaError
from windowstore.sessions import session_windows
from windowstore.sliding import sliding_windows

__all__ = ["PARSED_COLUMN", "WindowJob", "check_job", "check_units", "no_such_column"]

#: The type of a time column parsed with ``--time-format``.
PARSED_TIME = pa.timestamp("us", "UTC")
#: The column holding the parsed time (the input's own time column stays as it was, so that
#: rejected rows keep the text that did not parse).
PARSED_COLUMN = "__windowstore_time"


@dataclass
class WindowJob:
    """A ``sessions`` or ``sliding`` command with every argument checked, before Spark starts."""

    command: str
    input: str
    output: str
    rejected: str | None
    #: The format of ``rejected``: its name's, else the output's.
    rejected_fmt: str
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
        detail = without_name(str(e))
        part = {"max_size": "MAX_SIZE ", "overflow": "OVERFLOW "}.get(e.parameter or "", "")
        if part:
            detail = f"{text!r}: {part}{detail}"
        raise BadArgument("--agg", detail) from e


def _session_windows(args: argparse.Namespace) -> dict[str, Any]:
    """The window arguments of ``sessions``: a fixed gap or a gap column with its cap."""
    if args.gap is not None and args.gap_column is not None:
        raise BadArgument("--gap", "give --gap or --gap-column, not both")
    if args.gap is None and args.gap_column is None:
        raise BadArgument("--gap", "give --gap (fixed) or --gap-column and --max-gap (dynamic)")
    if args.gap_column is not None and args.max_gap is None:
        raise BadArgument("--max-gap", "--gap-column needs --max-gap (the largest gap)")
    if args.gap_column is None and args.max_gap is not None:
        raise BadArgument("--max-gap", "only with --gap-column (dynamic gaps)")
    return {
        "gap": duration(args.gap, "gap"),
        "gap_column": args.gap_column,
        "max_gap": duration(args.max_gap, "max_gap"),
        "max_duration": duration(args.max_duration, "max_duration"),
        "starts_session": args.starts_session,
        "ends_session": args.ends_session,
    }


#: The duration parameters of the two commands (their flags: ``FLAGS``).
_DURATIONS = ("gap", "max_gap", "max_duration", "time_difference")


def check_units(job: WindowJob, time_type: pa.DataType) -> None:
    """The job's durations and ``--time-unit`` against its time column's type, by the core's
    rule (``check_session_durations``): a bare integer counts ticks of an integer time column,
    so on a timestamp (or date) column it is refused, as ``--time-unit`` is.

    Raises:
        BadArgument: naming the flag, the column's type and the accepted forms.
    """
    if not (pa.types.is_timestamp(time_type) or pa.types.is_date(time_type)):
        return
    durations = {p: job.windows[p] for p in _DURATIONS if job.windows.get(p) is not None}
    # Spark reads a date as a day's first instant: its lengths are those of a timestamp.
    as_time = pa.timestamp("us") if pa.types.is_date(time_type) else time_type
    time_unit = job.common.get("time_unit")
    try:
        if job.command == "sessions":
            gap_column = job.windows.get("gap_column")
            check_session_durations(
                as_time, time=job.time, time_unit=time_unit, gap_column=gap_column, **durations
            )
        else:
            check_sliding_durations(as_time, time=job.time, time_unit=time_unit, **durations)
    except InvalidWindowSpec as e:
        raise BadArgument(FLAGS.get(e.parameter or ""), cli_words(without_name(str(e)))) from e


def _where(path: str) -> str:
    """``path`` as one spelling: a local path resolved, a URL without its final ``/``."""
    local = local_path(path)
    return str(local.resolve()) if local is not None else path.rstrip("/")


def check_job(args: argparse.Namespace) -> WindowJob:
    """Checks a ``sessions`` / ``sliding`` command's arguments and, for a local input, its
    schema (Parquet footer or CSV header) with the engines' own rules; all of this without
    Spark (pyspark is not imported).

    Raises:
        BadArgument: naming the flag, the input, or the column at fault.
    """
    keys = _keys(args.key)
    records = args.command == "sessions" and args.records
    aggs = _aggs(args.agg, records)
    if args.partitions is not None and args.partitions < 1:
        raise BadArgument("--partitions", f"must be at least 1, got {args.partitions}")
    conf = confs(args.conf)
    check_master(args.master)
    if args.time_format is not None and args.time_unit is not None:
        raise BadArgument(
            "--time-unit", "is the tick of an integer time column: --time-format parses text"
        )

    windows: dict[str, Any]
    if args.command == "sessions":
        windows = _session_windows(args)
    else:
        windows = {"time_difference": duration(args.time_difference, "time_difference")}

    in_fmt = file_format(args.input, args.format)
    out_fmt = output_format(args.output, args.output_format)
    rejected = _rejected(args)
    _check_targets(args, rejected)
    common: dict[str, Any] = {
        "key": keys,
        "time": args.time,
        "aggs": aggs,
        "on_invalid": args.on_invalid,
        "time_unit": args.time_unit,
    }
    if records:
        common["output"] = "records"
    rejected_fmt = output_format(rejected, None) if rejected and names_a_file(rejected) else None
    job = WindowJob(command=args.command, input=args.input, output=args.output,
                    rejected=rejected, rejected_fmt=rejected_fmt or out_fmt, in_fmt=in_fmt,
                    out_fmt=out_fmt, keys=keys, time=args.time,
                    time_format=args.time_format, aggs=aggs, windows=windows, common=common,
                    conf=conf, overwrite=args.overwrite)  # fmt: skip
    if job.time_format is not None:
        check_units(job, PARSED_TIME)
    source = local_path(args.input)
    if source is not None:
        if not source.exists():
            raise BadArgument("INPUT", f"no such file or directory: {args.input}")
        _check_schema(job, input_schema(source, in_fmt))
    return job


def _keys(given: list[str]) -> list[str]:
    """The key columns of the ``--key`` flags (each one column or comma-separated ones)."""
    keys = [k.strip() for value in given for k in value.split(",") if k.strip()]
    if not keys:
        raise BadArgument("--key", "give at least one key column")
    return keys


def _aggs(given: list[str], records: bool) -> list[agg.Agg]:
    """The aggregates of the ``--agg`` flags (count when there are none); with ``--records``,
    none (tagged rows take no ``--agg``)."""
    if records and given:
        raise BadArgument(
            "--records", "tagged rows take no --agg; aggregate them by session_id afterwards"
        )
    return [] if records else [_agg_argument(a) for a in given] or [agg.count()]


def _rejected(args: argparse.Namespace) -> str | None:
    """Where rejected rows go: with ``--on-invalid drop``, ``--rejected`` or the default beside
    the output; else nowhere (and ``--rejected`` is refused)."""
    if args.on_invalid == "drop":
        rejected: str = args.rejected or rejected_path(args.output)
        return rejected
    if args.rejected:
        raise BadArgument("--rejected", "rejected rows are only kept with --on-invalid drop")
    return None


def _check_targets(args: argparse.Namespace, rejected: str | None) -> None:
    """Refuses an output (or ``rejected`` target) that exists, without ``--overwrite``, or
    that is the input or the other target."""
    targets = [("-o/--output", args.output)] + ([("--rejected", rejected)] if rejected else [])
    taken = {_where(args.input): "INPUT"}
    for flag, target in targets:
        local = local_path(target)
        if local is not None and local.exists() and not args.overwrite:
            raise BadArgument(flag, f"{target} exists; give --overwrite to replace it")
        if _where(target) in taken:
            raise BadArgument(flag, f"{target} is also {taken[_where(target)]}")
        taken[_where(target)] = flag


def no_such_column(column: str, names: list[str], source: str) -> str:
    """The error of a column ``source`` lacks: the closest of its ``names`` (a misspelling, a
    different case), then all of them."""
    folded = {n.lower(): n for n in names}
    close = folded.get(column.lower()) or next(
        iter(difflib.get_close_matches(column, names, n=1, cutoff=0.6)), None
    )
    listed = f"{source} has {', '.join(names)}"
    if close:
        return f'column "{column}": no such column; did you mean "{close}"? ({listed})'
    return f'column "{column}": no such column; {listed}'


def _check_schema(job: WindowJob, schema: pa.Schema | list[str]) -> None:
    """The input's columns checked against the job: names first (a CSV header gives only
    names; Spark infers its types), then a Parquet schema's types through the engines' own
    checks on an empty table of it."""
    names = schema if isinstance(schema, list) else schema.names
    flags = _column_flags(job)
    for column, flag in flags.items():
        if column not in names:
            raise BadArgument(flag, no_such_column(column, names, job.input))
    if isinstance(schema, list):
        return
    if job.time_format is None:
        check_units(job, schema.field(job.time).type)
    else:
        schema = _parsed_time(job, schema)
    empty = schema.empty_table()
    try:
        if job.command == "sessions":
            session_windows(empty, **job.windows, **job.common)
        else:
            sliding_windows(empty, **job.windows, **job.common)
    except SchemaError as e:
        raise BadArgument(flags.get(e.column or ""), f"{job.input}: {cli_words(str(e))}") from e
    except InvalidWindowSpec as e:
        raise BadArgument(FLAGS.get(e.parameter or ""), cli_words(str(e))) from e


def _column_flags(job: WindowJob) -> dict[str, str]:
    """The flag that names each input column the job reads."""
    flags = {k: "--key" for k in job.keys}
    flags.update({a.column: "--agg" for a in job.aggs if a.column is not None})
    for parameter in ("gap_column", "starts_session", "ends_session"):
        if job.windows.get(parameter):
            flags[job.windows[parameter]] = FLAGS[parameter]
    flags[job.time] = "--time"
    return flags


def _parsed_time(job: WindowJob, schema: pa.Schema) -> pa.Schema:
    """``schema`` with the time column as ``--time-format`` parses it (``PARSED_TIME``); a
    time column that is not text, an integer, a timestamp or a date is refused."""
    t = schema.field(job.time).type
    if not (pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_timestamp(t)
            or pa.types.is_date(t)):  # fmt: skip
        raise BadArgument(
            "--time-format", f'column "{job.time}" is {t}, not text to parse as a time'
        )
    return schema.set(schema.get_field_index(job.time), pa.field(job.time, PARSED_TIME))
