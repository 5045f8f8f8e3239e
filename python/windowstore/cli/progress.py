"""What a command says while it runs: timed progress lines on stderr (``Say``), a Spark job's
stages and tasks as they advance (``Progress``), and counts in words (``plural``)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Progress", "Say", "counted", "plural"]


def plural(n: int, noun: str) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1: ``1 row``, ``4 rows``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def counted(n: int | None, noun: str) -> str:
    """``plural``, or ``<noun>s`` alone when the count is unknown."""
    return f"{noun}s" if n is None else plural(n, noun)


class Say:
    """Progress lines on stderr, each with the seconds since the command began."""

    def __init__(self, began: float) -> None:
        self.began = began
        self.lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self.lock:
            print(f"[{time.perf_counter() - self.began:6.1f}s] {text}", file=sys.stderr,
                  flush=True)  # fmt: skip


class Progress:
    """While a Spark job runs: its stages' tasks, on stderr, from Spark's status tracker (a
    line when a stage starts, then at most every ``every`` seconds while it makes progress)."""

    def __init__(self, spark: SparkSession, say: Say, every: float = 10.0) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.say = say
        self.every = every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="windowstore-progress",
                                       daemon=True)  # fmt: skip

    def __enter__(self) -> Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def _watch(self) -> None:
        shown: dict[int, tuple[int, float]] = {}
        try:
            while not self.stop.wait(1.0):
                for stage in self.tracker.getActiveStageIds():
                    info = self.tracker.getStageInfo(stage)
                    if info is None:
                        continue
                    done, now = info.numCompletedTasks, time.perf_counter()
                    last = shown.get(stage)
                    if last is None or (done != last[0] and now - last[1] >= self.every):
                        shown[stage] = (done, now)
                        self.say(f"  stage {stage}: {done}/{info.numTasks} tasks done "
                                 f"({info.numActiveTasks} running)")  # fmt: skip
        except Exception:  # the session stopped under us: progress is best-effort
            return
