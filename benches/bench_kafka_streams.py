"""Sliding windows in a stream: windowstore's streaming processor beside Kafka Streams itself.

Both get benches/bench_sliding.py's records (--records over --keys, about --per-window records a
window, in time order) and compute the same windows: Kafka's sliding windows of time
difference D, grace 0, count, sum and max of the value, each window once when it closes.

- windowstore: `SlidingWindowProcessor` (emit final) fed the table in calls of --batch-rows
  records, then flushed, on one core, as in bench_sliding.py;
- Kafka Streams (the version of the conformance oracle): an application of one stream thread
  with Kafka's defaults (RocksDB window store, record cache, `EmitStrategy.onWindowClose`),
  reading the records from a topic of a real single-node broker on this machine
  (`benches/KafkaStreamsBench.java`, the broker of tests/spark/kafka_broker.py), run twice a
  round (--emit-intervals): at Kafka's default emit interval, where it looks for closed windows
  once a wall-clock second, and at emit interval 0, where it looks after every record (a range
  scan of its store each time).

At its default, Kafka never emits the windows that close and leave its store between two looks
(docs/semantics.md section 7): the bench prints how many it lost (windowstore's windows minus
Kafka's), after checking that what Kafka emitted is no more than windowstore's in number and in
the sum of every column (all of them positive). At emit interval 0 Kafka's windows must equal
windowstore's, in number and in the sum of every column. Both checks come before any figure is
printed. The contenders take turns, --repeat rounds, and the medians are printed with the ratios
of Kafka's time to windowstore's, its default first. Kafka's time runs from the first record its
application processes to
the last: it leaves out the application's start, the topic's writing and the emission of the
windows still open at the end; windowstore's time includes its flush. The broker runs in a JVM of
its own on the same two cores, as it would beside any Kafka Streams application.

Kafka Streams processes a few thousand of these records a second, so the default size is 1M
records over 10k keys (about six minutes a Kafka run).

Needs Java 17 and Maven (scripts/setup.sh installs them); Maven resolves Kafka's jars once into
~/.m2. Run: python benches/bench_kafka_streams.py [--records 1000000] [--keys 10000]
[--repeat 3] [--emit-intervals default,0] [--state rocksdb|rocksdb-nolog|memory-nolog]
"""

from __future__ import annotations

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
from harness import arguments, end_process, kafka_module

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


def emit_interval(word: str) -> int:
    """An --emit-intervals item: wall-clock ms, or "default" (-1: Kafka's own, once a second)."""
    return -1 if word == "default" else int(word)


def interval_name(interval: int) -> str:
    return "the default emit interval (1 s)" if interval < 0 else f"emit interval {interval} ms"


