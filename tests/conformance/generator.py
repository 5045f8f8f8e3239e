"""Random streams for the Kafka comparison: the case format of ``harness`` with random records.

Two families, drawn with equal odds:

- *small*: 1 to 20 keys, times from below zero to a million, spans of 1 to 1000 ms. These
  reach Kafka's special cases for small and negative times (``kafka_time_offset``) and make
  keys with long histories;
- *epoch*: real epoch-millisecond times (about 1.7e12), 50 to 300 keys, spans up to a minute,
  and now and then a jump of many store segments (``jumps`` below), which makes both stores
  drop segments while windows are open or about to close.

Both have heavy duplicate timestamps, arrival out of order by up to twice the grace, grace 0
and above (with grace 0 a few records still arrive up to one span late, so that late records
are exercised too), and one of the aggregates ``count``, ``sum``, ``min``, ``max``, ``mean``,
``concat``. ``concat`` streams carry distinct values (1, 2, ...), so a concatenation names
exactly the records of its window.
"""

from __future__ import annotations

import math
import random
from typing import Any

Case = dict[str, Any]

AGGREGATES = ("count", "sum", "min", "max", "mean", "concat")
EPOCH_MS = 1_700_000_000_000


def random_case(rng: random.Random, window: str, emit: str, n_records: int) -> Case:
    """A random case of ``n_records`` records, for window ``"session"`` or ``"sliding"`` and
    harness emit mode ``emit`` (``"update"``, ``"updates"``, ``"final"`` or ``"suppress"``).
    In ``"updates"`` mode every record carries a fourth field, the number of its batch."""
    epoch = rng.random() < 0.5
    if epoch:
        s = rng.choice([rng.randint(1, 100), rng.randint(100, 10_000), rng.randint(1, 60_000)])
        n_keys = rng.randint(50, 300)
        t = EPOCH_MS + rng.randint(0, 10**11)
    else:
        s = rng.choice([rng.randint(1, 10), rng.randint(1, 100), rng.randint(1, 1000)])
        n_keys = rng.choice([1, rng.randint(1, 5), rng.randint(1, 20)])
        t = rng.choice([0, rng.randint(-3 * s, 3 * s), rng.randint(0, 1_000_000)])
    grace = rng.choice([0, rng.randint(0, s), rng.randint(0, 3 * s)])
    keys = [f"k{i}" for i in range(n_keys)]
    aggregate = rng.choice(AGGREGATES)
    # Mean time between records, so that a key sees gaps around the span: chains, splits, merges.
    step = max(1.0, s * rng.choice([0.05, 0.2, 0.5, 1.0, 2.0]) / math.sqrt(n_keys))
    dup = rng.choice([0.1, 0.3, 0.5])
    late = rng.choice([0.0, 0.1, 0.3, 0.5])
    jumps = rng.choice([0.0, 0.01, 0.05]) if epoch else 0.0
    recent: list[int] = [t]
    records: list[list[Any]] = []
    for i in range(n_records):
        if rng.random() < dup:
            ts = rng.choice(recent[-8:])
        else:
            t += int(rng.expovariate(1.0 / step))
            if rng.random() < jumps:
                # Many segments at once: Kafka's segments are at least a minute, ours half
                # the retention (about gap + grace or 2D + grace).
                t += rng.randint(10, 1000) * max(60_000, 3 * (s + grace))
            ts = t
            recent.append(ts)
        if rng.random() < late:
            ts -= rng.randint(0, 2 * grace) if grace else rng.randint(0, s)
        value = i + 1 if aggregate == "concat" else rng.randint(-5, 20)
        records.append([rng.choice(keys), ts, value])
    case: Case = {
        "window": window,
        ("gap" if window == "session" else "time_difference"): s,
        "grace": grace,
        "agg": aggregate,
        "emit": emit,
        "records": records,
    }
    if emit == "updates":
        _batches(rng, records)
    if window == "session" and rng.random() < 0.25:
        case["gap_column"] = True
    if window == "session" and rng.random() < 0.3:
        case["retention"] = s + grace + rng.randint(1, 3 * (s + grace))
    if window == "session" and emit == "updates":
        # Kafka's record cache keeps the sessions it has seen after each commit's flush (as
        # clean entries, until evicted), whatever the store's retention, so a record can merge
        # with a session the store has expired long ago
        # (test_adjustments.test_cached_session_outlives_retention); a retention covering the
        # whole stream keeps every session visible on both sides.
        times = [r[1] for r in records]
        case["retention"] = max(case.get("retention", 0), s + grace + max(times) - min(times))
    if emit != "updates" and rng.random() < 0.1:
        case["restart_at"] = rng.randint(1, n_records - 1)
    return case


def _batches(rng: random.Random, records: list[list[Any]]) -> None:
    """Numbers the records' batches: runs of 1 to ``longest`` records (one a call, some, many)."""
    longest = rng.choice([1, 5, 30, len(records)])
    batch, left = 0, rng.randint(1, longest)
    for r in records:
        if left == 0:
            batch, left = batch + 1, rng.randint(1, longest)
        r.append(batch)
        left -= 1
