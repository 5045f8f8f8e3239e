"""windowstore against Kafka Streams on random streams, record by record.

Per window kind (session, sliding) and emit mode (windowstore ``changes`` against Kafka's
emit-on-update without cache; ``final`` against ``EmitStrategy.onWindowClose``), ``--streams``
random streams (default 200) of 200 to 250 records each, all through one JVM run. Every
deliberate difference is a named adjustment in ``harness.ADJUSTMENTS``; anything else that
differs fails the test with the stream shrunk to a minimal reproducer.
"""

from __future__ import annotations

import random

import pytest

from .harness import compare, random_case, shrink_mismatch

pytestmark = pytest.mark.conformance

MIN_RECORDS = 200
SHRUNK = 3  # mismatches shrunk and printed per test (each costs a few Kafka runs)


@pytest.mark.parametrize("window", ["session", "sliding"])
@pytest.mark.parametrize("emit", ["update", "final"])
def test_random_streams_equal_kafka(window: str, emit: str, streams: int) -> None:
    cases = []
    for i in range(streams):
        rng = random.Random(f"{window}-{emit}-{i}")
        cases.append(random_case(rng, window, emit, rng.randint(MIN_RECORDS, MIN_RECORDS + 50)))
    assert min(len(c["records"]) for c in cases) >= MIN_RECORDS

    mismatches = [m for m in compare(cases) if m is not None]

    if mismatches:
        reports = [shrink_mismatch(m).report() for m in mismatches[:SHRUNK]]
        pytest.fail(
            f"{len(mismatches)} of {len(cases)} {window} streams ({emit}) differ from Kafka "
            f"Streams; the first {len(reports)}, shrunk:\n\n" + "\n\n".join(reports),
            pytrace=False,
        )
