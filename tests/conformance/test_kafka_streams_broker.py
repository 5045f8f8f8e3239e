"""windowstore's sliding streaming processor beside a real Kafka Streams application on a real
broker: ``benches/bench_kafka_streams.py`` at a small size. The oracle tests run Kafka's
topologies in ``TopologyTestDriver``; this runs the same kind of topology in Kafka Streams' own
runtime (a consumer group, the record cache, commits, the changelog topic of its RocksDB store)
on records read from a topic, and the benchmark fails unless Kafka's final windows equal
windowstore's in number and in the sum of every column."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.conformance

BENCH = Path(__file__).resolve().parents[2] / "benches" / "bench_kafka_streams.py"


def test_final_sliding_windows_equal_kafka_streams_on_a_broker() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--records", "20000", "--keys", "200", "--repeat", "1"],
        capture_output=True, text=True, timeout=900, check=False, cwd=BENCH.parent,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    # 20,000 records in time order make about two windows each (Kafka's full set).
    line = next(line for line in proc.stdout.splitlines() if line.startswith("windows: "))
    windows = int(line.split()[1].rstrip(",").replace(",", ""))
    assert 30_000 < windows < 40_000, line
    assert line.endswith("equal in number and column sums"), line
