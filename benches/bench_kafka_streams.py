"""Sliding windows in a stream: windowstore's streaming processor beside Kafka Streams itself.

Both get benches/bench_sliding.py's records (--records over --keys, about --per-window records a
window, in time order) and compute the same windows: Kafka's sliding windows of time
difference D, grace 0, count, sum and max of the value, each window once when it closes.

- windowstore: `SlidingWindowProcessor` (emit final) fed the table in calls of --batch-rows
  records, then flushed, on one core, as in bench_sliding.py;
- Kafka Streams (the version of the conformance oracle): an application of one stream thread
  with Kafka's defaults (RocksDB window store, record cache, `EmitStrategy.onWindowClose`),
  reading the records from a topic of a real single-node broker on this machine
  (`benches/KafkaStreamsBench.java`, the broker of tests/spark/kafka_broker.py), except that
  it looks for closed windows after every record (--emit-interval 0): with its default of once
  a wall-clock second, the windows that close and leave its store between two looks are never
  emitted (docs/semantics.md section 7), and the check below fails.

Kafka's windows are checked against windowstore's (their number and the sum of every column)
before any figure is printed. The contenders take turns, --repeat rounds, and the medians are
printed with the ratio. Kafka's time runs from the first record its application processes to
the last: it leaves out the application's start, the topic's writing and the emission of the
windows still open at the end; windowstore's time includes its flush. The broker runs in a JVM of
its own on the same two cores, as it would beside any Kafka Streams application.

Kafka Streams processes a few thousand of these records a second, so the default size is 1M
records over 10k keys (about six minutes a Kafka run).

Needs Java 17 and Maven (scripts/setup.sh installs them); Maven resolves Kafka's jars once into
~/.m2. Run: python benches/bench_kafka_streams.py [--records 1000000] [--keys 10000]
[--repeat 3] [--state rocksdb|rocksdb-nolog|memory-nolog]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from bench_sliding import generate, stream
from harness import kafka_module

HERE = Path(__file__).resolve().parent
JAVA_JVM = ["-Xms2g", "-Xmx4g"]
#: Kafka's window store, as --state names it and as the table names it.
STATES = {
    "rocksdb": "RocksDB + changelog",
    "rocksdb-nolog": "RocksDB, no changelog",
    "memory-nolog": "in memory, no changelog",
}


def write_records(data: pa.Table, path: Path, offset: int) -> None:
    """The records as little-endian int64 triples (key, time + offset, value), in the table's
    order."""
    k, t, v = (data[c].to_numpy().astype("<i8") for c in ("k", "t", "v"))
    np.column_stack([k, t + offset, v]).tofile(path)


def sums(windows: pa.Table, offset: int) -> dict[str, int]:
    """The figures KafkaStreamsBench.java prints of the windows it emitted, for windows
    `offset` later than `windows`."""

    def total(column: str) -> int:
        return int(pc.sum(windows[column]).as_py() or 0)

    n = windows.num_rows
    return {
        "windows": n,
        "sum_count": total("count"),
        "sum_sum": total("sum_v"),
        "sum_max": total("max_v"),
        "sum_start": total("window_start") + n * offset,
        "sum_end": total("window_end") + n * offset,
    }


class KafkaStreamsRuns:
    """KafkaStreamsBench.java in one JVM: it writes the records to a topic at start, then runs a
    fresh application over the topic for each :meth:`run`."""

    def __init__(
        self, bootstrap: str, records: Path, d: int, emit_interval: int, state: str, jvm: list[str]
    ) -> None:
        kafka = kafka_module()
        classpath = os.pathsep.join(str(p) for p in kafka.resolve("streams"))
        java = shutil.which("java")
        if java is None:
            raise SystemExit("java is not on PATH: Kafka Streams runs on Java 17")
        source = HERE / "KafkaStreamsBench.java"
        args = [bootstrap, "sliding-records", str(records), str(d), "0", str(emit_interval), state]
        self.process = subprocess.Popen(
            [java, *JAVA_JVM, *jvm, "-cp", classpath, str(source), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.produced = self._line()

    def _line(self) -> dict[str, Any]:
        """The program's next JSON line (other lines, such as a profiler's, are skipped)."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                result: dict[str, Any] = json.loads(line)
                return result
        raise RuntimeError(f"KafkaStreamsBench.java stopped (exit {self.process.wait()})")

    def run(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        return self._line()

    def close(self) -> None:
        """Ends the program (its input closed); killed if it has not ended within two minutes
        (a run still going when the caller failed)."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    # Kafka Streams processes about 3,000 of these records a second: a Kafka run of bench_sliding's
    # 10M records would take about an hour.
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--per-window", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch-rows", type=int, default=1 << 16)
    parser.add_argument(
        "--emit-interval",
        type=int,
        default=0,
        help="wall-clock ms between Kafka's looks for closed windows (an internal setting, 1000 "
        "by default in Kafka; at 1000 Kafka loses the windows that close and expire between "
        "two looks, and the check fails)",
    )
    parser.add_argument(
        "--state",
        choices=list(STATES),
        default="rocksdb",
        help="Kafka's window store: RocksDB backed up by a changelog topic (Kafka's default), "
        "RocksDB alone, or Kafka's in-memory store alone",
    )
    parser.add_argument(
        "--jvm",
        action="append",
        default=[],
        help="an option for Kafka Streams' JVM (a profiler: -XX:StartFlightRecording=...)",
    )
    args = parser.parse_args()

    data, d = generate(args.records, args.keys, args.per_window, seed=1)
    n = data.num_rows
    # Kafka gives a record earlier than D a window [0, D] instead of [t - D, t] (no negative
    # times; docs/semantics.md section 7): its records come D + 1 later, and its windows too.
    offset = d + 1
    kafka = kafka_module()
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "records.bin"
        write_records(data, records, offset)
        with kafka.KafkaBroker(Path(tmp) / "broker") as broker:
            runs = KafkaStreamsRuns(
                broker.bootstrap, records, d, args.emit_interval, args.state, args.jvm
            )
            try:
                print(
                    f"{n:,} records over {args.keys:,} keys written to the broker's topic in "
                    f"{runs.produced['seconds']:.1f} s; D = {d:,} ms, grace 0, count/sum/max; "
                    f"{args.batch_rows:,} records a windowstore call; {args.repeat} rounds"
                )
                ours: list[float] = []
                theirs: list[float] = []
                want: dict[str, int] | None = None
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    out = stream(data, d, args.batch_rows)
                    ours.append(time.perf_counter() - start)
                    want = want or sums(out, offset)
                    del out
                    got = runs.run()
                    theirs.append(got.pop("seconds"))
                    if got.pop("records") != n:
                        raise AssertionError("Kafka Streams did not process every record")
                    if got != want:
                        raise AssertionError(
                            f"Kafka Streams' windows {got} != windowstore's {want} "
                            f"(Kafka {theirs[-1]:.2f} s, windowstore {ours[-1]:.2f} s)"
                        )
            finally:
                runs.close()
    print(f"windows: {want['windows'] if want else 0:,}, equal in number and column sums")
    ws, ks = statistics.median(ours), statistics.median(theirs)
    print(f"{'contender':<64}{'median s':>10}{'M rec/s':>10}{'vs Kafka':>10}")
    for name, s in (
        ("windowstore SlidingWindowProcessor (1 core)", ws),
        (f"Kafka Streams, 1 stream thread, {STATES[args.state]} (+ broker)", ks),
    ):
        print(f"{name:<64}{s:>10.3f}{n / s / 1e6:>10.3f}{ks / s:>9.2f}x")
    print("runs, s: windowstore " + ", ".join(f"{s:.2f}" for s in ours)
          + "; Kafka Streams " + ", ".join(f"{s:.2f}" for s in theirs))  # fmt: skip


if __name__ == "__main__":
    main()
