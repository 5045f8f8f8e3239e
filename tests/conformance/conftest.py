"""Fixtures of the Kafka Streams conformance tests."""

from __future__ import annotations

import pytest

from .kafka_oracle import build_oracle


@pytest.fixture(scope="session")
def streams(request: pytest.FixtureRequest) -> int:
    """How many random streams each comparison runs (``--streams``, default 200)."""
    n = request.config.getoption("--streams")
    assert isinstance(n, int)
    if n < 1:
        raise pytest.UsageError("--streams must be at least 1")
    return n


@pytest.fixture(scope="session")
def conformance_seed(request: pytest.FixtureRequest) -> str:
    """The seed of the random streams (``--conformance-seed``, default 0)."""
    seed = request.config.getoption("--conformance-seed")
    assert isinstance(seed, str)
    return seed


@pytest.fixture(scope="session", autouse=True)
def oracle_jar() -> None:
    """Builds the Kafka oracle once per run (when missing or stale). Without java and mvn this
    errors loudly rather than skipping; deselect with ``-m "not conformance"``."""
    build_oracle()
