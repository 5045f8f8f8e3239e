"""A single-node Kafka broker on 127.0.0.1 and the jars of Spark's Kafka connector, for the Spark
Kafka test (``test_spark_kafka.py``) and the streaming benchmark (``--source kafka``).

Both come from Maven Central. The poms of ``kafka/`` list them: ``broker/`` Kafka's own
``kafka_2.13`` (the broker, its storage tool) and ``kafka-tools`` (the topic tool);
``connector/`` Spark's ``spark-sql-kafka-0-10_2.13``. Maven resolves each once into ``~/.m2``
and this module keeps the classpath it found in ``kafka/target/`` (ignored by git) until the pom
changes or one of its jars is gone; a file lock keeps concurrent callers (pytest workers, a
benchmark) from resolving at the same time. The connector's jars go to Spark as local files in
``spark.jars``, so a run does not depend on Ivy.

The broker is one KRaft node (broker and controller in one JVM) on free ports, its storage
formatted by Kafka's ``StorageTool`` in a directory of the caller's::

    with KafkaBroker(workdir) as broker:        # started, serving; always stopped on leaving
        broker.create_topic("clicks", partitions=2)
        spark = SparkSession.builder.config("spark.jars", spark_jars()).getOrCreate()
        spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)...
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from types import TracebackType

import pyspark

KAFKA_DIR = Path(__file__).resolve().parent / "kafka"
TARGET = KAFKA_DIR / "target"
RESOLVE_TIMEOUT_S = 1800
#: Short-lived tools (storage format, topic creation) start faster with these.
TOOL_JVM = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
BROKER_JVM = ["-Xms256m", "-Xmx512m"]


class KafkaError(RuntimeError):
    """The jars could not be resolved, or the broker or a Kafka tool failed."""


def java_missing() -> str | None:
    """Why no broker can run here (``java`` is not on PATH), or None when one can."""
    if shutil.which("java") is None:
        return "java is not on PATH: the Kafka broker runs on Java 17 (scripts/setup.sh)"
    return None


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise KafkaError(f"'{tool}' is not on PATH (the Kafka broker needs Java 17 and Maven)")
    return path


def resolve(name: str) -> list[Path]:
    """The jars of ``kafka/NAME/pom.xml`` and its dependencies, resolved by Maven when the cached
    classpath (``kafka/target/NAME.classpath``) is missing, older than the pom or names a jar
    that is gone."""
    pom = KAFKA_DIR / name / "pom.xml"
    cached = TARGET / f"{name}.classpath"
    jars = _cached_jars(cached, pom)
    if jars is not None:
        return jars
    mvn = _require("mvn")
    TARGET.mkdir(parents=True, exist_ok=True)
    with (TARGET / f".{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        jars = _cached_jars(cached, pom)  # resolved by another process while this one waited
        if jars is not None:
            return jars
        written = cached.with_suffix(".tmp")
        proc = subprocess.run(
            [mvn, "-q", "-B", "-f", str(pom), "dependency:build-classpath",
             f"-Dmdep.outputFile={written}"],
            capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S, check=False,
        )  # fmt: skip
        if proc.returncode != 0 or not written.is_file():
            raise KafkaError(
                f"Maven could not resolve {pom} (exit {proc.returncode}):\n"
                f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )
        written.replace(cached)
    jars = _cached_jars(cached, pom)
    if jars is None:
        raise KafkaError(f"Maven wrote no usable classpath for {pom} into {cached}")
    return jars


def _cached_jars(cached: Path, pom: Path) -> list[Path] | None:
    if not cached.is_file() or cached.stat().st_mtime < pom.stat().st_mtime:
        return None
    jars = [Path(p) for p in cached.read_text().strip().split(os.pathsep) if p]
    return jars if jars and all(p.is_file() for p in jars) else None


def connector_jars() -> list[Path]:
    """The jars Spark's "kafka" source and sink need beyond Spark's own: the connector, Kafka's
    client and their dependencies, less every artifact pyspark ships (Hadoop, Scala, codecs), so
    that no class is on Spark's classpath twice."""
    shipped = {
        _artifact_of_file(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")
    }
    # ~/.m2 lays a jar out as GROUP/ARTIFACT/VERSION/ARTIFACT-VERSION.jar.
    return [p for p in resolve("connector") if p.parent.parent.name not in shipped]


def _artifact_of_file(name: str) -> str:
    """``scala-library-2.13.18.jar`` -> ``scala-library``: the name before the version."""
    match = re.match(r"(.+?)-\d", name)
    return match.group(1) if match else name


def spark_jars() -> str:
    """:func:`connector_jars` as the value of Spark's ``spark.jars`` setting."""
    return ",".join(str(p) for p in connector_jars())


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cluster_id() -> str:
    """A KRaft cluster id: a random UUID in Kafka's URL-safe base64 form, not starting with a
    dash (which the tools' argument parser would take for an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class KafkaBroker:
    """One Kafka node on 127.0.0.1, broker and KRaft controller in one JVM, on free ports, its
    configuration, data and log (``broker.log``) in ``workdir``.

    A context manager: entering starts the broker and returns once it accepts connections;
    leaving stops it, whatever happened (SIGTERM, then SIGKILL of its process group)."""

    START_TIMEOUT_S = 120.0
    STOP_TIMEOUT_S = 15.0

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.classpath = os.pathsep.join(str(p) for p in resolve("broker"))
        self.port = free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        #: The value of ``bootstrap.servers`` (Spark: ``kafka.bootstrap.servers``).
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.log = workdir / "broker.log"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> KafkaBroker:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _properties(self) -> str:
        listeners = f"PLAINTEXT://{self.bootstrap},CONTROLLER://127.0.0.1:{self.controller_port}"
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": listeners,
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            # One node: every internal topic has one replica.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # Topics exist only when created (create_topic), with the partitions asked for.
            "auto.create.topics.enable": "false",
        }
        return "".join(f"{k}={v}\n" for k, v in settings.items())

    def start(self) -> None:
        """Formats the storage, starts the broker and waits until its port accepts."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "server.properties"
        config.write_text(self._properties())
        self._tool("kafka.tools.StorageTool", "format", "--cluster-id", _cluster_id(),
                   "--config", str(config))  # fmt: skip
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [_require("java"), *BROKER_JVM, "-cp", self.classpath, "kafka.Kafka", str(config)],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + self.START_TIMEOUT_S
        while True:
            self._check_running()
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if time.monotonic() > deadline:
                raise KafkaError(f"the broker's port never opened:\n{self._log_tail()}")
            time.sleep(0.2)

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Creates topic ``name`` with ``partitions`` partitions (one replica each), retrying
        while the broker is still joining its controller."""
        deadline = time.monotonic() + self.START_TIMEOUT_S
        while True:
            self._check_running()
            try:
                self._tool(
                    "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", self.bootstrap,
                    "--create", "--topic", name, "--partitions", str(partitions),
                    "--replication-factor", "1",
                )  # fmt: skip
                return
            except KafkaError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def produce(self, topic: str, values: list[str]) -> None:
        """Writes ``values`` (one line each, no key) to ``topic`` in order, with Kafka's console
        producer."""
        proc = subprocess.run(
            [_require("java"), *TOOL_JVM, "-cp", self.classpath,
             "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", self.bootstrap,
             "--topic", topic],
            input="".join(v + "\n" for v in values), capture_output=True, text=True,
            timeout=self.START_TIMEOUT_S, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise KafkaError(f"the console producer failed (exit {proc.returncode}):\n"
                             f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")  # fmt: skip

    def stop(self) -> None:
        """Stops the broker: SIGTERM, then SIGKILL of its process group if it has not exited
        within ``STOP_TIMEOUT_S``. Does nothing when it is not running."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=self.STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()

    def _tool(self, main: str, *args: str) -> None:
        """Runs one of Kafka's command line tools (class ``main``) on the broker's classpath."""
        proc = subprocess.run(
            [_require("java"), *TOOL_JVM, "-cp", self.classpath, main, *args],
            capture_output=True, text=True, timeout=self.START_TIMEOUT_S, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise KafkaError(
                f"{main} {' '.join(args)} failed (exit {proc.returncode}):\n"
                f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            )

    def _check_running(self) -> None:
        if self.process is None or self.process.poll() is not None:
            raise KafkaError(f"the broker is not running:\n{self._log_tail()}")

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is gone already
        os.killpg(pid, sig)
