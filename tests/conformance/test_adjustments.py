"""Every adjustment of the comparison, shown on a minimal stream: Kafka's output beside ours.

Each test runs the stream through Kafka Streams as given (or with only the adjustments it is
not about), prints nothing, and asserts what each side does; then that the comparison passes
with every adjustment and fails without the one under test. docs/semantics.md 7 lists the
deliberate differences; the others are Kafka behaviours found by the random comparison (see
each adjustment's docstring in ``harness``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest

from windowstore import SessionWindowProcessor, agg

from .adjustments import (
    ADJUSTMENTS,
    Adjustment,
    BoundaryRetention,
    KafkaTimeOffset,
    without,
)
from .harness import compare_all, kafka_case, passes
from .kafka_oracle import OracleError, run_oracle
from .rows import HARNESS_FIELDS, Case, Rows, session, sliding
from .windowstore_run import run_windowstore

pytestmark = pytest.mark.conformance

KafkaRow = tuple[int, str, int, int, Any, int]  # input index, key, start, end, value, timestamp


def kafka(case: Case, adjustments: Sequence[Adjustment] = ()) -> list[KafkaRow]:
    """Kafka's raw output for the case, with only ``adjustments`` applied to its input."""
    (out,) = run_oracle([kafka_case(case, adjustments)])
    return [(r["input"], r["key"], r["start"], r["end"], r["value"], r["timestamp"]) for r in out]


def ours(case: Case) -> Rows:
    return run_windowstore(case)


# docs/semantics.md 7: negative timestamps allowed, no [0, D] early window -> kafka_time_offset


def test_kafka_time_offset_early_window() -> None:
    case = sliding(10, 0, "concat", "update", [["k", 5, 1], ["k", 12, 2]])
    # Kafka puts the record at 5 < D in its special window [0, 10] ...
    assert kafka(case) == [
        (0, "k", 0, 10, "1", 5),
        (1, "k", 6, 16, "2", 12),
        (1, "k", 2, 12, "1,2", 12),
    ]
    # ... windowstore gives it its left window [-5, 5], like any other record.
    assert ours(case) == [
        [("k", -5, 5, (1,), 5)],
        [("k", 6, 16, (2,), 12), ("k", 2, 12, (1, 2), 12)],
    ]
    # Shifted by offset(case) = 5, Kafka's windows are ours shifted.
    assert KafkaTimeOffset.offset(case) == 5
    assert kafka(case, [KafkaTimeOffset()])[0] == (0, "k", 0, 10, "1", 10)
    assert passes(case)


def test_kafka_time_offset_negative_timestamps() -> None:
    case = session(10, 0, "concat", "update", [["k", -5, 1], ["k", -1, 2]])
    with pytest.raises(OracleError, match="Invalid timestamp: -5"):
        kafka(case)  # Kafka refuses the record
    assert ours(case) == [
        [("k", -5, -5, (1,), -5)],
        [("k", -5, -5, None, -5), ("k", -5, -1, (1, 2), -1)],
    ]
    assert passes(case)


# docs/semantics.md 2.6 and 4: Kafka's default store retentions -> boundary_retention


def test_boundary_retention_session() -> None:
    """gap 1, grace 0: k's records at 1000 and 1001 share a session (1000 + 1 >= 1001). Once
    j's record has moved Kafka's store time to 1001, its store no longer shows [1000, 1000]
    (end == stream time - gap - grace, still open) and Kafka starts a new session; windowstore
    merges, as docs/semantics.md 2.2 and 2.6 require."""
    case = session(1, 0, "count", "update", [["k", 1000, 1], ["j", 1001, 1], ["k", 1001, 1]])
    assert kafka(case) == [
        (0, "k", 1000, 1000, 1, 1000),
        (1, "j", 1001, 1001, 1, 1001),
        (2, "k", 1001, 1001, 1, 1001),
    ]
    assert ours(case) == [
        [("k", 1000, 1000, 1, 1000)],
        [("j", 1001, 1001, 1, 1001)],
        [("k", 1000, 1000, None, 1000), ("k", 1000, 1001, 2, 1001)],
    ]
    # With retention gap + grace + 1, Kafka merges too.
    assert BoundaryRetention.kafka_retention(case) == 2
    assert kafka(case, [BoundaryRetention()])[2:] == [
        (2, "k", 1000, 1000, None, 1000),
        (2, "k", 1000, 1001, 2, 1001),
    ]
    assert passes(case)
    assert not passes(case, without("boundary_retention"))


