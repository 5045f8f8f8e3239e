"""The command line's report of a failed Spark call: the root cause in one line
(``windowstore._causes.root_cause``, shared with ``windowstore.spark.root_cause``), and the whole
trace under ``--verbose``."""

from __future__ import annotations

import sys
import traceback

from windowstore._causes import root_cause

__all__ = ["root_cause", "show_trace"]


def show_trace(e: BaseException, verbose: bool) -> None:
    """Prints ``e``'s whole trace (Python's, and the Java one Py4J includes) on stderr if
    ``verbose``: the detail behind the one-line error."""
    if verbose:
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
