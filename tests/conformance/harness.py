"""windowstore against Kafka Streams, record by record: Kafka's rows, the comparison, the shrinker.

The case format, rows and emit modes are described in ``rows``; random cases come from
``generator``. The comparison applies ``adjustments.ADJUSTMENTS`` (each deliberate difference,
named and explained) to both sides; for sliding windows, windows under docs/semantics.md 7 follow
the rule of ``section7`` (windowstore against the definition, Kafka's differing windows
excluded and counted); everything else must be equal: the rows of every input record and its
dropped-record count (Kafka's dropped-records metric). On a mismatch :func:`shrink` reduces
the stream (delta debugging) and :meth:`Mismatch.report` prints a case ready to paste into
:func:`compare_case`.
"""

from __future__ import annotations

import math
import pprint
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from . import section7
from .adjustments import ADJUSTMENTS, Adjustment, KafkaTimeOffset, ReopenClosedSession
from .kafka_oracle import OracleRecord, OracleResult, run_oracle_full
from .rows import HARNESS_FIELDS, Case, Drops, Rows, Value, batch_ends, with_records
from .section7 import Tally
from .windowstore_run import run_windowstore_full

Plant = Callable[[Case, Rows], Rows]

KAFKA_EMIT = {"update": "update", "updates": "cached", "final": "final", "suppress": "suppress"}


# --------------------------------------------------------------------------------------------
# Kafka's side


def kafka_rows(n_inputs: int, output: Sequence[OracleRecord]) -> Rows:
    """Kafka's output per input record (of the ``n_inputs`` it was given), in forwarding order.
    Concatenations become tuples, means (``"sum/count"``) fractions."""
    rows: Rows = [[] for _ in range(n_inputs)]
    for r in output:
        v = r["value"]
        value: Value
        if v is None or isinstance(v, int):
            value = v
        elif "/" in v:
            value = Fraction(*map(int, v.split("/")))
        else:  # concat: "3,1,2"
            value = tuple(int(x) for x in v.split(",")) if v else ()
        rows[r["input"]].append((r["key"], r["start"], r["end"], value, r["timestamp"]))
    return rows


def kafka_case(case: Case, adjustments: Sequence[Adjustment] = ADJUSTMENTS) -> Case:
    """The case Kafka runs: harness-only fields removed, the emit mode named as the oracle
    names it, then every adjustment applied; batch numbers become ``batch_ends``."""
    out = {k: v for k, v in case.items() if k not in HARNESS_FIELDS}
    out["emit"] = KAFKA_EMIT[case["emit"]]
    out["records"] = [list(r[:3]) for r in case["records"]]
    for a in adjustments:
        out = a.kafka_case(case, out)
    if case["emit"] == "updates":
        out["batch_ends"] = _kafka_batch_ends(case, adjustments)
    return out


def _kafka_batch_ends(case: Case, adjustments: Sequence[Adjustment]) -> list[int]:
    """The batch ends in the numbering of the records Kafka is given: a batch ends at its last
    record Kafka has (``reopen_closed_session`` leaves some out), and one with none is gone."""
    skipped = set()
    if any(isinstance(a, ReopenClosedSession) for a in adjustments):
        skipped = set(ReopenClosedSession.reopening(case))
    position: dict[int, int] = {}
    for i in range(len(case["records"])):
        if i not in skipped:
            position[i] = len(position)
    out = []
    start = 0
    for end in batch_ends(case):
        inside = [position[i] for i in range(start, end + 1) if i in position]
        out.extend(inside[-1:])
        start = end + 1
    return out


# --------------------------------------------------------------------------------------------
# Comparison


