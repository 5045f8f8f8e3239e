"""Options of the whole test suite (kept minimal; per-area fixtures live beside the tests)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--streams",
        type=int,
        default=200,
        help="random streams per window kind and emit mode in the Kafka conformance tests "
        "(default 200; -m conformance to run them)",
    )
