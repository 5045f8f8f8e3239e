"""docs/semantics.md 7 for sliding windows: the comparison rule for windows Kafka fills wrongly.

Kafka's sliding aggregate assumes that every record has its left window. A record whose left
window was closed when it arrived (``close - D <= t < close``) is accepted but has none, and
Kafka's default path (``processReverse``) can then take the wrong previous record: it misses
right windows and forwards windows holding a record before their start (D = 7, grace 0:
``test_adjustments.test_sliding_left_window_closed``). windowstore instead follows the
definition: a window holds exactly the records with time in ``[start, end]``.

The rule, per key, from the first record of that key whose left window was closed on arrival
(the key is *marked* from there on; before, and for every other key, rows are compared with
Kafka's exactly, order included):

- windowstore's rows of the key must equal the definition, computed by brute force in
  ``sliding_definition`` (per window: its last row in the group, compared by (key, start));
- Kafka's rows of the key are compared with windowstore's window by window: equal windows
  count as compared, the others as *excluded*. The comparison goes on after an exclusion, for
  the key's later windows too (``after_exclusion`` counts those that were compared equal);
- dropped-record counts of a record (a batch) holding a marked key follow the same rule: ours
  must equal the definition's, Kafka's are compared or excluded.

Because windowstore is held to the definition wherever Kafka is excluded, this rule cannot
hide a windowstore error: a window both get wrong the same way (say a right window neither
creates) fails the comparison with the definition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from . import sliding_definition
from .rows import Case, Drops, Row, Rows, Value, by_batch, drops_by_batch, stream_times


@dataclass
class Tally:
    """What a comparison compared and excluded (summed over cases with ``+=``)."""

    windows: int = 0  # window rows compared, Kafka's and ours (each (key, start) of a group)
    excluded: int = 0  # of those, Kafka's differing in section-7 territory
    after_exclusion: int = 0  # compared equal on a key after its first exclusion
    drops: int = 0  # dropped-record counts compared
    excluded_drops: int = 0
    marked_keys: int = 0

    def __iadd__(self, other: Tally) -> Tally:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    def summary(self) -> str:
        share = self.excluded / self.windows if self.windows else 0.0
        return (
            f"{self.excluded} of {self.windows} windows excluded ({share:.3%}), "
            f"{self.after_exclusion} compared after an exclusion on the same key; "
            f"{self.excluded_drops} of {self.drops} dropped-record counts excluded; "
            f"{self.marked_keys} keys under section 7"
        )


@dataclass
class Verdict:
    """The first input record where the rule fails (None: none), why, and the tally."""

    index: int | None
    note: str = ""
    tally: Tally = field(default_factory=Tally)


def marks(case: Case) -> dict[str, int]:
    """Per key, the first input record of it whose left window was closed on arrival."""
    d, grace = case["time_difference"], case["grace"]
    out: dict[str, int] = {}
    for i, (r, st) in enumerate(zip(case["records"], stream_times(case), strict=True)):
        key, t = r[0], r[1]
        if key not in out and t < st - grace <= t + d:
            out[key] = i
    return out


def definition_output(case: Case) -> tuple[Rows, Drops]:
    """The definition's rows per input record, as windowstore emits them in the case's mode,
    and its dropped-record counts (skipped updates, records dropped whole)."""
    d = case["time_difference"]
    steps = sliding_definition.run(d, case["grace"], case["records"])
    final = case["emit"] in ("final", "suppress")
    value = _aggregate(case["agg"])
    rows: Rows = []
    for step in steps:
        windows = step.closed if final else step.changed
        group: list[Row] = []
        for (key, start), content in windows.items():
            group.append((key, start, start + d, value(content), max(c[0] for c in content)))
        rows.append(group)
    if case["emit"] == "updates":
        rows = [_coalesced(g) for g in by_batch(case, rows)]
    return rows, [s.dropped for s in steps]


def _coalesced(group: list[Row]) -> list[Row]:
    last = {(r[0], r[1]): r for r in group}
    return list(last.values())


def _aggregate(name: str) -> Callable[[sliding_definition.Content], Value]:
    def values(content: sliding_definition.Content) -> list[int]:
        return [c[2] for c in content]

    functions: dict[str, Callable[[sliding_definition.Content], Value]] = {
        "count": lambda c: len(c),
        "sum": lambda c: sum(values(c)),
        "min": lambda c: min(values(c)),
        "max": lambda c: max(values(c)),
        "mean": lambda c: Fraction(sum(values(c)), len(c)),
        "concat": lambda c: tuple(values(c)),
    }
    return functions[name]


def compare(
    case: Case,
    kafka: Rows,
    ours: Rows,
    truth: Rows,
    drops: tuple[Drops, Drops, Drops],
) -> Verdict:
    """Kafka's, windowstore's and the definition's rows (all after the adjustments) and
    dropped-record counts, compared under the rule above."""
    marked = marks(case)
    tally = Tally(marked_keys=len(marked))
    excluded_keys: set[str] = set()
    gated_drops = _gated_drops(case, marked)
    for i, (k, o, m) in enumerate(zip(kafka, ours, truth, strict=True)):
        here = {key for key, at in marked.items() if at <= i}
        plain = [r for r in k if r[0] not in here], [r for r in o if r[0] not in here]
        if plain[0] != plain[1]:
            return Verdict(i, "Kafka and windowstore differ", tally)
        tally.windows += len(plain[0])
        for key in sorted(here):
            mk, mo, mt = (_by_window(rows, key) for rows in (k, o, m))
            if mo != mt:
                note = f"windowstore differs from the definition (semantics 4, 7) on {key!r}"
                return Verdict(i, f"{note}: {mo} | definition {mt}", tally)
            for w in sorted(mk.keys() | mo.keys()):
                tally.windows += 1
                if mk.get(w) != mo.get(w):
                    tally.excluded += 1
                    excluded_keys.add(key)
                elif key in excluded_keys:
                    tally.after_exclusion += 1
        kd, od, md = (d[i] for d in drops)
        tally.drops += 1
        if gated_drops[i] and od != md:
            return Verdict(i, f"dropped records: windowstore {od}, definition {md}", tally)
        if kd != od:
            if not gated_drops[i]:
                return Verdict(i, f"dropped records: Kafka {kd}, windowstore {od}", tally)
            tally.excluded_drops += 1
    return Verdict(None, "", tally)


def _by_window(rows: list[Row], key: str) -> dict[int, Row]:
    return {r[1]: r for r in rows if r[0] == key}


def _gated_drops(case: Case, marked: dict[str, int]) -> list[bool]:
    """Per input record, whether its dropped-records count (its batch's, on the batch's last
    record) involves a marked key."""
    gated = [int(r[0] in marked and marked[r[0]] <= i) for i, r in enumerate(case["records"])]
    return [n > 0 for n in drops_by_batch(case, gated)]