@dataclass
class Mismatch:
    """The first input record after which the two outputs differ, and why."""

    case: Case
    index: int
    kafka: Rows
    ours: Rows
    error: str | None = None
    note: str = ""
    seed: str = ""

    def report(self) -> str:
        records = self.case["records"]
        lines = [
            "windowstore differs from Kafka Streams; minimal reproducer "
            "(tests.conformance.harness.compare_case):",
            "case = " + pprint.pformat(self.case, width=100, compact=True),
        ]
        if self.seed:
            lines.append(f"found in: {self.seed}")
        if self.error is not None:
            lines.append(f"windowstore raised: {self.error}")
        else:
            lines.append(f"first difference at input {self.index}: {records[self.index]}")
            if self.note:
                lines.append(self.note)
        lines.append("per input record (after adjustments), Kafka | windowstore:")
        for i, r in enumerate(records):
            k = self.kafka[i] if i < len(self.kafka) else []
            o = self.ours[i] if i < len(self.ours) else []
            mark = "  " if k == o else "!!"
            lines.append(f"{mark} {i} {r}: {k} | {o}")
        return "\n".join(lines)


@dataclass
class Outcome:
    """One case's comparison: its mismatch (None: none) and what section 7 excluded."""

    mismatch: Mismatch | None
    tally: Tally = field(default_factory=Tally)


def _compare(
    case: Case,
    kafka_input: Case,
    output: OracleResult,
    adjustments: Sequence[Adjustment],
    plant: Plant | None,
    probe: tuple[Case, OracleResult] | None,
) -> Outcome:
    kafka = kafka_rows(len(kafka_input["records"]), output["records"])
    kafka_drops: Drops = list(output["dropped"])
    try:
        ours, our_drops = run_windowstore_full(case)
    except Exception as e:  # any windowstore failure is a difference, and is shrunk like one
        return Outcome(Mismatch(case, 0, kafka, [], error=f"{type(e).__name__}: {e}"))
    context = _context(case, probe)
    if plant is not None:
        ours = plant(case, ours)
    truth: Rows = []
    truth_drops: Drops = []
    if case["window"] == "sliding":
        truth, truth_drops = section7.definition_output(case)
    for a in adjustments:
        kafka = a.kafka_rows(context, kafka)
        ours = a.our_rows(context, ours)
        kafka_drops = a.kafka_drops(context, kafka_drops)
        our_drops = a.our_drops(context, our_drops)
        if truth_drops:
            truth = a.our_rows(context, truth)
            truth_drops = a.our_drops(context, truth_drops)
    if case["window"] == "sliding":
        verdict = section7.compare(case, kafka, ours, truth, (kafka_drops, our_drops, truth_drops))
        if verdict.index is None:
            return Outcome(None, verdict.tally)
        return Outcome(Mismatch(case, verdict.index, kafka, ours, note=verdict.note), verdict.tally)
    for i, (k, o, kd, od) in enumerate(zip(kafka, ours, kafka_drops, our_drops, strict=True)):
        if k != o:
            return Outcome(Mismatch(case, i, kafka, ours))
        if kd != od:
            note = f"dropped records: Kafka {kd}, windowstore {od}"
            return Outcome(Mismatch(case, i, kafka, ours, note=note))
    return Outcome(None)


def _context(case: Case, probe: tuple[Case, OracleResult] | None) -> Case:
    """The case as the adjustments see it, plus what Kafka's emit-on-update run of it (the
    probe of a sliding ``final`` or a session ``suppress`` case) tells: ``_store_time``,
    Kafka's sliding window store time after each input record (the largest window start it
    has put, in our times), and ``_deleted``, the sessions whose last change is a delete."""
    if probe is None:
        return case
    update_case, update_output = probe
    kafka = kafka_rows(len(update_case["records"]), update_output["records"])
    kafka = KafkaTimeOffset().kafka_rows(case, kafka)
    store_time: list[int | None] = []
    latest: int | None = None
    for group in kafka:
        for r in group:
            latest = r[1] if latest is None else max(latest, r[1])
        store_time.append(latest)
    last = {(r[0], r[1], r[2]): r[3] for group in kafka for r in group}
    deleted = {w for w, value in last.items() if value is None}
    return {**case, "_store_time": store_time, "_deleted": deleted}


def _needs_probe(case: Case) -> bool:
    sliding_final = case["window"] == "sliding" and case["emit"] == "final"
    session_suppress = case["window"] == "session" and case["emit"] == "suppress"
    return bool(sliding_final or session_suppress)


