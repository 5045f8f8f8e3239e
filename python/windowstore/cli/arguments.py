"""The ``windowstore`` argument parser, built from a list of ``Command``s: each subcommand
declares its name, help, examples, options and the function that runs it; this module adds
what every command shares (formatting, exit codes, the Spark options)."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from windowstore import __version__

__all__ = ["Command", "build_parser", "output_format_option", "spark_options"]


@dataclass(frozen=True)
class Command:
    """A subcommand, ``windowstore NAME``."""

    #: The name typed after ``windowstore``.
    name: str
    #: Its arguments in ``windowstore --help``'s list of commands (``INPUT -o OUTPUT ...``).
    synopsis: str
    #: One line, lower case, without a full stop: the list of commands, and (capitalized) the
    #: description of ``windowstore NAME --help``.
    help: str
    #: The end of ``windowstore NAME --help`` (examples), before the exit codes.
    epilog: str
    #: Adds the command's options to its parser.
    options: Callable[[argparse.ArgumentParser], None]
    #: Runs the command on the parsed arguments; returns the exit code.
    run: Callable[[argparse.Namespace], int]


_INTRO = """\
Session and sliding windows of Parquet or CSV files on Spark (local or a cluster), with the
semantics of Kafka Streams; the open windows of a streaming query, from its checkpoint; and a
demo on generated data.
"""

_OUTRO = "'windowstore COMMAND --help' shows a command's options and examples.\n"

_EXIT_CODES = """\
exit codes:
  0  done
  1  the Spark job failed (the row and its reason are printed)
  2  bad arguments or input (the flag or column at fault is named), or pyspark is missing
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


#: Options of the Python API that the commands do not have, and why: a file is bounded data.
_STREAM_ONLY = {
    "--clock": "a file's records have no arrival time, so its windows go by the --time column",
    "--idle-timeout": "a file is never idle: every window of it is written when the job ends",
    "--grace": "a file is read whole, so no record of it is late",
}
_STREAMS = (
    "processing time, idle timeouts and grace are for streams: SessionWindowProcessor, or "
    "windowstore.spark.session_windows on a streaming DataFrame"
)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, ``error: ...``, naming the command's
    ``--help``; an option of the Python API that files do not have says why."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            message += self._unrecognized(message.split()[2:])
        self.exit(2, f"error: {message} ('{self.prog} --help' lists the options)\n")

    def _unrecognized(self, words: list[str]) -> str:
        """What to say of unrecognized ``words``: why a stream-only option is not here, or the
        option closest to a misspelt one."""
        flags = [w.partition("=")[0] for w in words if w.startswith("--")]
        why = [f"{flag}: {_STREAM_ONLY[flag]}" for flag in flags if flag in _STREAM_ONLY]
        if why:
            return f" ({'; '.join(why)}; {_STREAMS})"
        known = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        close = [m for f in flags for m in difflib.get_close_matches(f, known, n=1, cutoff=0.75)]
        return f" (did you mean {', '.join(close)}?)" if close else ""


def output_format_option(p: argparse.ArgumentParser, default: str) -> None:
    """``--output-format``, Parquet, CSV or JSON Lines (``outputs.output_format`` reads it);
    ``default`` says what an output without it is written as."""
    p.add_argument("--output-format", choices=["parquet", "csv", "json"],
                   help=f"output format (default: {default})")  # fmt: skip


def spark_options(p: argparse.ArgumentParser) -> None:
    """``--master``, ``--conf`` and ``--verbose``: the options of a command that runs Spark."""
    p.add_argument("--master", help="Spark master URL (default: local[*])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark configuration entry (repeatable)")  # fmt: skip
    p.add_argument("--verbose", action="store_true",
                   help="show Spark's own log lines (warnings and errors) and a failure's "
                   "whole trace (Python's and Java's)")  # fmt: skip


def _description(commands: Sequence[Command]) -> str:
    """The top-level help's description: the intro, then a line per command."""
    width = max(len(c.name) for c in commands)
    lines = "".join(f"  windowstore {c.name:<{width}} {c.synopsis}\n" for c in commands)
    return f"{_INTRO}\ncommands:\n{lines}\n{_OUTRO}"


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    """The argument parser of the ``windowstore`` command with ``commands``, in that order;
    the parsed arguments' ``run`` is the chosen command's, ``parser`` its parser."""
    parser = _Parser(
        prog="windowstore",
        description=_description(commands),
        epilog=_EXIT_CODES,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"windowstore {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands:
        p = subparsers.add_parser(
            command.name,
            help=command.help,
            description=command.help[0].upper() + command.help[1:] + ".",
            epilog=command.epilog + "\n" + _EXIT_CODES,
            formatter_class=_HelpFormatter,
        )
        command.options(p)
        p.set_defaults(run=command.run, parser=p)
    return parser
