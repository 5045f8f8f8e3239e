"""A generator of realistic clickstreams: Zipf-distributed users, bursts separated by idle gaps.

Used by the demo, the tests and the benchmarks, so every one of them sees the same shape of data.
"""

from __future__ import annotations

import random

import pyarrow as pa

__all__ = ["clickstream"]


def clickstream(
    events: int,
    *,
    users: int = 1000,
    seed: int = 7,
    start_ms: int = 1_700_000_000_000,
    click_gap_ms: int = 20_000,
    idle_gap_ms: int = 3_600_000,
    burst_events: int = 12,
) -> pa.Table:
    """Generates `events` click events as a table ``user_id, ts (ms), amount``, in time order.

    Users are drawn with Zipf-like weights (rank ``r`` has weight ``1 / r``). Each user clicks in
    bursts (mean ``burst_events`` clicks, exponential gaps of mean ``click_gap_ms``) separated by
    exponential idle gaps of mean ``idle_gap_ms``, so sessions with a gap of a few minutes are
    realistic in number and length.

    Example:
        >>> clickstream(5, users=2).num_rows
        5
    """
    if events < 0:
        raise ValueError(f"events must be >= 0, got {events}")
    if users <= 0:
        raise ValueError(f"users must be > 0, got {users}")
    rng = random.Random(seed)
    weights = [1.0 / rank for rank in range(1, users + 1)]
    per_user = [0] * users
    for u in rng.choices(range(users), weights=weights, k=events):
        per_user[u] += 1
    rows: list[tuple[int, int, float]] = []
    for u, n in enumerate(per_user):
        t = start_ms + int(rng.expovariate(1 / idle_gap_ms))
        left_in_burst = 1 + int(rng.expovariate(1 / burst_events))
        for _ in range(n):
            rows.append((t, u, round(rng.uniform(0.5, 120.0), 2)))
            left_in_burst -= 1
            if left_in_burst > 0:
                t += 1 + int(rng.expovariate(1 / click_gap_ms))
            else:
                t += idle_gap_ms // 2 + int(rng.expovariate(1 / idle_gap_ms))
                left_in_burst = 1 + int(rng.expovariate(1 / burst_events))
    rows.sort()
    return pa.table(
        {
            "user_id": pa.array([f"user-{u:06d}" for _, u, _ in rows], pa.string()),
            "ts": pa.array([t for t, _, _ in rows], pa.int64()),
            "amount": pa.array([a for _, _, a in rows], pa.float64()),
        }
    )