def test_boundary_retention_sliding() -> None:
    """D 2, grace 2: when 146 arrives, stream time is 148 and the previous record's left
    window [142, 144] starts at stream time - grace - 2D. Kafka's store (retention grace + 2D
    = 6, store time 148) no longer shows it, so Kafka builds 146's left window [144, 146]
    without the record at 144."""
    case = sliding(
        2, 2, "concat", "update", [["k", 144, 1], ["k", 147, 2], ["k", 148, 3], ["k", 146, 4]]
    )
    assert (3, "k", 144, 146, "4", 146) in kafka(case)
    assert ("k", 144, 146, (1, 4), 146) in ours(case)[3]
    assert BoundaryRetention.kafka_retention(case) == 2 + 2 * 2 + 2
    assert (3, "k", 144, 146, "1,4", 146) in kafka(case, [BoundaryRetention()])
    assert passes(case)
    assert not passes(case, without("boundary_retention"))


# docs/semantics.md 7: a record that would reopen a closed session is late -> reopen_closed_session


def test_reopen_closed_session() -> None:
    """gap 10, grace 0, retention 100 on both sides: [0, 0] closes when j moves stream time to
    11 but stays in both stores. k's record at 5 touches it: Kafka merges (its test is only
    whether the merged end 5 is below 11 - 10) and re-emits the closed session grown;
    windowstore rejects the record as late."""
    case = session(10, 0, "concat", "update", [["k", 0, 1], ["j", 11, 2], ["k", 5, 3]])
    case["retention"] = 100
    assert kafka(case, [BoundaryRetention()]) == [
        (0, "k", 0, 0, "1", 0),
        (1, "j", 11, 11, "2", 11),
        (2, "k", 0, 0, None, 0),
        (2, "k", 0, 5, "1,3", 5),
    ]
    p = SessionWindowProcessor(
        key="k", time="t", gap=10, grace=0, retention=100, emit="changes", aggs=[agg.count()]
    )
    for key, t, _ in case["records"]:
        p.process(pa.table({"k": [key], "t": pa.array([t], pa.int64())}))
    assert p.rejected().to_pylist() == [{"k": "k", "t": 5, "reason": "late"}]
    assert ours(case)[2] == []
    assert passes(case)
    assert not passes(case, without("reopen_closed_session"))


# emit final: Kafka's store expires a window at the record that closes it
# -> kafka_final_expired_before_emit


def test_kafka_final_expired_before_emit_session() -> None:
    """gap 10, grace 0: [59990, 59990] closes when the record at 60300 arrives; Kafka's put of
    [60300, 60300] first drops the store segment [0, 60000) (segments of 60 s), so the closed
    session is never emitted. A jump that stays within one segment loses nothing."""
    lost = session(10, 0, "count", "final", [["k", 59990, 1], ["k", 60300, 1]])
    assert kafka(lost, ADJUSTMENTS) == []
    assert ours(lost) == [[], [("k", 59990, 59990, 1, 59990)]]
    kept = session(10, 0, "count", "final", [["k", 100, 1], ["k", 400, 1]])
    assert kafka(kept, ADJUSTMENTS) == [(1, "k", 100, 100, 1, 100)]
    assert ours(kept) == [[], [("k", 100, 100, 1, 100)]]
    assert passes(lost)
    assert passes(kept)
    assert not passes(lost, without("kafka_final_expired_before_emit"))


