"""What a streaming query costs besides time, for bench_spark_streaming.py's long scenario: the
checkpoint bytes each micro-batch writes, the micro-batches in which RocksDB compacted, and the
peak memory of the driver's JVM and Python workers."""

from __future__ import annotations

import json
import os
import threading
import zipfile
from pathlib import Path

from harness import descendants, peak_rss, read_proc

__all__ = ["PeakMemory", "checkpoint_bytes", "rocksdb_compactions"]


class PeakMemory:
    """Samples the peak resident memory (VmHWM) of this driver's JVM and of its Python
    workers (the JVM's descendants), every 0.2 s until stopped."""

    def __init__(self) -> None:
        self.jvm = 0
        self.worker = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(0.2)

    def sample(self) -> None:
        for pid in descendants(os.getpid()):
            cmd = read_proc(f"/proc/{pid}/cmdline")
            hwm = peak_rss(pid)
            if "java" in cmd.split("\0")[0]:
                self.jvm = max(self.jvm, hwm)
            elif "pyspark" in cmd:
                self.worker = max(self.worker, hwm)

    def stop(self) -> None:
        self.sample()
        self._stop.set()
        self._thread.join()


def checkpoint_bytes(checkpoint: Path) -> dict[int, int]:
    """Bytes written per micro-batch: the files under ``checkpoint`` by modification time,
    micro-batch ``i`` owning those after commit ``i - 1`` up to commit ``i``."""
    commits = sorted(
        (int(p.name), p.stat().st_mtime_ns)
        for p in (checkpoint / "commits").iterdir()
        if p.name.isdigit()
    )
    files = [p.stat() for p in checkpoint.rglob("*") if p.is_file()]
    out: dict[int, int] = {}
    before = 0
    for batch, at in commits:
        out[batch] = sum(f.st_size for f in files if before < f.st_mtime_ns <= at)
        before = at
    return out


def rocksdb_compactions(checkpoint: Path) -> dict[int, int]:
    """Per micro-batch, how many partitions' RocksDB stores compacted their files in it: the
    state version it committed (``<batch + 1>.zip``, whose metadata lists the version's SST
    files) dropped a file that the previous version held. A compaction rewrites a partition's
    files whole, so the micro-batch that uploads it writes far more than its own changes; which
    micro-batch that is depends on when RocksDB's background compaction finishes."""
    out: dict[int, int] = {}
    for part in (checkpoint / "state" / "0").iterdir():
        held: set[str] = set()
        for z in sorted(part.glob("*.zip"), key=lambda f: int(f.stem)):
            with zipfile.ZipFile(z) as f:
                meta = json.loads(f.read("metadata").decode().splitlines()[1])
            files = {s["dfsSstFileName"] for s in meta.get("sstFiles", [])}
            if held - files:
                batch = int(z.stem) - 1
                out[batch] = out.get(batch, 0) + 1
            held = files
    return out
