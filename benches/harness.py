"""What the Python benchmarks share: their common options, medians of wall time, peak memory of
a call or of a process tree, ending a peer's process, a temporary folder, and the tests' modules
(their Kafka broker, their Spark streams)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: Spark's RocksDB state store provider (spark.sql.streaming.stateStore.providerClass).
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def arguments(
    description: str | None,
    *,
    size: int,
    keys: int,
    repeat: int,
    names: tuple[str, str] = ("events", "users"),
) -> argparse.ArgumentParser:
    """A parser with the options of a benchmark over a generated stream: how many records
    (``--events``, or ``--records`` by ``names``) of how many keys (``--users`` or ``--keys``),
    ``--repeat`` (runs of each contender) and ``--batch-rows`` (rows per call of a streaming
    processor). The benchmark adds its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(f"--{names[0]}", type=int, default=size)
    parser.add_argument(f"--{names[1]}", type=int, default=keys)
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--batch-rows", type=int, default=1 << 16)
    return parser


def median_seconds(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The median wall time of `repeat` calls of fn, and the last call's result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def rss_bytes() -> int:
    """This process's resident set size."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_extra_bytes(fn: Callable[[], Any]) -> int:
    """Largest RSS above the starting RSS while fn runs (sampled every millisecond)."""
    base, peak, done = rss_bytes(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_bytes())
            time.sleep(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    result = fn()
    done.set()
    sampler.join()
    del result
    return max(peak[0], rss_bytes()) - base


def probed_bytes(script: str, *args: str) -> int:
    """``script --memory-probe ARGS`` run in a fresh process (this one's allocator holds pages
    of the runs before): the byte count it prints last."""
    probe = subprocess.run(
        [sys.executable, script, "--memory-probe", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(probe.stdout.split()[-1])


def read_proc(path: str) -> str:
    """A /proc file's text, or "" when the process has gone."""
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def descendants(pid: int) -> list[int]:
    """The processes below ``pid``: its children, theirs, and so on (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = read_proc(f"/proc/{entry}/stat")
            if stat:
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def peak_rss(pid: int) -> int:
    """The peak resident memory (VmHWM) of process ``pid`` in bytes; 0 once it has gone."""
    for line in read_proc(f"/proc/{pid}/status").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def alternating_medians(
    contenders: Sequence[Callable[[], Any]], repeat: int
) -> tuple[list[float], list[list[float]]]:
    """Runs the contenders in turn (A, B, A, B, ...), ``repeat`` rounds, so that load from
    elsewhere on a shared machine hits all of them alike; each one's median seconds, and all
    its run times. Results are dropped as soon as they are timed (check them beforehand)."""
    times: list[list[float]] = [[] for _ in contenders]
    for _ in range(repeat):
        for i, fn in enumerate(contenders):
            start = time.perf_counter()
            result = fn()
            times[i].append(time.perf_counter() - start)
            del result
    return [statistics.median(t) for t in times], times


def end_process(process: subprocess.Popen[str], seconds: float) -> None:
    """Ends a peer's process that runs until its input closes: closes its input, and kills it
    if it has not ended within ``seconds`` (a run still going when the caller failed)."""
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A new temporary folder (its name starts with ``prefix``) for a benchmark's files, removed
    with everything in it when the block ends, however it ends."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def tests_module(name: str) -> Any:
    """The module ``name`` of ``tests/`` (``spark.streams``: ``tests/spark/streams.py``). The
    benchmarks run as scripts, so ``tests/`` goes on the path as pytest puts it there."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    return importlib.import_module(name)


def kafka_module() -> Any:
    """``tests/spark/kafka_broker.py``: the tests' Kafka broker and the Kafka jars Maven
    resolves."""
    return tests_module("spark.kafka_broker")