def test_kafka_final_expired_before_emit_sliding() -> None:
    """D 5, grace 0 (Kafka's retention grace + 2D + 2 = 12): [207, 212] closes when the next
    record arrives; Kafka emits it if that record's left window starts at most 12 after 207,
    and never otherwise."""
    kept, lost = (sliding(5, 0, "count", "final", [["k", 212, 1], ["k", t, 1]]) for t in (224, 225))
    assert kafka(kept, ADJUSTMENTS) == [(1, "k", 207, 212, 1, 212)]
    assert kafka(lost, ADJUSTMENTS) == []
    assert ours(kept) == ours(lost) == [[], [("k", 207, 212, 1, 212)]]
    assert passes(kept)
    assert passes(lost)
    assert not passes(lost, without("kafka_final_expired_before_emit"))


# concatenation order -> concat_as_multiset


def test_concat_as_multiset() -> None:
    """Kafka's concatenation is in the order values reached the session (merged sessions, then
    the new value); collect is in event-time order."""
    case = session(10, 0, "concat", "update", [["k", 5, 1], ["k", 0, 2], ["k", 3, 3]])
    assert [row[4] for row in kafka(case)] == ["1", None, "1,2", None, "1,2,3"]
    assert [row[3] for group in ours(case) for row in group] == [
        (1,),
        None,
        (2, 1),
        None,
        (2, 3, 1),
    ]
    assert passes(case)
    assert not passes(case, without("concat_as_multiset"))


# sliding changes within one record -> sliding_order_within_record


def test_sliding_order_within_record() -> None:
    """A second record at 130 updates two windows: Kafka in descending start order (it iterates
    its store backwards), windowstore in ascending order. Replaying either gives the same."""
    case = sliding(7, 21, "concat", "update", [["k", 124, 1], ["k", 130, 2], ["k", 130, 3]])
    assert kafka(case)[3:] == [
        (2, "k", 125, 132, "2,3", 130),
        (2, "k", 123, 130, "1,2,3", 130),
    ]
    assert ours(case)[2] == [("k", 123, 130, (1, 2, 3), 130), ("k", 125, 132, (2, 3), 130)]
    assert passes(case)
    assert not passes(case, without("sliding_order_within_record"))


# sliding: a record whose left window was closed on arrival -> sliding_left_window_closed


def test_sliding_left_window_closed() -> None:
    """D 7, grace 0; j's record moves stream time to 913. k's record at 909 arrives with its
    left window [902, 909] closed; it joins [906, 913] and creates 906's right window
    [907, 914]. At 913, both find 909 as the previous record in [906, 913]; Kafka then
    overwrites it with 906 and does not create 909's right window [910, 917]. At 910, Kafka
    copies 910's right window [911, 918] from [907, 914], which holds the record at 909
    (value 4): a window holding a record before its start. windowstore creates [910, 917] and
    gives [911, 918] only the record at 913. Section 7's rule excludes Kafka's differing
    windows of k (counted), holds windowstore's to the definition, and goes on comparing k
    after the first exclusion (the record at 916)."""
    case = sliding(
        7,
        0,
        "concat",
        "update",
        [
            ["k", 905, 1],
            ["k", 906, 2],
            ["j", 913, 3],
            ["k", 909, 4],
            ["k", 913, 5],
            ["k", 910, 6],
            ["k", 916, 7],
        ],
    )
    k = kafka(case, ADJUSTMENTS)
    assert [r for r in k if r[0] == 4] == [
        (4, "k", 907, 914, "4,5", 913),
        (4, "k", 906, 913, "2,4,5", 913),
    ]
    assert (5, "k", 911, 918, "4,5", 913) in k
    assert ("k", 910, 917, (5,), 913) in ours(case)[4]
    assert ("k", 911, 918, (5,), 913) in ours(case)[5]
    (outcome,) = compare_all([case])
    assert outcome.mismatch is None
    assert (outcome.tally.excluded, outcome.tally.after_exclusion) == (5, 4)
    assert outcome.tally.marked_keys == 1

    def wrong_after_first_exclusion(case: Case, rows: Rows) -> Rows:
        """A planted bug in k's last window, after the first excluded one."""
        return [*rows[:6], [(k, s, e, (7, 7), t) for k, s, e, _v, t in rows[6]]]

    (planted,) = compare_all([case], plant=wrong_after_first_exclusion)
    assert planted.mismatch is not None
    assert planted.mismatch.index == 6
    assert "definition" in planted.mismatch.note


