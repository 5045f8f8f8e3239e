"""Kafka Streams conformance oracle: Python side.

The oracle is a small Maven project in ``kafka/`` that pipes record streams through Kafka
Streams' ``TopologyTestDriver`` (no broker) and writes every record Kafka forwarded to the
output topic. This module builds its runnable jar (once, when missing or stale) and runs it
over many cases in a single JVM, kept running for the whole test session (server mode).

Case format (input), one dict per case::

    {"window": "session" | "sliding",
     "gap": ms,                 # session only
     "time_difference": ms,     # sliding only
     "grace": ms,
     "retention": ms,           # optional: the store's retention (default Kafka's own)
     "restart_before": [i, ...],  # optional: a new TopologyTestDriver before these records
     "agg": "count" | "sum" | "min" | "max" | "mean" | "concat",
     "emit": "update" | "cached" | "final" | "suppress",
     "batch_ends": [i, ...],    # emit "cached" only, optional: records that end a batch
     "records": [[key, timestamp_ms, value], ...]}   # arrival order

Emit modes: ``update`` forwards every update (stores materialized with caching disabled);
``cached`` puts Kafka's record cache in front of the store and flushes it at the end of each
batch (the records of a batch reach the aggregate together, between two commits; the last
record always ends one); ``final`` is ``EmitStrategy.onWindowClose()``; ``suppress`` is
emit-on-update followed by ``suppress(Suppressed.untilWindowCloses(unbounded()))``. ``mean``
comes back as the exact fraction ``"sum/count"``.

Output, per case (:func:`run_oracle_full`), the records in the order Kafka forwarded them::

    {"key": str, "start": int, "end": int, "value": int | str | None, "timestamp": int,
     "input": int}

``input`` is the index (in ``records``) of the input record whose processing made Kafka forward
the output record (processing is synchronous; the topology notes the record being piped in).
``value`` None is a tombstone (a session window deleted by a merge). ``end`` is inclusive for
both window kinds (sessions: last event time; sliding: start + time_difference, which is what
Kafka's ``Window.end()`` reports for sliding windows). Beside them, ``dropped``: per input
record, how much Kafka's dropped-records metric (``dropped-records-total`` of the task, which
counts records dropped whole as too late and each skipped update of a closed window) grew
while it was processed. :func:`run_oracle` gives the records alone.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

ORACLE_DIR = Path(__file__).resolve().parent / "kafka"
JAR_PATH = ORACLE_DIR / "target" / "kafka-oracle.jar"

BUILD_TIMEOUT_S = 1800


class OracleRecord(TypedDict):
    """One record Kafka forwarded to the output topic."""

    key: str
    start: int
    end: int
    value: int | str | None
    timestamp: int
    input: int


class OracleResult(TypedDict):
    """One case's output: the forwarded records and the dropped records per input record."""

    records: list[OracleRecord]
    dropped: list[int]


class OracleError(RuntimeError):
    """The oracle could not be built or failed on its input."""


def _source_files() -> Iterator[Path]:
    yield ORACLE_DIR / "pom.xml"
    src = ORACLE_DIR / "src"
    if src.is_dir():
        yield from (p for p in src.rglob("*") if p.is_file())


def _jar_is_fresh() -> bool:
    if not JAR_PATH.is_file():
        return False
    jar_mtime = JAR_PATH.stat().st_mtime
    return all(p.stat().st_mtime <= jar_mtime for p in _source_files())


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise OracleError(f"'{tool}' not on PATH (the oracle needs Java 17 + Maven)")
    return path


def build_oracle() -> Path:
    """Build ``kafka/target/kafka-oracle.jar`` unless it is newer than every source file.

    Uses the ordinary ``mvn`` with the user's existing ``~/.m2``. A file lock keeps concurrent
    callers (e.g. several pytest workers) from building at the same time.
    """
    if _jar_is_fresh():
        return JAR_PATH
    mvn = _require("mvn")
    JAR_PATH.parent.mkdir(parents=True, exist_ok=True)
    lock_path = JAR_PATH.parent / ".build.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _jar_is_fresh():  # someone else built it while we waited
                return JAR_PATH
            proc = subprocess.run(
                [mvn, "-q", "-B", "package", "-DskipTests"],
                cwd=ORACLE_DIR,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
            if proc.returncode != 0 or not JAR_PATH.is_file():
                raise OracleError(
                    f"building the Kafka oracle failed (exit {proc.returncode}):\n"
                    f"{proc.stdout}\n{proc.stderr}"
                )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return JAR_PATH


class _Server:
    """The oracle in server mode: one JVM for the whole test run, one request per line."""

    def __init__(self, jar: Path) -> None:
        self.jar_mtime = jar.stat().st_mtime
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [_require("java"), "-jar", str(jar)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            encoding="utf-8",
        )

    def request(self, cases: Sequence[Mapping[str, Any]]) -> object:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(list(cases)) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self.stderr.seek(0)
            err = self.stderr.read().decode("utf-8", "replace")
            raise OracleError(f"the Kafka oracle died (exit {self.proc.poll()}):\n{err}")
        reply = json.loads(line)
        if "error" in reply:
            raise OracleError(f"Kafka oracle failed: {reply['error']}")
        return reply["ok"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.stderr.close()


_server: _Server | None = None


@atexit.register
def _stop_server() -> None:
    global _server
    if _server is not None:
        _server.close()
        _server = None


def run_oracle(cases: Sequence[Mapping[str, Any]]) -> list[list[OracleRecord]]:
    """Run every case through Kafka Streams; return per-case output records."""
    return [r["records"] for r in run_oracle_full(cases)]


def run_oracle_full(cases: Sequence[Mapping[str, Any]]) -> list[OracleResult]:
    """Run every case through Kafka Streams; return per-case output records and drop counts.

    The first call starts the oracle in server mode; later calls reuse that JVM (a new one if
    the jar was rebuilt, or the old one died). Each case still gets a fresh
    ``TopologyTestDriver``, so cases never share state.
    """
    global _server
    if not cases:
        return []
    jar = build_oracle()
    if _server is not None and (
        _server.proc.poll() is not None or _server.jar_mtime != jar.stat().st_mtime
    ):
        _stop_server()
    if _server is None:
        _server = _Server(jar)
    try:
        raw = _server.request(cases)
    except OracleError as e:
        if "died" in str(e):
            _stop_server()
        raise
    if not isinstance(raw, list) or len(raw) != len(cases):
        raise OracleError(f"Kafka oracle returned {raw!r:.200} for {len(cases)} cases")
    return cast("list[OracleResult]", raw)
