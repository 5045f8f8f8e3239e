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
from windowstore.exceptions import InvalidWindowSpec, SchemaError

__all__ = [
    "ROW",
    "SESSION_COLUMNS",
    "Output",
    "check_columns",
    "check_output",
    "complete_records",
]

#: The core's hidden input column of row numbers, and its aggregate of them (the last one).
ROW = "__windowstore_row"
LAST = "__windowstore_last"
#: The columns ``output="records"`` adds to every row.
SESSION_COLUMNS = ("session_start", "session_end", "session_id")

#: What session windows output: one row per session, or every input row tagged with its session.
Output = Literal["windows", "records"]


def check_output(output: object, aggs: Sequence[Agg], emit: str = "final") -> bool:
    """Whether ``output`` asks for records; refuses what records mode cannot do."""
    if output not in ("windows", "records"):
        raise InvalidWindowSpec(
            f'invalid output: {output!r}; expected "windows" or "records"', "output"
        )
    if output == "windows":
        return False
    if emit != "final":
        raise InvalidWindowSpec(
            f'invalid output: "records" needs emit="final" (a session\'s rows come out once, '
            f"when it closes), not emit={emit!r}",
            "output",
        )
    if isinstance(aggs, Agg | str) or len(list(aggs)):
        raise InvalidWindowSpec(
            'invalid aggs: output="records" tags rows with their session and takes no '
            "aggregations; group the tagged rows by session_id to aggregate them",
            "aggs",
        )
    return True


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
