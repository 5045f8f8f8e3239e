"""The harness's data: cases, output rows per input record, dropped-record counts, batches.

A *case* is the oracle's case format (see ``kafka_oracle``) plus optional harness-only fields
that change how windowstore runs it, never what it is given:

- ``"gap_column": True`` (sessions): windowstore reads the gap from a column holding ``gap`` on
  every row (``max_gap=gap``), so the dynamic-gap path is compared with Kafka's fixed gap;
- ``"restart_at": i``: windowstore snapshots and restores its processor before record ``i``
  (Kafka does not restart; docs/semantics.md 1 and 7: our stream time survives a restart);
- a fourth field on every record (emit ``"updates"``): the number of its batch. Consecutive
  records with one number go to windowstore in one ``process()`` call, and to Kafka between
  two cache flushes (``batch_ends``). Kept on the record so that shrinking keeps it.

Emit modes of a case: ``"update"`` (windowstore ``changes``, Kafka without cache),
``"updates"`` (windowstore ``updates``, Kafka with its record cache), ``"final"`` (windowstore
``final``, Kafka ``onWindowClose``) and ``"suppress"`` (windowstore ``final``, Kafka
``suppress(untilWindowCloses)``).

Every output record becomes a :data:`Row` ``(key, start, end, value, time)``: ``value`` None is
a delete (Kafka's tombstone), ``time`` is the record timestamp Kafka forwards (sessions: the
window end; sliding: the largest record time in the window, our ``window_time``). Rows are
grouped by the input record whose processing emitted them (a batch's rows: by its last
record). :data:`Drops` are, per input record, Kafka's dropped-records count and ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

Case = dict[str, Any]
Value = int | Fraction | tuple[int, ...] | None
Row = tuple[str, int, int, Value, int]
Rows = list[list[Row]]  # per input record, the rows its processing emitted
Drops = list[int]  # per input record, the records dropped and window updates skipped

HARNESS_FIELDS = ("gap_column", "restart_at")


def session(gap: int, grace: int, agg: str, emit: str, records: list[list[Any]]) -> Case:
    """A session-window case."""
    return dict(window="session", gap=gap, grace=grace, agg=agg, emit=emit, records=records)


def sliding(d: int, grace: int, agg: str, emit: str, records: list[list[Any]]) -> Case:
    """A sliding-window case, ``d`` its time difference."""
    return dict(
        window="sliding", time_difference=d, grace=grace, agg=agg, emit=emit, records=records
    )


def with_records(case: Case, records: Sequence[Sequence[Any]]) -> Case:
    """The same case over other records (a ``restart_at`` beyond them is dropped)."""
    out = {**case, "records": [list(r) for r in records]}
    if out.get("restart_at", 0) >= len(records):
        out.pop("restart_at")
    return out


def batch_ends(case: Case) -> list[int]:
    """The index of the last record of each batch (every record ends one unless the records
    carry batch numbers)."""
    records = case["records"]
    return [
        i
        for i, r in enumerate(records)
        if len(r) < 4 or i + 1 == len(records) or records[i + 1][3] != r[3]
    ]


def by_batch(case: Case, rows: Rows) -> Rows:
    """Each batch's rows, in order, on its last record; nothing on the others."""
    out: Rows = [[] for _ in rows]
    start = 0
    for end in batch_ends(case):
        out[end] = [r for g in rows[start : end + 1] for r in g]
        start = end + 1
    return out


def drops_by_batch(case: Case, drops: Drops) -> Drops:
    """Each batch's dropped-records count on its last record, 0 on the others."""
    out = [0] * len(drops)
    start = 0
    for end in batch_ends(case):
        out[end] = sum(drops[start : end + 1])
        start = end + 1
    return out


def stream_times(case: Case) -> list[int]:
    """Stream time after each input record (the largest time so far)."""
    out: list[int] = []
    for r in case["records"]:
        out.append(r[1] if not out else max(out[-1], r[1]))
    return out
