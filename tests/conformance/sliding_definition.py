"""docs/semantics.md 4 (streaming) and 7, by brute force: what a sliding-window processor must emit.

No store, no previous-record lookup, no window built from another: after every input record
the windows and their contents are recomputed from the definition, so that this model cannot
share a bug with an incremental algorithm (Kafka's or windowstore's).

- ``close = stream time - grace``; a record with ``t + D < close`` is dropped whole.
- The windows of a key are the left window ``[t - D, t]`` of each of its records and the right
  window ``[t + 1, t + 1 + D]`` of each record when it holds a record; a window exists from the
  first moment the definition asks for it while it is open (``end >= close``), and never
  otherwise. A window holds exactly the records with time in ``[start, end]`` that arrived
  while it was open (section 7: also after records whose left window had closed on arrival).
- A record is accepted when it lands in at least one open window; one that lands in none is
  rejected as late (README, sliding windows) and makes no window.
- Skipped updates (windowstore's ``late_window_update``) are counted per record: each window
  of the definition over the accepted records and this one that holds the record and is
  closed at its arrival (whether or not it was ever output). Where no window of the key was
  ever closed on creation this is what KIP-450 attempts and Kafka's dropped-records metric
  counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

Window = tuple[str, int]  # key, start
Content = tuple[tuple[int, int, int], ...]  # (time, arrival index, value), by time then arrival


@dataclass(frozen=True)
class Accepted:
    """An accepted record: its time, value, arrival index and the close time at its arrival."""

    t: int
    value: int
    index: int
    close: int


@dataclass
class Step:
    """What one input record does: the windows it changes (with their contents after it), the
    windows that close at it (with their final contents), and its skipped updates."""

    changed: dict[Window, Content] = field(default_factory=dict)
    closed: dict[Window, Content] = field(default_factory=dict)
    dropped: int = 0
    accepted: bool = False


def run(d: int, grace: int, records: Sequence[Sequence[Any]]) -> list[Step]:
    """One :class:`Step` per record ``[key, time, value, ...]``, in arrival order."""
    accepted: dict[str, list[Accepted]] = {}
    exists: dict[str, set[int]] = {}
    emitted: set[Window] = set()
    stream_time: int | None = None
    steps = []
    for i, (key, t, value, *_) in enumerate(records):
        stream_time = t if stream_time is None else max(stream_time, t)
        close = stream_time - grace
        step = Step()
        steps.append(step)
        if t + d < close:
            step.dropped = 1
        else:
            _record(d, close, key, Accepted(t, value, i, close), accepted, exists, step)
        for k, starts in exists.items():
            for s in sorted(starts):
                if s + d < close and (k, s) not in emitted:
                    emitted.add((k, s))
                    step.closed[(k, s)] = content(d, accepted[k], s)
    return steps


def _record(
    d: int,
    close: int,
    key: str,
    record: Accepted,
    accepted: dict[str, list[Accepted]],
    exists: dict[str, set[int]],
    step: Step,
) -> None:
    t = record.t
    before = accepted.setdefault(key, [])
    starts = exists.setdefault(key, set())
    existing = [s for s in starts if s <= t <= s + d]
    after = [*before, record]
    holding = [s for s in required(d, after) if s <= t <= s + d]
    step.dropped += sum(s + d < close for s in holding)
    new = {s for s in required(d, after) if s + d >= close} - starts
    landed = [s for s in [*existing, *new] if s <= t <= s + d and s + d >= close]
    if not landed:
        return
    step.accepted = True
    before.append(record)
    starts |= new
    for s in sorted({*landed, *new}):
        step.changed[(key, s)] = content(d, before, s)


def required(d: int, records: Sequence[Accepted]) -> set[int]:
    """The starts of the windows the definition asks for over a key's accepted records."""
    times = sorted({r.t for r in records})
    starts = {t - d for t in times}
    for t, later in pairwise(times):
        if later <= t + 1 + d:  # the next time holds the right window
            starts.add(t + 1)
    return starts


def content(d: int, records: Sequence[Accepted], start: int) -> Content:
    """The records window ``[start, start + D]`` holds: in range, arrived while it was open."""
    end = start + d
    inside = [r for r in records if start <= r.t <= end and r.close <= end]
    return tuple(sorted((r.t, r.index, r.value) for r in inside))
