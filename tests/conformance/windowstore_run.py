"""windowstore's side of a case: its output rows and dropped-record counts per input record."""

from __future__ import annotations

import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from windowstore import SessionWindowProcessor, SlidingWindowProcessor, agg

from .rows import Case, Drops, Row, Rows, Value, batch_ends, stream_times

Emit = Literal["changes", "updates", "final"]
EMIT: dict[str, Emit] = {
    "update": "changes",
    "updates": "updates",
    "final": "final",
    "suppress": "final",
}


def _our_aggs(case: Case) -> list[agg.Agg]:
    name = case["agg"]
    if name == "count":
        return [agg.count().alias("value")]
    if name == "concat":
        return [agg.collect("v").alias("value")]
    return [getattr(agg, name)("v").alias("value")]


def _processor(case: Case) -> Any:
    common: dict[str, Any] = {
        "key": "k",
        "time": "t",
        "grace": case["grace"],
        "emit": EMIT[case["emit"]],
        "aggs": _our_aggs(case),
    }
    if case["window"] == "session":
        if "retention" in case:
            common["retention"] = case["retention"]
        if case.get("gap_column"):
            return SessionWindowProcessor(gap_column="g", max_gap=case["gap"], **common)
        return SessionWindowProcessor(gap=case["gap"], **common)
    return SlidingWindowProcessor(time_difference=case["time_difference"], **common)


def _input_table(case: Case) -> pa.Table:
    records = case["records"]
    columns: dict[str, Any] = {
        "k": pa.array([r[0] for r in records], pa.string()),
        "t": pa.array([r[1] for r in records], pa.int64()),
        "v": pa.array([r[2] for r in records], pa.int64()),
    }
    if case.get("gap_column"):
        columns["g"] = pa.array([case["gap"]] * len(records), pa.int64())
    return pa.table(columns)


def run_windowstore(case: Case) -> Rows:
    """windowstore's output per input record (see :func:`run_windowstore_full`)."""
    return run_windowstore_full(case)[0]


def run_windowstore_full(case: Case) -> tuple[Rows, Drops]:
    """windowstore's output per input record, and its dropped-record counts.

    One ``process()`` call per batch (per record unless the records carry batch numbers), its
    output on the batch's last record; no flush (Kafka has none). The dropped-record count of
    a call is what Kafka's dropped-records metric counts: records dropped whole as late
    (sessions: every late record; sliding: those with ``t + D < close``; windowstore also
    rejects as late a sliding record that lands in no open window, for which Kafka counts only
    the skipped updates) plus, for sliding windows, the skipped updates of closed windows
    (``late_window_update``). Every record dropped whole must be among the rejected rows, with
    reason ``late``, and their number must match the ``rejected_late`` metric.
    """
    session = case["window"] == "session"
    start, end = ("session_start", "session_end") if session else ("window_start", "window_end")
    processor = _processor(case)
    table = _input_table(case)
    restart_at = case.get("restart_at")
    whole = _dropped_whole(case)
    rows: Rows = [[] for _ in case["records"]]
    drops: Drops = [0] * len(case["records"])
    first = 0
    with tempfile.TemporaryDirectory(prefix="windowstore-conformance-") as tmp:
        for last in batch_ends(case):
            if restart_at is not None and first <= restart_at <= last:
                path = Path(tmp) / "snapshot"
                processor.snapshot(path)
                processor = type(processor).restore(path)
            before = processor.metrics()
            out = processor.process(table.slice(first, last + 1 - first))
            after = processor.metrics()
            group: list[Row] = []
            for r in out.to_pylist():
                deleted = r.get("op") == "delete"
                value = None if deleted else _value(r["value"], len(case["records"]))
                time = r[end] if session else r["window_time"]
                group.append((r["k"], r[start], r[end], value, time))
            rows[last] = group
            rejected = processor.rejected().to_pylist()
            late = [(r["k"], r["t"], r["v"]) for r in rejected if r["reason"] == "late"]
            if len(late) != len(rejected) or len(late) != (
                after["rejected_late"] - before["rejected_late"]
            ):
                raise AssertionError(f"rejected rows {rejected} against metrics {after}")
            batch = range(first, last + 1)
            expected = [tuple(case["records"][i][:3]) for i in batch if i in whole]
            missing = [r for r in expected if not _take(late, r)]
            if missing:
                raise AssertionError(f"late records {missing} are not among the rejected rows")
            if session:
                drops[last] = after["rejected_late"] - before["rejected_late"]
            else:
                skipped = after["late_window_update"] - before["late_window_update"]
                drops[last] = skipped + len(expected)
            first = last + 1
    return rows, drops


def _dropped_whole(case: Case) -> set[int]:
    """The sliding records with ``t + D < stream time - grace`` (none for sessions)."""
    if case["window"] != "sliding":
        return set()
    d, grace = case["time_difference"], case["grace"]
    return {
        i
        for i, (r, st) in enumerate(zip(case["records"], stream_times(case), strict=True))
        if r[1] + d < st - grace
    }


def _take(rows: list[tuple[Any, ...]], row: tuple[Any, ...]) -> bool:
    if row in rows:
        rows.remove(row)
        return True
    return False


def _value(v: Any, n: int) -> Value:
    """A row's aggregate as compared: collect as a tuple, a mean as the fraction of
    denominator at most ``n`` (the records of the case) nearest to it, i.e. exactly the mean
    of the window's records (float rounding is far below the spacing of such fractions)."""
    if isinstance(v, list):
        return tuple(v)
    if isinstance(v, float):
        return Fraction(v).limit_denominator(n)
    assert isinstance(v, int), v
    return v
