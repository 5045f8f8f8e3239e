"""Marker sessions (``starts_session=`` / ``ends_session=``, issue 52): complete mode and the
streaming processor against a brute-force model of the definition (docs/semantics.md section
2): the contract's facts; random tables of keys, ties, markers of both kinds, fixed and dynamic
gaps and an optional ``max_duration``, in any arrival order within the grace (every emit mode,
both outputs, through ``to_bytes``) and beyond it (late exactly when a closed session would
change); schema errors, and calls that raise change nothing.

``-m slow`` runs the random tests with more seeds and larger tables."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, NamedTuple

import pyarrow as pa
import pytest

from windowstore import (
    InvalidRecordError,
    SchemaError,
    SessionWindowProcessor,
    agg,
    session_windows,
)


class Rec(NamedTuple):
    """One record, a row of `table`: key, time, id (unique; collected), value, the record's
    gap (read with ``gap_column="g"``) and the two marker columns (None is null)."""

    k: str
    t: int
    i: int
    v: int = 0
    g: int = 1
    s: bool | None = False
    e: bool | None = False


SCHEMA = pa.schema(
    [("k", pa.string()), ("t", pa.int64()), ("i", pa.int64()), ("v", pa.int64()),
     ("g", pa.int64()), ("s", pa.bool_()), ("e", pa.bool_())]
)  # fmt: skip
#: Both marker parameters, naming the columns of `table`.
MARKS: dict[str, Any] = {"starts_session": "s", "ends_session": "e"}
AGGS = [agg.count(), agg.sum("v"), agg.min("v"), agg.max("v"), agg.collect("i")]

#: key, start, end, count, sum, min, max, ids (in time, arrival order).
Window = tuple[str, int, int, int, int, int, int, tuple[int, ...]]


def table(rows: Iterable[Rec]) -> pa.Table:
    return pa.Table.from_pylist([r._asdict() for r in rows], schema=SCHEMA)


def gap_of(r: Rec, params: dict[str, Any]) -> int:
    """The record's gap: the fixed one, else its column's clamped to ``max_gap``."""
    if "gap_column" in params:
        return min(int(getattr(r, params["gap_column"])), int(params["max_gap"]))
    return int(params["gap"])


@dataclass
class Session:
    """A session of the model: its records in (time, arrival) order, its reach, whether a record
    at its last time ends it and one at its first time starts it (markers), whether the cap
    ended the session before it, and its closing bound: it is closed once stream time passes
    the bound plus the grace."""

    key: str
    recs: list[Rec]
    reach: int
    ends: bool
    starts: bool
    cut: bool
    bound: int = 0

    @property
    def start(self) -> int:
        return self.recs[0].t

    @property
    def end(self) -> int:
        return self.recs[-1].t

    def window(self) -> Window:
        v = [r.v for r in self.recs]
        ids = tuple(r.i for r in self.recs)
        return (self.key, self.start, self.end, len(v), sum(v), min(v), max(v), ids)

    def identity(self) -> tuple[str, tuple[int, ...], bool]:
        """What a closed session may never change: its records (so its bounds) and its cut."""
        return (self.key, tuple(r.i for r in self.recs), self.cut)


def model(rows: Sequence[Rec], **params: Any) -> list[Session]:
    """The definition, brute force, with the parameters of `session_windows` (``rows`` in
    arrival order). Per key, walk the distinct times in order, the records at one time
    together: they start a new session iff there is no current one, or a record at the current
    one's last time ends it, or one of them starts a session, or t is beyond the current one's
    reach (max of t + gap over its records), or t - its start > max_duration (a cut, unless a
    marker made the boundary)."""
    starts_col, ends_col = params.get("starts_session"), params.get("ends_session")
    cap = params.get("max_duration")
    by_key: dict[str, list[Rec]] = {}
    for r in rows:
        by_key.setdefault(r.k, []).append(r)
    out: list[Session] = []
    for key, recs in sorted(by_key.items()):
        current: Session | None = None
        for t, at_t in groupby(sorted(recs, key=lambda r: r.t), key=lambda r: r.t):
            group = list(at_t)
            reach = max(r.t + gap_of(r, params) for r in group)
            starts = starts_col is not None and any(getattr(r, starts_col) for r in group)
            ends = ends_col is not None and any(getattr(r, ends_col) for r in group)
            marked = starts or (current is not None and current.ends)
            gap_joins = current is not None and not marked and t <= current.reach
            if current is not None and gap_joins and (cap is None or t - current.start <= cap):
                current.recs += group
                current.reach = max(current.reach, reach)
                current.ends = ends
                continue
            cut = gap_joins
            current = Session(key, group, reach, ends, starts, cut)
            out.append(current)
    # An end marker closes its session at its time; a start marker the one before it just
    # before its time (docs: fact 6).
    for s, after in zip(out, [*out[1:], None], strict=False):
        s.bound = s.end if s.ends else s.reach
        if after is not None and after.key == s.key and after.starts:
            s.bound = min(s.bound, after.start - 1)
    return out


def windows_of(sessions: Iterable[Session]) -> list[Window]:
    return sorted(s.window() for s in sessions)


def cuts_of(sessions: Iterable[Session]) -> int:
    return sum(s.cut for s in sessions)


def window_row(r: dict[str, Any]) -> Window:
    return (r["k"], r["session_start"], r["session_end"], r["count"], r["sum_v"], r["min_v"],
            r["max_v"], tuple(r["collect_i"]))  # fmt: skip


def windows(rows: pa.Table | Iterable[dict[str, Any]]) -> list[Window]:
    rows = rows.to_pylist() if isinstance(rows, pa.Table) else rows
    return sorted(window_row(r) for r in rows)


def spans(ws: Iterable[Window]) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, ids) of each window."""
    return [(w[1], w[2], w[7]) for w in ws]


