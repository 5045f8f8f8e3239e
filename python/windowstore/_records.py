"""Sessions tagged on rows (``output="records"``): argument checks, and complete mode's call
into the core, which tags every row with its session's bounds and id (the streaming processor
does it inside its own calls, holding the rows of open sessions in its state)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import pyarrow as pa

from windowstore import _core
from windowstore._processor import arrow_data
from windowstore.agg import Agg
from windowstore.exceptions import SchemaError

__all__ = [
    "ROW",
    "SESSION_COLUMNS",
    "Output",
    "check_columns",
    "check_output",
    "complete_records",
]

#: The core's hidden input column of row numbers, and its aggregate of them (the last one).
ROW = _core.RECORDS_ROW
LAST = _core.RECORDS_LAST
#: The columns ``output="records"`` adds to every row.
SESSION_COLUMNS = _core.SESSION_COLUMNS

#: What session windows output: one row per session, or every input row tagged with its session.
Output = Literal["windows", "records"]


def check_output(output: object, aggs: Sequence[Agg], emit: str = "final") -> bool:
    """Whether ``output`` asks for records; refuses what records mode cannot do (the core's
    rule)."""
    n = 1 if isinstance(aggs, Agg | str) else len(list(aggs))
    return _core.check_output(output if isinstance(output, str) else repr(output), n, emit)


def check_columns(names: Sequence[str]) -> None:
    """Refuses input columns whose names records mode needs for itself."""
    for name in (*SESSION_COLUMNS, ROW, LAST):
        if name in names:
            raise SchemaError(
                f'column "{name}": output="records" adds session_start, session_end and '
                f"session_id to the input's columns (and uses {ROW} internally); rename the "
                "input column",
                name,
            )


def complete_records(data: Any, core_kwargs: dict[str, Any]) -> tuple[pa.Table, pa.Table]:
    """Complete mode, records output: ``(tagged rows, rejected rows)``.

    ``core_kwargs`` are those of ``_core.session_windows`` without ``aggs``. Sessions come by
    key, then start; the rows of a session by time, ties in input order."""
    tagged, rejected, _clamped = _core.session_windows(
        arrow_data(data), **core_kwargs, aggs=[], output="records"
    )
    return tagged, rejected
