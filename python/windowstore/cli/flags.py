"""The command line's own words: aggregations, durations and ``--conf`` read from text, and
errors that name the flag at fault (``BadArgument``, ``cli_words``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from windowstore import agg
from windowstore._causes import MASTER_FORMS
from windowstore._durations import to_duration
from windowstore.exceptions import InvalidWindowSpec

__all__ = [
    "AGG_FORMS",
    "FLAGS",
    "MASTER_FORMS",
    "BadArgument",
    "check_master",
    "cli_words",
    "confs",
    "duration",
    "parse_agg",
    "without_name",
]


#: The aggregates of one column, by their command-line name (``sum:amount``).
_ONE_COLUMN = {"sum": agg.sum, "min": agg.min, "max": agg.max, "mean": agg.mean,
               "first": agg.first, "last": agg.last,
               "count_distinct": agg.count_distinct}  # fmt: skip
#: The aggregates that keep a list, with an optional bound (``collect:page:10:drop_oldest``).
_LISTS = {"collect": agg.collect, "collect_all": agg.collect_all}

#: Every aggregation's command-line form, as ``--help`` and errors list them.
AGG_FORMS = (
    "count, sum:COL, min:COL, max:COL, mean:COL, first:COL, last:COL, count_distinct:COL, "
    "collect:COL[:MAX_SIZE[:OVERFLOW]] (non-null values) or "
    "collect_all:COL[:MAX_SIZE[:OVERFLOW]] (every record's value, nulls included)"
)


def parse_agg(text: str) -> agg.Agg:
    """An aggregation from its command-line form: ``count``, ``sum:amount``, ``max:amount``,
    ``count_distinct:page``, ``collect:page:10:drop_oldest``, ``collect_all:page``, optionally
    named: ``total=sum:amount``. Every aggregate of ``windowstore.agg`` but ``udf`` (a Python
    function) has one.

    Example:
        >>> parse_agg("top=max:amount").output_name
        'top'
    """
    name, _, spec = text.rpartition("=")
    func, *rest = spec.split(":")
    if func == "count" and not rest:
        result = agg.count()
    elif func in _ONE_COLUMN and len(rest) == 1 and rest[0]:
        result = _ONE_COLUMN[func](rest[0])
    elif func in _LISTS and 1 <= len(rest) <= 3 and rest[0]:
        size = None
        if len(rest) > 1 and rest[1]:
            if not rest[1].isdigit():
                raise InvalidWindowSpec(f"invalid aggs: max_size {rest[1]!r} in {text!r}", "aggs")
            size = int(rest[1])
        overflow = rest[2] if len(rest) > 2 else "drop_oldest"
        result = _LISTS[func](rest[0], size, overflow)  # type: ignore[arg-type]
    elif func == "udf":
        raise InvalidWindowSpec(
            f"invalid aggs: {text!r}: agg.udf takes a Python function, which a command line "
            "cannot give; use windowstore.spark.session_windows / sliding_windows from Python",
            "aggs",
        )
    else:
        raise InvalidWindowSpec(
            f"invalid aggs: cannot read {text!r}; use {AGG_FORMS}, optionally NAME=...", "aggs"
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
FLAGS = {
    "key": "--key",
    "time": "--time",
    "time_unit": "--time-unit",
    "gap": "--gap",
    "gap_column": "--gap-column",
    "max_gap": "--max-gap",
    "max_duration": "--max-duration",
    "starts_session": "--starts-session",
    "ends_session": "--ends-session",
    "time_difference": "--time-difference",
    "aggs": "--agg",
    "max_size": "--agg collect:COL:MAX_SIZE",
    "overflow": "--agg collect:COL:MAX_SIZE:OVERFLOW",
    "on_invalid": "--on-invalid",
    "partitions": "--partitions",
    "conf": "--conf",
    "output": "--records",
}

#: Hints of the Python API's messages, in the command line's words.
_HINTS = [
    (re.compile(r"on_invalid='drop' with return_rejected=True"), "--on-invalid drop"),
    (re.compile(r"give gap \(fixed\) or gap_column and max_gap \(dynamic\)"),
     "give --gap (fixed) or --gap-column and --max-gap (dynamic)"),
    (re.compile(r"give gap or gap_column, not both"), "give --gap or --gap-column, not both"),
    (re.compile(r"a gap column needs max_gap"), "--gap-column needs --max-gap"),
    # The Spark adapter's "starts_session column "login" is string; ...".
    (re.compile(r"\b(starts|ends)_session column"), r"--\1-session column"),
    (re.compile(r'give a length such as "30m" or timedelta\(minutes=30\)'),
     "give a length such as 30m, 90s or 1h30m"),
    (re.compile(r'time_unit="(\w+)"'), r"--time-unit \1"),
    # Arrow's timestamp types in Spark's words (which of timestamp and timestamp_ntz Spark
    # reads depends on the input format and its settings).
    (re.compile(r"timestamp\[\w+(, tz=[^\]]+)?\]"), "timestamp"),
    (re.compile(r"leave time_unit out"), "leave --time-unit out"),
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
    return _INVALID.sub(lambda m: f"invalid {FLAGS.get(m[1], m[1])}:", message)


def without_name(message: str) -> str:
    """``message`` without its leading ``invalid PARAMETER:``."""
    return _INVALID.sub("", message).strip()


def _ticks_or_text(text: str) -> str | int:
    """A duration argument: digits are integer ticks, anything else a duration string."""
    return int(text) if text.lstrip("-").isdigit() else text


def duration(text: str | None, parameter: str) -> str | int | None:
    """A duration argument, checked now (a ``BadArgument`` naming its flag if unreadable)."""
    if text is None:
        return None
    value = _ticks_or_text(text)
    try:
        to_duration(value, parameter)
    except InvalidWindowSpec as e:
        raise BadArgument(FLAGS[parameter], str(e).removeprefix(f"invalid {parameter}: ")) from e
    return value


#: The master URLs Spark accepts (``SparkMasterRegex``, and ``spark-submit``'s check).
_MASTER = re.compile(
    r"local|local\[(\d+|\*)\]|local\[(\d+|\*)\s*,\s*\d+\]"
    r"|local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]|yarn|spark://.+|k8s://.+"
)


def check_master(url: str | None) -> None:
    """Checks a ``--master`` URL before Spark starts (a JVM started on a URL it cannot read
    prints its own stack trace and exits).

    Raises:
        BadArgument: naming ``--master``, the URL and the forms Spark accepts.
    """
    if url is not None and not _MASTER.fullmatch(url):
        raise BadArgument("--master", f"Spark cannot run on {url!r}: give {MASTER_FORMS}")


def confs(pairs: Sequence[str]) -> dict[str, str]:
    """The ``--conf KEY=VALUE`` arguments as a dict."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadArgument("--conf", f"{pair!r} is not KEY=VALUE")
        out[key] = value
    return out
