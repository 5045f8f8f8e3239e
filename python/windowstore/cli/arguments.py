"""The ``windowstore`` argument parser, built from a list of ``Command``s: each subcommand
declares its name, help, examples, options and the function that runs it; this module adds
what every command shares (formatting, exit codes, the Spark options)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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


def output_format_option(p: argparse.ArgumentParser, default: str) -> None:
    """``--output-format``, Parquet or CSV (``inputs.file_format`` reads it); ``default`` says
    what an output without it is written as."""
    p.add_argument(
        "--output-format", choices=["parquet", "csv"], help=f"output format (default: {default})"
    )


def spark_options(p: argparse.ArgumentParser) -> None:
    """``--master``, ``--conf`` and ``--verbose``: the options of a command that runs Spark."""
    p.add_argument("--master", help="Spark master URL (default: local[*])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark configuration entry (repeatable)")  # fmt: skip
    p.add_argument("--verbose", action="store_true",
                   help="show Spark's own log lines (warnings and errors)")  # fmt: skip


def _description(commands: Sequence[Command]) -> str:
    """The top-level help's description: the intro, then a line per command."""
    width = max(len(c.name) for c in commands)
    lines = "".join(f"  windowstore {c.name:<{width}} {c.synopsis}\n" for c in commands)
    return f"{_INTRO}\ncommands:\n{lines}\n{_OUTRO}"


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    """The argument parser of the ``windowstore`` command with ``commands``, in that order;
    the parsed arguments' ``run`` is the chosen command's."""
    parser = argparse.ArgumentParser(
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
        p.set_defaults(run=command.run)
    return parser
