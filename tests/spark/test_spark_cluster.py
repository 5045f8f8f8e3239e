"""windowstore.spark on a real Spark standalone cluster (a master and two workers from the
pyspark package, on 127.0.0.1), with windowstore shipped to the executors as a venv-pack archive
through ``spark.archives``: the deployment path the README documents."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pyspark
import pytest

import windowstore
from windowstore.clickstream import clickstream

from .cluster_job import AGGS
from .compare import assert_same_windows

pytestmark = pytest.mark.spark_cluster

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(command: list[str], timeout: float, **kwargs: object) -> None:
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kwargs,  # type: ignore[call-overload]
    )
    assert result.returncode == 0, (
        f"{command[:3]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )


def wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"exited early:\n{log.read_text()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"port {port} never opened:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv-pack archive of a fresh venv holding this checkout's wheel and its dependencies."""
    tmp = tmp_path_factory.mktemp("venv")
    wheels = tmp / "wheels"
    run([str(BIN / "maturin"), "build", "--release", "--out", str(wheels)], 1800, cwd=ROOT)
    (wheel,) = wheels.glob("windowstore-*.whl")
    env = tmp / "env"
    run([sys.executable, "-m", "venv", str(env)], 300)
    pins = [f"{name}=={version(name)}" for name in ("pyarrow", "numpy")]
    run([str(env / "bin" / "pip"), "install", "-q", str(wheel), *pins], 900)
    packed = tmp / "env.tar.gz"
    run([str(BIN / "venv-pack"), "-p", str(env), "-o", str(packed), "-q"], 900)
    return packed


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone master and two workers (1 core each) on 127.0.0.1; always stopped."""
    tmp = tmp_path_factory.mktemp("cluster")
    # Nothing of this venv on the cluster's PATH: executors must find Python in the archive.
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != BIN)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", PATH=path)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, args: list[str], port: int) -> None:
        log = tmp / f"{name}.log"
        with log.open("wb") as out:
            p = subprocess.Popen(
                [spark_class, *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        processes.append(p)
        wait_for_port(port, p, log, 120)

    try:
        start(
            "master",
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(free_port())],
            port,
        )  # fmt: skip
        for i in range(2):
            worker_port = free_port()
            start(
                f"worker{i}",
                ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--port", str(worker_port), "--webui-port", str(free_port()), "--cores", "1",
                 "--memory", "1200m", "--work-dir", str(tmp / f"work{i}")],
                worker_port,
            )  # fmt: skip
        yield url
    finally:
        for p in reversed(processes):
            if p.poll() is None:
                os.killpg(p.pid, 15)
        for p in processes:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait(timeout=30)


def test_both_functions_on_a_standalone_cluster(
    cluster: str, archive: Path, tmp_path: Path
) -> None:
    table = clickstream(40_000, users=300, seed=12)
    table = table.set_column(
        1, "ts", table["ts"].cast(pa.timestamp("ms")).cast(pa.timestamp("us", "UTC"))
    )
    pq.write_table(table, tmp_path / "clicks.parquet")
    out = tmp_path / "out"
    job = Path(__file__).with_name("cluster_job.py")
    # The executors' Python comes from spark.pyspark.python (the archive), not from this process.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    run(
        [
            sys.executable,
            str(job),
            cluster,
            str(archive),
            str(tmp_path / "clicks.parquet"),
            str(out),
        ],
        900,
        env=env,
    )
    # The executors imported windowstore from the shipped archive, not from this venv.
    executors = (out / "executors.txt").read_text().splitlines()
    assert len(executors) == 4
    assert all("/environment/" in f and f != windowstore.__file__ for f in executors), executors

    sessions = ds.dataset(out / "sessions", format="parquet").to_table()
    want = windowstore.session_windows(table, key="user_id", time="ts", gap="30m", aggs=AGGS)
    assert want.num_rows > 2000
    assert_same_windows(sessions, want, ["user_id", "session_start"])
    sliding = ds.dataset(out / "sliding", format="parquet").to_table()
    want = windowstore.sliding_windows(
        table, key="user_id", time="ts", time_difference="5m", aggs=AGGS
    )
    assert_same_windows(sliding, want, ["user_id", "window_start"])
