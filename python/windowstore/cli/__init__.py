"""The ``windowstore`` command line.

``windowstore sessions INPUT -o OUTPUT --key user_id --time ts --gap 30m --agg count ...`` and
``windowstore sliding INPUT -o OUTPUT ... --time-difference 5m`` run the Spark adapters over
Parquet or CSV files, on a local Spark session or on any cluster (``--master URL``).

``windowstore state CHECKPOINT`` prints (or writes with ``-o``) the open windows of a streaming
query, read from its checkpoint.

``windowstore demo`` generates a clickstream (Zipf users, bursts separated by idle gaps),
sessionizes it on Spark (local by default), checks the sessions against the complete-data engine,
the streaming processor (records delayed within the grace, a snapshot and restore half-way) and an
independent computation, prints a summary and writes PNG plots.

A subcommand is a module defining a ``Command`` (``arguments.Command``: its name, help,
options and the function that runs it) and one line in ``COMMANDS`` below.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from windowstore.cli import arguments, demo, jobs, state

__all__ = ["COMMANDS", "build_parser", "main"]

#: The subcommands, in the order ``windowstore --help`` lists them.
COMMANDS = [jobs.SESSIONS, jobs.SLIDING, state.STATE, demo.DEMO]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``windowstore`` command."""
    return arguments.build_parser(COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``windowstore`` console script."""
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:  # named by the command's parser, so that the error names its --help
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    code: int = args.run(args)
    return code