class KafkaStreamsRuns:
    """KafkaStreamsBench.java in one JVM: it writes the records to a topic at start, then runs a
    fresh application over the topic for each :meth:`run`."""

    def __init__(self, bootstrap: str, records: Path, d: int, state: str, jvm: list[str]) -> None:
        kafka = kafka_module()
        classpath = os.pathsep.join(str(p) for p in kafka.resolve("streams"))
        java = shutil.which("java")
        if java is None:
            raise SystemExit("java is not on PATH: Kafka Streams runs on Java 17")
        source = HERE / "KafkaStreamsBench.java"
        args = [bootstrap, "sliding-records", str(records), str(d), "0", state]
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

    def run(self, emit_interval: int) -> dict[str, Any]:
        """A fresh application's run over the topic, looking for closed windows every
        ``emit_interval`` wall-clock ms (-1: Kafka's default)."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"run {emit_interval}\n")
        self.process.stdin.flush()
        return self._line()

    def close(self) -> None:
        """Ends the program (its input closed); killed if it has not ended within two minutes
        (a run still going when the caller failed)."""
        end_process(self.process, 120)


def main() -> None:
    # Kafka Streams processes about 3,000 of these records a second: a Kafka run of bench_sliding's
    # 10M records would take about an hour.
    parser = arguments(__doc__, size=1_000_000, keys=10_000, repeat=3, names=("records", "keys"))
    parser.add_argument("--per-window", type=int, default=10)
    parser.add_argument(
        "--emit-intervals",
        type=lambda words: [emit_interval(w) for w in words.split(",")],
        default=[-1, 0],
        help="comma-separated wall-clock ms between Kafka's looks for closed windows, one Kafka "
        'run each a round; "default" leaves Kafka\'s own (an internal setting, once a second, '
        "where Kafka loses the windows that close and expire between two looks: counted); at "
        "0 Kafka's windows must equal windowstore's (default: default,0)",
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
    intervals: list[int] = args.emit_intervals
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "records.bin"
        write_records(data, records, offset)
        with kafka.KafkaBroker(Path(tmp) / "broker") as broker:
            runs = KafkaStreamsRuns(broker.bootstrap, records, d, args.state, args.jvm)
            try:
                print(
                    f"{n:,} records over {args.keys:,} keys written to the broker's topic in "
                    f"{runs.produced['seconds']:.1f} s; D = {d:,} ms, grace 0, count/sum/max; "
                    f"{args.batch_rows:,} records a windowstore call; {args.repeat} rounds"
                )
                ours: list[float] = []
                theirs: dict[int, list[float]] = {i: [] for i in intervals}
                lost: dict[int, list[int]] = {i: [] for i in intervals}
                want: dict[str, int] = {}
                for round_ in range(args.repeat):
                    start = time.perf_counter()
                    out, _ = stream(data, d, args.batch_rows)
                    ours.append(time.perf_counter() - start)
                    want = want or sums(out, offset)
                    del out
                    # Kafka's first run in its JVM is its slowest: every other round runs the
                    # settings in reverse, so that no one setting always goes first.
                    for interval in intervals[:: -1 if round_ % 2 else 1]:
                        got = runs.run(interval)
                        theirs[interval].append(got.pop("seconds"))
                        if got.pop("records") != n:
                            raise AssertionError("Kafka Streams did not process every record")
                        lost[interval].append(check(got, want, interval))
            finally:
                runs.close()
    report(n, args.state, want, ours, theirs, lost)


def check(got: dict[str, int], want: dict[str, int], interval: int) -> int:
    """How many of windowstore's windows (``want``) Kafka's run at ``interval`` lost. At interval
    0 none may be lost and the windows must be the same (in number and every column's sum);
    otherwise Kafka's must be fewer or as many, and no column's sum larger (every column is
    positive, so a subset of windowstore's windows has no larger sum)."""
    if interval == 0 and got != want:
        raise AssertionError(f"Kafka Streams' windows {got} != windowstore's {want}")
    if any(got[c] > want[c] for c in want) or (got["windows"] == want["windows"] and got != want):
        raise AssertionError(
            f"Kafka Streams' windows at {interval_name(interval)}, {got}, are not a subset of "
            f"windowstore's {want}"
        )
    return want["windows"] - got["windows"]


def report(
    n: int,
    state: str,
    want: dict[str, int],
    ours: list[float],
    theirs: dict[int, list[float]],
    lost: dict[int, list[int]],
) -> None:
    """Prints the windows, the windows Kafka lost and the table of medians and ratios."""
    windows = want.get("windows", 0)
    if 0 in theirs:
        print(f"windows: {windows:,}, Kafka at emit interval 0: equal in number and column sums")
    else:
        print(f"windows: {windows:,} (windowstore's)")
    for interval, counts in lost.items():
        if interval != 0:
            print(
                f"Kafka Streams at {interval_name(interval)} lost {statistics.median(counts):,.0f}"
                " of them, median of its runs (windowstore's minus Kafka's, docs/semantics.md "
                "section 7): " + ", ".join(f"{c:,}" for c in counts)
            )
    ws = statistics.median(ours)
    print(f"Kafka Streams: 1 stream thread, {STATES[state]}, on a broker of this machine")
    print(f"{'contender':<52}{'median s':>10}{'M rec/s':>10}{'lost':>10}{'Kafka/ws':>10}")
    print(f"{'windowstore SlidingWindowProcessor (1 core)':<52}{ws:>10.3f}{n / ws / 1e6:>10.3f}")
    for interval, times in theirs.items():
        ks = statistics.median(times)
        name = f"Kafka Streams at {interval_name(interval)}"
        missing = statistics.median(lost[interval])
        print(f"{name:<52}{ks:>10.3f}{n / ks / 1e6:>10.3f}{missing:>10,.0f}{ks / ws:>9.2f}x")
    print(
        "Kafka's time over windowstore's: "
        + "; ".join(
            f"{statistics.median(times) / ws:.2f}x at {interval_name(i)}"
            + (f" ({statistics.median(lost[i]):,.0f} windows lost)" if i != 0 else "")
            for i, times in theirs.items()
        )
    )
    kafka_runs = "; ".join(
        f"Kafka at {interval_name(i)} " + ", ".join(f"{s:.2f}" for s in times)
        for i, times in theirs.items()
    )
    print("runs, s: windowstore " + ", ".join(f"{s:.2f}" for s in ours) + "; " + kafka_runs)


if __name__ == "__main__":
    main()