def tags_of(sessions: Iterable[Session]) -> dict[int, tuple[int, int]]:
    """Record id -> (session_start, session_end)."""
    return {r.i: (s.start, s.end) for s in sessions for r in s.recs}


def tags(rows: Iterable[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Record id -> (session_start, session_end) of tagged rows (each id once)."""
    rows = list(rows)
    out = {r["i"]: (r["session_start"], r["session_end"]) for r in rows}
    assert len(out) == len(rows), "a record tagged twice"
    return out


def replay(log: Iterable[dict[str, Any]]) -> list[Window]:
    """The windows a changelog leaves, applied in order keyed by (key, start): a delete must be
    of the window there."""
    current: dict[tuple[str, int], Window] = {}
    for r in log:
        w = window_row(r)
        if r["op"] == "delete":
            there = current.pop(w[:2], None)
            assert there is not None, f"delete of an unknown window {w}"
            assert there[2] == w[2], f"delete of {w}, not of the window there, {there}"
        else:
            assert r["op"] == "upsert", r
            current[w[:2]] = w
    return sorted(current.values())


def changes(out: pa.Table) -> list[tuple[str, int, int, tuple[int, ...]]]:
    """(op, start, end, ids) of changelog rows, in order."""
    return [
        (r["op"], r["session_start"], r["session_end"], tuple(r["collect_i"]))
        for r in out.to_pylist()
    ]


def processor(grace: int, **kwargs: Any) -> SessionWindowProcessor:
    return SessionWindowProcessor(key="k", time="t", grace=grace, **kwargs)


def complete(rows: Sequence[Rec], **kwargs: Any) -> pa.Table:
    return session_windows(table(rows), key="k", time="t", **kwargs)


# --- the contract's facts ----------------------------------------------------------------------


def at(t: int, i: int, mark: str = "", g: int = 1) -> Rec:
    """Record ``i`` of key "u" at ``t``, marked by ``mark`` ("starts", "ends" or "both")."""
    return Rec("u", t, i, v=i, g=g, s=mark in ("starts", "both"), e=mark in ("ends", "both"))


Spans = list[tuple[int, int, tuple[int, ...]]]
#: Fact: the records, the window parameters, the sessions with markers and without.
FACTS: dict[str, tuple[list[Rec], dict[str, Any], Spans, Spans]] = {
    "1 logout then a click within the gap": (
        [at(0, 0), at(3, 1, "ends"), at(8, 2)], {"gap": 10},
        [(0, 3, (0, 1)), (8, 8, (2,))], [(0, 8, (0, 1, 2))],
    ),
    "2 login before the previous gap runs out": (
        [at(0, 0), at(4, 1), at(9, 2, "starts"), at(12, 3)], {"gap": 10},
        [(0, 4, (0, 1)), (9, 12, (2, 3))], [(0, 12, (0, 1, 2, 3))],
    ),
    "3 a start and an end at one time": (
        [at(0, 0), at(5, 1, "starts"), at(5, 2, "ends"), at(7, 3)], {"gap": 10},
        [(0, 0, (0,)), (5, 5, (1, 2)), (7, 7, (3,))], [(0, 7, (0, 1, 2, 3))],
    ),
    "3b both markers on one record": (
        [at(0, 0), at(5, 1, "both"), at(5, 2), at(7, 3)], {"gap": 10},
        [(0, 0, (0,)), (5, 5, (1, 2)), (7, 7, (3,))], [(0, 7, (0, 1, 2, 3))],
    ),
    "4 a long dynamic gap does not bridge an end": (
        [at(0, 0, g=20), at(5, 1, "ends", g=1), at(15, 2, g=1)],
        {"gap_column": "g", "max_gap": 100},
        [(0, 5, (0, 1)), (15, 15, (2,))], [(0, 15, (0, 1, 2))],
    ),
    "5 max_duration counts from the marked start": (
        [at(0, 0), at(4, 1, "starts"), at(12, 2), at(15, 3)], {"gap": 10, "max_duration": 10},
        [(0, 0, (0,)), (4, 12, (1, 2)), (15, 15, (3,))], [(0, 4, (0, 1)), (12, 15, (2, 3))],
    ),
}  # fmt: skip


@pytest.mark.parametrize("fact", list(FACTS))
def test_the_facts_of_the_contract(fact: str) -> None:
    rows, params, marked, unmarked = FACTS[fact]
    for marks, want in ((MARKS, marked), ({}, unmarked)):
        kwargs = {**params, **marks}
        assert spans(windows_of(model(rows, **kwargs))) == want, "the model"
        assert spans(windows(complete(rows, aggs=AGGS, **kwargs))) == want, "complete mode"
        p = processor(0, aggs=AGGS, **kwargs)
        out = [p.process(table(rows)), p.flush()]
        assert spans(windows(pa.concat_tables(out))) == want, "the processor"
        tagged = complete(rows, output="records", **kwargs).to_pylist()
        assert tags(tagged) == tags_of(model(rows, **kwargs))
        if "max_duration" in params:
            # A marker boundary is not a cut: one cut either way here.
            assert p.metrics()["max_duration_cuts"] == cuts_of(model(rows, **kwargs)) == 1


@pytest.mark.parametrize(
    ("rows", "marked", "unmarked"),
    [
        # An end marker at 3 closes [0, 3] once stream time passes 3 + grace, not 3 + gap +
        # grace.
        ([at(0, 0), at(3, 1, "ends")], (6, (0, 3, (0, 1))), (16, (0, 3, (0, 1)))),
        # A start marker at 5 closes the session before it once stream time passes 5 - 1 +
        # grace.
        ([at(0, 0), at(5, 1, "starts")], (7, (0, 0, (0,))), (18, (0, 5, (0, 1)))),
    ],
)
def test_a_marker_closes_its_session_without_waiting_for_the_gap(
    rows: list[Rec],
    marked: tuple[int, tuple[int, int, tuple[int, ...]]],
    unmarked: tuple[int, tuple[int, int, tuple[int, ...]]],
) -> None:
    for marks, (closes_at, window) in ((MARKS, marked), ({}, unmarked)):
        p = processor(2, gap=10, aggs=AGGS, **marks)
        assert p.process(table(rows)).num_rows == 0
        # Another key's records move stream time on, one per call.
        calls = range(rows[-1].t + 1, closes_at + 1)
        out = [spans(windows(p.process(table([Rec("w", t, 100 + t)])))) for t in calls]
        assert out == [[]] * (len(out) - 1) + [[window]], marks


def test_a_late_end_marker_within_the_grace_splits_the_open_session() -> None:
    p = processor(5, gap=10, emit="changes", aggs=AGGS, **MARKS)
    first = p.process(table([at(0, 0), at(8, 2)]))
    assert changes(first)[-1] == ("upsert", 0, 8, (0, 2))
    assert spans(replay(first.to_pylist())) == [(0, 8, (0, 2))]
    # Stream time 8: b@3 is within the grace (3 >= 8 - 5).
    assert changes(p.process(table([at(3, 1, "ends")]))) == [
        ("delete", 0, 8, (0, 2)),
        ("upsert", 0, 3, (0, 1)),
        ("upsert", 8, 8, (2,)),
    ]
    assert p.metrics()["rejected_late"] == 0


def run(grace: int, rows: list[Rec], **params: Any) -> tuple[SessionWindowProcessor, list[Window]]:
    """The processor of ``params`` fed ``rows`` in one call, then flushed; its windows."""
    p = processor(grace, aggs=AGGS, **params)
    out = [p.process(table(rows)), p.flush()]
    return p, windows(pa.concat_tables(out))


@pytest.mark.parametrize(
    ("grace", "rows", "want"),
    [
        # Stream time 5, grace 0: the start marker at 5 is within the grace; the piece before
        # it, [0, 0], closes as it is split off.
        (0, [at(0, 0), at(5, 1), at(5, 2, "starts")], [(0, 0, (0,)), (5, 5, (1, 2))]),
        (2, [at(0, 0), at(3, 1), at(5, 2), at(3, 3, "starts")], [(0, 0, (0,)), (3, 5, (1, 3, 2))]),
    ],
)
def test_a_start_marker_within_the_grace_that_splits_an_open_session_is_not_late(
    grace: int, rows: list[Rec], want: Spans
) -> None:
    p, got = run(grace, rows, gap=10, **MARKS)
    assert p.metrics()["rejected_late"] == 0
    assert spans(got) == want == spans(windows_of(model(rows, gap=10, **MARKS)))


def test_a_start_marker_beyond_the_grace_leaving_closed_sessions_as_they_are_is_accepted() -> None:
    # Stream time 19, grace 2: [6, 6] (reach 16) is closed. u@16 is beyond the grace; without
    # its marker it would join [6, 6] (late), with it it joins the open [19, 19].
    rows = [at(6, 0), at(19, 1), at(16, 2, "starts")]
    p, got = run(2, rows, gap=10, **MARKS)
    assert p.metrics()["rejected_late"] == 0
    assert spans(got) == [(6, 6, (0,)), (16, 19, (2, 1))]


@pytest.mark.parametrize(
    ("params", "rows"),
    [
        # The end marker at 7 is the boundary before 9, not the cap.
        ({"gap": 10, "max_duration": 5, **MARKS}, [at(0, 0), at(7, 1, "ends"), at(9, 2)]),
        # 20 is beyond the reach of [7, 7] (8): a gap boundary, though [0, 0] reaches 30.
        ({"gap_column": "g", "max_gap": 50, "max_duration": 5},
         [at(0, 0, g=30), at(7, 1), at(20, 2)]),
        ({"gap_column": "g", "max_gap": 50, "max_duration": 5, **MARKS},
         [at(0, 0, g=30), at(7, 1), at(20, 2)]),
    ],
)  # fmt: skip
def test_max_duration_cuts_counts_the_sessions_the_cap_ended(
    params: dict[str, Any], rows: list[Rec]
) -> None:
    p, got = run(0, rows, **params)
    assert spans(got) == [(0, 0, (0,)), (rows[1].t, rows[1].t, (1,)), (rows[2].t, rows[2].t, (2,))]
    assert p.metrics()["max_duration_cuts"] == cuts_of(model(rows, **params)) == 1


def test_a_start_marker_closes_the_session_just_before_it_only() -> None:
    # [51, 68] reaches 97 and the cap cut it before 87; the start marker at 89 begins the
    # session after [87, 87], which it closes at 88: [51, 68] still closes at 97 + grace.
    rows = [at(51, 0, g=33), at(68, 1, g=29), at(87, 2), at(89, 3, "starts")]
    params: dict[str, Any] = {"gap_column": "g", "max_gap": 50, "max_duration": 20, **MARKS}
    p = processor(3, aggs=AGGS, **params)
    assert p.process(table(rows)).num_rows == 0
    emitted = {}
    for t in range(90, 102):
        for w in windows(p.process(table([Rec("w", t, 100 + t)]))):
            emitted[spans([w])[0]] = t
    assert emitted == {(87, 87, (2,)): 92, (89, 89, (3,)): 94, (51, 68, (0, 1)): 101}
    assert [s.bound for s in model(rows, **params)] == [97, 88, 90]


# --- random tables ----------------------------------------------------------------------------


def random_params(rng: random.Random) -> dict[str, Any]:
    """A fixed or dynamic gap, a cap or none, and one marker column or both."""
    params: dict[str, Any] = {"gap": rng.choice([1, 4, 10, 25])}
    if rng.random() < 0.4:
        params = {"gap_column": "g", "max_gap": rng.choice([8, 20, 50])}
    if rng.random() < 0.5:
        params["max_duration"] = rng.choice([1, 6, 20, 60])
    for kind in rng.choice([["starts_session"], ["ends_session"], list(MARKS)]):
        params[kind] = MARKS[kind]
    return params


def random_rows(
    rng: random.Random,
    n: int,
    spans: Sequence[int] = (20, 100, 400),
    keys: Sequence[str] = ("a", "ab", "abcd"),
) -> list[Rec]:
    """``n`` records of a few keys (the letters of one of ``keys``), times in ``[0, span)`` for
    one of ``spans`` (dense: many ties, or sparse), gaps of 1-40, markers of each kind at a
    density of their own (both columns always there, named or not; nulls too)."""
    span = rng.choice(spans)
    letters = rng.choice(keys)
    density = {"s": rng.choice([0, 0.05, 0.2, 0.6]), "e": rng.choice([0, 0.05, 0.2, 0.6])}

    def flag(column: str) -> bool | None:
        return True if rng.random() < density[column] else rng.choice([False, False, None])

    return [
        Rec(rng.choice(letters), rng.randrange(span), i, rng.randint(-20, 50), rng.randint(1, 40),
            flag("s"), flag("e"))
        for i in range(n)
    ]  # fmt: skip


def within_grace(rng: random.Random, rows: list[Rec], grace: int) -> list[Rec]:
    """``rows`` in an arrival order where none is more than ``grace`` behind the largest time
    before it: by time plus a delay of up to ``grace`` each."""
    return sorted(rows, key=lambda r: r.t + rng.randint(0, grace))


Fed = list[tuple[int, list[dict[str, Any]]]]


def feed(
    rng: random.Random, p: SessionWindowProcessor, rows: list[Rec]
) -> tuple[SessionWindowProcessor, Fed, list[dict[str, Any]]]:
    """``rows`` in batches of random sizes, the processor sometimes replaced by its copy through
    ``to_bytes``: the processor at the end, (records fed so far, output) per call, and what
    ``flush()`` gave."""
    calls: Fed = []
    fed = 0
    while fed < len(rows):
        if fed and rng.random() < 0.2:
            data = p.to_bytes()
            p = SessionWindowProcessor.from_bytes(data)
            assert p.to_bytes() == data
        n = rng.randint(1, 12)
        out = p.process(table(rows[fed : fed + n])).to_pylist()
        fed = min(fed + n, len(rows))
        calls.append((fed, out))
    return p, calls, p.flush().to_pylist()


def check_complete_mode(seed: int, size: int) -> None:
    rng = random.Random(seed)
    params = random_params(rng)
    rows = random_rows(rng, rng.randint(0, size))
    want = model(rows, **params)
    assert windows(complete(rows, aggs=AGGS, **params)) == windows_of(want)
    tagged = complete(rows, output="records", **params)
    assert tagged.num_rows == len(rows)
    assert tags(tagged.to_pylist()) == tags_of(want)


def check_within_grace(seed: int, size: int) -> None:
    rng = random.Random(seed)
    params = random_params(rng)
    grace = rng.choice([0, 3, 20, 100])
    rows = within_grace(rng, random_rows(rng, rng.randint(0, size)), grace)
    want = model(rows, **params)
    complete_windows = windows(complete(rows, aggs=AGGS, **params))
    assert complete_windows == windows_of(want)
    for emit in ("final", "updates", "changes"):
        p, calls, last = feed(rng, processor(grace, emit=emit, aggs=AGGS, **params), rows)
        metrics = p.metrics()
        assert (metrics["accepted"], metrics["rejected_late"]) == (len(rows), 0), emit
        if "max_duration" in params:
            assert metrics["max_duration_cuts"] == cuts_of(want)
        log = [r for _, out in calls for r in out] + last
        if emit != "final":
            assert replay(log) == complete_windows, emit
            continue
        assert windows(log) == complete_windows
        # Each window comes out in the call after which it is closed: its closing bound
        # (with the records fed so far) plus the grace is below stream time.
        emitted: list[Window] = []
        for fed, out in calls:
            emitted += windows(out)
            stream_time = max(r.t for r in rows[:fed])
            closed = [s for s in model(rows[:fed], **params) if s.bound + grace < stream_time]
            assert sorted(emitted) == windows_of(closed), f"after {fed} records"
    p, calls, last = feed(rng, processor(grace, output="records", **params), rows)
    assert tags([r for _, out in calls for r in out] + last) == tags_of(want)


def late_by_reference(
    accepted: list[Rec], r: Rec, stream_time: int, grace: int, params: dict[str, Any]
) -> tuple[bool, bool]:
    """Whether accepting ``r`` after ``accepted`` changes a closed session (its records, bounds
    or cut) or makes its own session closed already: it must be late; and whether it makes any
    session that is closed already (a piece of an open session the record splits off): it may
    be. Neither ever holds for a record within the grace."""
    mine = [q for q in accepted if q.k == r.k]
    before, after = model(mine, **params), model([*mine, r], **params)
    old = {s.identity() for s in before}
    closed_before = {s.identity() for s in before if s.bound + grace < stream_time}
    made_closed = [s for s in after if s.bound + grace < stream_time and s.identity() not in old]
    must = bool(closed_before - {s.identity() for s in after}) or any(
        r in s.recs for s in made_closed
    )
    return must, must or bool(made_closed)


def check_beyond_grace(seed: int, size: int) -> None:
    rng = random.Random(seed)
    params = random_params(rng)
    grace = rng.choice([0, 2, 10])
    rows = random_rows(rng, rng.randint(1, size))
    rng.shuffle(rows)
    p, calls, last = feed(rng, processor(grace, aggs=AGGS, **params), rows)
    rejected = p.rejected()
    assert set(rejected.column("reason").to_pylist()) <= {"late"}
    late = set(rejected.column("i").to_pylist())
    accepted = [r for r in rows if r.i not in late]
    metrics = p.metrics()
    assert (metrics["accepted"], metrics["rejected_late"]) == (len(accepted), len(late))
    # No wrong window: what was accepted has exactly its complete-data sessions (every
    # record is in a window or rejected, once).
    log = [r for _, out in calls for r in out] + last
    want = model(accepted, **params)
    assert windows(log) == windows_of(want)
    if "max_duration" in params:
        assert metrics["max_duration_cuts"] == cuts_of(want)
    # Late exactly when accepting would change a closed session. Rejected may also be a
    # record that makes a closed session of part of an open one, or one older than the store
    # still holds: its largest reach less retention (max gap + grace) and max gap (the store
    # keeps that much more).
    gap = int(params["max_gap"] if "max_gap" in params else params["gap"])
    so_far: list[Rec] = []
    stream_time = rows[0].t
    for r in rows:
        stream_time = max(stream_time, r.t)
        must, may = late_by_reference(so_far, r, stream_time, grace, params)
        if r.i in late:
            store_time = max((q.t + gap_of(q, params) for q in so_far), default=r.t)
            old = r.t < store_time - grace - 2 * gap
            assert may or old, f"rejected {r} after {so_far}"
        else:
            assert not must, f"accepted {r} after {so_far}: it changes a closed session"
            so_far.append(r)


@pytest.mark.parametrize("seed", range(150))
def test_complete_mode_equals_the_definition(seed: int) -> None:
    check_complete_mode(seed, 80)


@pytest.mark.parametrize("seed", range(40))
def test_any_order_within_the_grace_gives_complete_mode_in_every_emit_and_output(
    seed: int,
) -> None:
    check_within_grace(seed, 80)


@pytest.mark.parametrize("seed", range(60))
def test_beyond_the_grace_a_record_is_late_iff_it_changes_a_closed_session(seed: int) -> None:
    check_beyond_grace(seed, 40)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1_000, 1_300))
def test_random_tables_many(seed: int) -> None:
    check_complete_mode(seed, 400)
    check_within_grace(seed, 300)
    check_beyond_grace(seed, 150)


# --- errors -----------------------------------------------------------------------------------


def with_column(t: pa.Table, name: str, values: pa.Array) -> pa.Table:
    """``t`` with column ``name`` replaced by ``values``."""
    return t.set_column(t.schema.get_field_index(name), name, values)


@pytest.mark.parametrize("parameter", list(MARKS))
@pytest.mark.parametrize(
    ("values", "found"), [(pa.array([1], pa.int64()), "(?i)int64"), (pa.array(["yes"]), "(?i)utf8")]
)
def test_a_marker_column_that_is_not_boolean_is_named_with_its_type(
    parameter: str, values: pa.Array, found: str
) -> None:
    data = with_column(table([at(0, 0)]), MARKS[parameter], values)
    kwargs: dict[str, Any] = {"gap": 10, "aggs": AGGS, parameter: MARKS[parameter]}
    with pytest.raises(SchemaError, match=found) as info:
        session_windows(data, key="k", time="t", **kwargs)
    assert info.value.column == MARKS[parameter]
    p = processor(0, **kwargs)
    with pytest.raises(SchemaError, match=found) as info:
        p.process(data)
    assert info.value.column == MARKS[parameter]


@pytest.mark.parametrize("parameter", list(MARKS))
def test_a_missing_marker_column_is_named(parameter: str) -> None:
    kwargs: dict[str, Any] = {"gap": 10, "aggs": AGGS, parameter: "login"}
    with pytest.raises(SchemaError, match="no such column") as info:
        complete([at(0, 0)], **kwargs)
    assert info.value.column == "login"
    with pytest.raises(SchemaError, match="no such column") as info:
        processor(0, **kwargs).process(table([at(0, 0)]))
    assert info.value.column == "login"


def test_a_call_that_raises_changes_nothing() -> None:
    p = processor(5, gap=10, emit="changes", aggs=AGGS, on_invalid="error", **MARKS)
    first = p.process(table([at(0, 0), at(8, 2)])).to_pylist()
    # The end marker at 3 would split [0, 8]; a later row of each batch makes it fail.
    split = table([at(3, 1, "ends"), at(9, 3)])
    failing = [
        (with_column(split, "k", pa.array(["u", None])), InvalidRecordError),
        (with_column(split, "e", pa.array([1, 0])), SchemaError),
        (split.drop_columns(["s"]), SchemaError),
    ]
    for data, error in failing:
        before = p.to_bytes()
        with pytest.raises(error):
            p.process(data)
        assert p.to_bytes() == before, error
    out = p.process(split)
    assert changes(out)[:3] == [("delete", 0, 8, (0, 2)), ("upsert", 0, 3, (0, 1)),
                                ("upsert", 8, 8, (2,))]  # fmt: skip
    assert spans(replay(first + out.to_pylist())) == [(0, 3, (0, 1)), (8, 9, (2, 3))]
    assert p.metrics()["rejected_late"] == 0
