"""The comparisons added beside emit-on-update, each on a minimal stream: Kafka beside ours.

``updates`` against Kafka's record cache, ``suppress(untilWindowCloses)`` against ``final``,
and dropped records against Kafka's dropped-records metric; then that the comparison passes
with every adjustment and fails without the one under test.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from .adjustments import ADJUSTMENTS, Adjustment, without
from .harness import kafka_case, passes
from .kafka_oracle import run_oracle_full
from .rows import Case, session, sliding
from .windowstore_run import run_windowstore_full

pytestmark = pytest.mark.conformance


def kafka(case: Case) -> tuple[list[tuple[Any, ...]], list[int]]:
    """Kafka's raw rows ``(input, key, start, end, value)`` and dropped records per input."""
    (out,) = run_oracle_full([kafka_case(case)])
    rows = [(r["input"], r["key"], r["start"], r["end"], r["value"]) for r in out["records"]]
    return rows, out["dropped"]


def test_suppress_at_window_end() -> None:
    """D 10, grace 0: the suppression emits [10, 20] at stream time 20 (end <= stream time -
    grace), while the window is still open; the record at 20 then updates it and it is emitted
    again. windowstore emits it once, when the record at 21 closes it."""
    case = sliding(10, 0, "count", "suppress", [["k", 20, 1], ["k", 20, 2], ["k", 21, 3]])
    rows, _ = kafka(case)
    assert [r for r in rows if r[2] == 10] == [(0, "k", 10, 20, 1), (1, "k", 10, 20, 2)]
    ours, _ = run_windowstore_full(case)
    assert ours == [[], [], [("k", 10, 20, 2, 20)]]
    assert passes(case)
    assert not passes(case, without("suppress_at_window_end"))


def test_cache_flush_order() -> None:
    """One batch of three records: both sides give each changed window once, with its value
    at the end of the batch; Kafka in the order the windows were last written."""
    records = [["k", 100, 1, 0], ["k", 105, 2, 0], ["k", 100, 3, 0]]
    case = sliding(10, 10, "count", "updates", records)
    rows, _ = kafka(case)
    assert rows == [(2, "k", 101, 111, 1), (2, "k", 95, 105, 3), (2, "k", 90, 100, 2)]
    ours, _ = run_windowstore_full(case)
    assert sorted(ours[2]) == [
        ("k", 90, 100, 2, 100),
        ("k", 95, 105, 3, 105),
        ("k", 101, 111, 1, 105),
    ]
    assert passes(case)
    assert not passes(case, without("cache_flush_order"))


def test_cached_session_outlives_retention() -> None:
    """gap 6, grace 5, one batch: when 438 arrives, [432, 432] is closed and, with the default
    retention gap + grace, expired from both stores; Kafka's cache still shows it (it was
    written in this batch) and merges [432, 438], windowstore starts [438, 438] (docs/semantics.md
    2.6). The generator gives session ``updates`` cases a retention covering every batch."""
    records = [["k", 432, 18, 0], ["k", 449, 0, 0], ["k", 438, 13, 0]]
    case = session(6, 5, "max", "updates", records)
    rows, _ = kafka(case)
    assert (2, "k", 432, 438, 18) in rows
    ours, _ = run_windowstore_full(case)
    assert ("k", 438, 438, 13, 438) in ours[2]
    assert not passes(case)
    assert passes({**case, "retention": 6 + 5 + 449 - 432})


def test_dropped_records_match_kafka_metric() -> None:
    """D 10, grace 5: 84 is dropped whole (84 + 10 < 95); 92's left window [82, 92] is closed,
    one skipped update, while it joins [90, 100]. Kafka's metric and ours agree; a windowstore
    that counted nothing would not pass."""
    case = sliding(10, 5, "count", "update", [["k", 100, 1], ["k", 84, 1], ["k", 92, 1]])
    assert kafka(case)[1] == [0, 1, 1]
    assert run_windowstore_full(case)[1] == [0, 1, 1]
    assert passes(case)

    class CountsNothing(Adjustment):
        name = "planted"

        def our_drops(self, case: Case, drops: list[int]) -> list[int]:
            return [0] * len(drops)

    assert not passes(case, [*ADJUSTMENTS, CountsNothing()])


def test_mean_min_max_compare_exactly() -> None:
    """Kafka's mean comes as the exact fraction sum/count, ours as a float read back as the
    nearest fraction of small denominator; min and max as integers."""
    records = [["k", 0, 1], ["k", 3, 2], ["k", 5, 2]]
    for name in ("mean", "min", "max"):
        assert passes(session(10, 0, name, "update", records))
    case = session(10, 0, "mean", "update", records)
    assert kafka(case)[0][-1][4] == "5/3"
    assert run_windowstore_full(case)[0][-1][-1][3] == Fraction(5, 3)
