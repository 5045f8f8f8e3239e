"""The comparison harness itself: it must see a planted difference, shrink it to a minimal
stream, print a reproducer that pastes back, and its session model must agree with windowstore."""

from __future__ import annotations

import ast
import random

import pyarrow as pa
import pytest

from windowstore import SessionWindowProcessor

from .adjustments import session_model
from .generator import random_case
from .harness import compare, compare_all, shrink, shrink_mismatch
from .rows import Case, Rows, with_records
from .section7 import marks
from .windowstore_run import run_windowstore

pytestmark = pytest.mark.conformance


def count_off_by_one_from_three(case: Case, rows: Rows) -> Rows:
    """A planted bug: windowstore's count is one too high in any window of 3 or more."""
    return [
        [(k, s, e, v + 1 if isinstance(v, int) and v >= 3 else v, t) for k, s, e, v, t in g]
        for g in rows
    ]


def deletes_instead_of_values(case: Case, rows: Rows) -> Rows:
    """A planted bug: every window windowstore emits comes out as a delete."""
    return [[(k, s, e, None, t) for k, s, e, _v, t in g] for g in rows]


def drop_first_row(case: Case, rows: Rows) -> Rows:
    """A planted bug: windowstore loses the first row it emits."""
    first = min((i for i, g in enumerate(rows) if g), default=None)
    return [g[1:] if i == first else g for i, g in enumerate(rows)]


@pytest.mark.parametrize("window", ["session", "sliding"])
@pytest.mark.parametrize("emit", ["update", "updates", "final", "suppress"])
def test_a_planted_difference_is_seen(window: str, emit: str) -> None:
    """(An adjustment can remove the planted row's window from the comparison, e.g. a window
    Kafka's final mode loses, so most, not all, streams must show it. Sliding streams are
    taken without records under docs/semantics.md 7, whose windows follow another rule, see
    ``section7``: this test is about the plain comparison.)"""
    candidates = (
        random_case(random.Random(f"plant-{window}-{emit}-{i}"), window, emit, 100)
        for i in range(200)
    )
    cases = [
        c for c in candidates if (window == "session" or not marks(c)) and any(run_windowstore(c))
    ][:8]
    assert len(cases) == 8
    outcomes = compare_all(cases)
    assert all(o.mismatch is None for o in outcomes)
    # A sliding stream whose windows are all among those Kafka's final mode loses (a jump of
    # many segments closes them all at once) compares nothing; the others must see any plant.
    compared = [window == "session" or o.tally.windows > 0 for o in outcomes]
    assert sum(compared) >= 3
    assert sum(m is not None for m in compare(cases, plant=drop_first_row)) >= 3 - (
        emit == "final"  # the first row is often of a window Kafka's final mode loses
    )
    planted = compare(cases, plant=deletes_instead_of_values)
    assert all(m is not None for m, c in zip(planted, compared, strict=True) if c)


def test_shrink_reaches_a_one_minimal_stream() -> None:
    """ddmin on a predicate with no Kafka in it: the stream fails iff it holds three records of
    one key within 10 ms of each other."""

    def bad(case: Case) -> bool:
        times: dict[str, list[int]] = {}
        for k, t, _ in case["records"]:
            times.setdefault(k, []).append(t)
        return any(
            len(ts) >= 3 and sorted(ts)[i + 2] - sorted(ts)[i] <= 10
            for ts in times.values()
            for i in range(len(ts) - 2)
        )

    rng = random.Random(7)
    case = {
        "window": "session",
        "gap": 5,
        "grace": 0,
        "agg": "count",
        "emit": "update",
        "records": [[rng.choice("abc"), rng.randint(0, 400), 1] for _ in range(200)],
    }
    assert bad(case)
    rounds: list[int] = []

    def fails(cases: list[Case]) -> list[bool]:
        rounds.append(len(cases))
        return [bad(c) for c in cases]

    small = shrink(case, fails)
    assert len(small["records"]) == 3
    assert len({r[0] for r in small["records"]}) == 1
    for i in range(3):  # one-minimal: no record can go
        assert not bad(with_records(small, small["records"][:i] + small["records"][i + 1 :]))
    assert len(rounds) < 60  # batched: few calls, each a whole round


def test_shrink_mismatch_against_kafka_prints_a_pasteable_minimal_case() -> None:
    """With a planted off-by-one in windows of three or more, a 200-record stream shrinks to
    three records of one key, through Kafka and windowstore; the report pastes back."""
    rng = random.Random(11)
    records = [[rng.choice("abc"), rng.randint(0, 3000), rng.randint(0, 9)] for _ in range(200)]
    case = {
        "window": "session",
        "gap": 20,
        "grace": 50,
        "agg": "count",
        "emit": "update",
        "records": records,
    }
    (mismatch,) = compare([case], plant=count_off_by_one_from_three)
    assert mismatch is not None
    small = shrink_mismatch(mismatch, plant=count_off_by_one_from_three)
    assert len(small.case["records"]) == 3
    assert len({r[0] for r in small.case["records"]}) == 1
    report = small.report()
    pasted = ast.literal_eval(_case_text(report))
    assert pasted == small.case
    assert "!!" in report
    assert compare([pasted])[0] is None  # without the planted bug, no difference


def _case_text(report: str) -> str:
    """The ``case = {...}`` dict of a report (pprint may wrap it over several lines)."""
    text = report.split("case = ", 1)[1]
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "{["
        depth -= ch in "}]"
        if depth == 0:
            return text[: i + 1]
    raise AssertionError("unbalanced case in report")


def test_session_model_agrees_with_windowstore_rejections() -> None:
    """The adjustments find the records they act on with ``session_model``; its late verdicts
    ("late" and "reopens") must be exactly the records windowstore rejects."""
    for i in range(100):
        case = random_case(random.Random(f"model-{i}"), "session", "update", 200)
        p = SessionWindowProcessor(
            key="k",
            time="t",
            gap=case["gap"],
            grace=case["grace"],
            retention=case.get("retention"),
            emit="changes",
            aggs=[],
        )
        late = []
        for k, t, *_ in case["records"]:
            p.process(pa.table({"k": [k], "t": pa.array([t], pa.int64())}))
            late.append(p.metrics()["rejected_late"])
        rejected = [j for j in range(len(late)) if late[j] != (late[j - 1] if j else 0)]
        verdicts = session_model(case)
        assert [j for j, v in enumerate(verdicts) if v != "merged"] == rejected, case