def test_sliding_previous_of_two_late_records() -> None:
    """D 35, grace 0; j moves stream time to 46, then 49. k's records at 44 and 46 both arrive
    with their left windows closed. 46 falls in 44's right window [45, 80], which it should
    create (docs/semantics.md 4: a window exists for every distinct set of records, and [45, 80] is
    open); Kafka does not. windowstore keeps the closed windows of 44 and 46 in its store
    (silently), so 46 finds 44's right window and creates it; at 47 that window holds 46 and 47
    and 46's right window [47, 82] holds 47 (docs/semantics.md 7: a sliding window holds exactly its
    records). This was issue 12's defect 2: windowstore gave [45, 80] only 47 and no [47, 82]."""
    case = sliding(
        35,
        0,
        "concat",
        "update",
        [
            ["k", 37, 1],
            ["k", 11, 2],
            ["j", 46, 3],
            ["k", 44, 4],
            ["j", 49, 5],
            ["k", 46, 6],
            ["k", 47, 7],
        ],
    )
    current: dict[tuple[str, int], Any] = {}
    for group in ours(case):
        for key, start, _end, value, _time in group:
            current[(key, start)] = value
    assert sorted(current[("k", 45)]) == [6, 7]
    assert sorted(current[("k", 47)]) == [7]


# docs/semantics.md 7: dynamic gaps defined order-independently


def test_dynamic_gap_column_equals_fixed_gap() -> None:
    """Kafka has no dynamic gaps (KIP-362 was never merged), so that difference cannot be run
    against it. What can: a gap column holding the fixed gap on every row gives Kafka's
    sessions exactly (random streams do this for a quarter of the session cases)."""
    records = [["k", 0, 1], ["k", 10, 2], ["k", 21, 3], ["k", 15, 4], ["k", 40, 5]]
    fixed = session(10, 30, "concat", "update", records)
    dynamic = {**fixed, "gap_column": True}
    assert ours(dynamic) == ours(fixed)
    assert passes(dynamic)
    # windowstore's own rule, with no Kafka counterpart: order does not matter. A record at 0
    # with gap 20 and one at 15 with gap 1 share a session in either arrival order.
    for rows in ([0, 15], [15, 0]):
        p = SessionWindowProcessor(
            key="k", time="t", gap_column="g", max_gap=20, grace=100, aggs=[agg.count()]
        )
        p.process(pa.table({"k": ["k", "k"], "t": rows, "g": [20 if t == 0 else 1 for t in rows]}))
        assert p.flush().to_pylist() == [
            {"k": "k", "session_start": 0, "session_end": 15, "count": 2}
        ]


# docs/semantics.md 7: stream time survives restarts


def test_stream_time_survives_restart() -> None:
    """gap 10, grace 0: after 100, a record at 50 is late. Restarted before it, Kafka has
    forgotten its stream time (observedStreamTime is a field of the processor, NO_TIMESTAMP in
    a new instance) and accepts it; windowstore, restored from a snapshot, still rejects it.
    (TopologyTestDriver cannot keep its stores across a restart, so the Kafka side shows only
    what the restart does to stream time: with it, 50 would be dropped whatever the store
    holds.)"""
    records = [["k", 100, 1], ["k", 50, 1]]
    case = {**session(10, 0, "count", "update", records), "restart_at": 1}
    plain = {k: v for k, v in case.items() if k not in HARNESS_FIELDS}
    (restarted,) = run_oracle([{**plain, "restart_before": [1]}])
    assert [(r["input"], r["start"], r["value"]) for r in restarted] == [(0, 100, 1), (1, 50, 1)]
    assert [r[0] for r in kafka(case)] == [0]  # no restart: 50 is late for Kafka too
    assert ours(case) == [[("k", 100, 100, 1, 100)], []]
    assert passes(case)