def compare_all(
    cases: Sequence[Case],
    adjustments: Sequence[Adjustment] = ADJUSTMENTS,
    plant: Plant | None = None,
) -> list[Outcome]:
    """Runs every case through Kafka (one JVM) and windowstore; one outcome per case.

    ``plant`` perturbs windowstore's rows before comparison: a deliberate bug, for testing the
    comparison and the shrinker themselves. Sliding ``final`` and session ``suppress`` cases
    also run in Kafka's update mode (see :func:`_context`).
    """
    probes = [{**c, "emit": "update"} for c in cases if _needs_probe(c)]
    inputs = [kafka_case(c, adjustments) for c in [*cases, *probes]]
    outputs = run_oracle_full(inputs)
    probe_outputs = iter(zip(probes, outputs[len(cases) :], strict=True))
    results = []
    for c, k, out in zip(cases, inputs, outputs, strict=False):
        probe = next(probe_outputs) if _needs_probe(c) else None
        results.append(_compare(c, k, out, adjustments, plant, probe))
    return results


def compare(
    cases: Sequence[Case],
    adjustments: Sequence[Adjustment] = ADJUSTMENTS,
    plant: Plant | None = None,
) -> list[Mismatch | None]:
    """:func:`compare_all`, mismatches only."""
    return [o.mismatch for o in compare_all(cases, adjustments, plant)]


def passes(case: Case, adjustments: Sequence[Adjustment] = ADJUSTMENTS) -> bool:
    """Whether windowstore and Kafka agree on ``case`` with ``adjustments`` applied."""
    return compare([case], adjustments)[0] is None


def compare_case(case: Case) -> Mismatch | None:
    """One case, as printed by :meth:`Mismatch.report`."""
    return compare([case])[0]


# --------------------------------------------------------------------------------------------
# Shrinking


def shrink(case: Case, fails: Callable[[list[Case]], list[bool]]) -> Case:
    """A smaller case that still fails: delta debugging over the records (Zeller's ddmin: cut
    the records into n chunks, try each chunk alone and each complement, keep the smallest
    that fails; n doubles up to one record a chunk), then over the keys (rename every record
    of one key to another). ``fails`` takes a batch of candidate cases and says which fail,
    so each round costs one Kafka run. The result is one-minimal: no single record can go."""
    records = list(case["records"])
    n = 2
    while len(records) >= 2:
        size = math.ceil(len(records) / n)
        chunks = [records[i : i + size] for i in range(0, len(records), size)]
        subsets = chunks if len(chunks) > 2 else []  # with two, each is the other's complement
        complements = [
            [r for j, c in enumerate(chunks) if j != i for r in c] for i in range(len(chunks))
        ]
        candidates = [*subsets, *complements]
        verdicts = fails([with_records(case, c) for c in candidates])
        failing = [c for c, bad in zip(candidates, verdicts, strict=True) if bad]
        if failing:
            smallest = min(failing, key=len)
            n = 2 if len(smallest) <= size else max(n - 1, 2)
            records = smallest
        elif size == 1:
            break
        else:
            n = min(len(records), 2 * n)
    case = with_records(case, records)
    while True:  # fewer distinct keys
        keys = sorted({r[0] for r in case["records"]})
        if len(keys) < 2:
            return case
        renamed = [
            with_records(case, [[keys[0] if r[0] == k else r[0], *r[1:]] for r in case["records"]])
            for k in keys[1:]
        ]
        verdicts = fails(renamed)
        if not any(verdicts):
            return case
        case = renamed[verdicts.index(True)]


def shrink_mismatch(
    mismatch: Mismatch,
    adjustments: Sequence[Adjustment] = ADJUSTMENTS,
    plant: Plant | None = None,
) -> Mismatch:
    """The mismatch of the smallest stream :func:`shrink` finds. Records after the first
    difference cannot cause it, so the stream is first cut there (when that still fails)."""

    def fails(cases: list[Case]) -> list[bool]:
        return [m is not None for m in compare(cases, adjustments, plant)]

    start = mismatch.case
    prefix = with_records(start, start["records"][: mismatch.index + 1])
    if mismatch.error is None and fails([prefix]) == [True]:
        start = prefix
    small = shrink(start, fails)
    result = compare([small], adjustments, plant)[0]
    assert result is not None, "shrink() returned a passing case"
    return result
