"""Options of the whole test suite (kept minimal; per-area fixtures live beside the tests)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--streams",
        type=int,
        default=60,
        help="random streams per window kind and emit mode in the Kafka conformance tests "
        "(default 60; -m conformance to run them)",
    )
    parser.addoption(
        "--conformance-seed",
        default="0",
        help="seed of the Kafka conformance tests' random streams (default 0); a failure "
        "prints the seed and stream to replay",
    )
