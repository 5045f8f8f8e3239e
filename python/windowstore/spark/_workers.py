"""Which Python Spark's workers run, and whether it imports windowstore: checked before any job.

PySpark's driver fixes the workers' interpreter when its SparkContext starts: the driver's
``PYSPARK_PYTHON`` (which ``spark-submit`` sets from ``spark.pyspark.python``), else ``python3``
from ``PATH`` (``SparkContext.pythonExec``); each Python function a plan holds carries it. Started
from a virtual environment whose ``bin`` is not first on ``PATH``, a plain local session's workers
run a ``python3`` without windowstore and fail in an executor with ``ModuleNotFoundError``.

So each window function checks, on the driver, before it plans anything:

- a local master (its workers are this machine's processes): the interpreter is run once (cached)
  to import windowstore. If it cannot and nobody chose it (``PYSPARK_PYTHON`` unset), the
  function's own Python functions run this driver's interpreter instead, which has windowstore
  (the session's other Python functions keep theirs); if ``PYSPARK_PYTHON`` chose it, the call
  fails with `WorkerPythonError`, naming it and the interpreter to use.
- any other master, or an interpreter given as a relative path (an archive's
  ``./environment/bin/python``, unpacked in the workers' directory): one tiny job (once per
  application) imports windowstore in an executor, and a failure becomes `WorkerPythonError`,
  pointing at the cluster how-to's packed environment.

A Spark Connect session's workers belong to its server, which the client cannot inspect: nothing
is checked there.
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession

from windowstore.exceptions import WorkerPythonError

__all__ = ["checked_workers", "workers_import_windowstore"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: What a worker's interpreter runs: the import a window function's workers need, and its version
#: (PySpark refuses workers of another minor version than the driver's).
_PROBE = "import sys, windowstore._core; print('%d.%d' % sys.version_info[:2])"
_DRIVER_VERSION = "{}.{}".format(*sys.version_info[:2])
_CLUSTER_DOC = 'docs/how-to/cluster.md ("Deploying on a Spark cluster")'
#: Applications (and interpreters) whose executors have imported windowstore.
_clusters_checked: set[tuple[str, str]] = set()


def checked_workers(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function`` (whose first argument is a DataFrame or a SparkSession) run inside
    `workers_import_windowstore` of that session."""

    @functools.wraps(function)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        first = args[0] if args else None
        spark = first.sparkSession if isinstance(first, DataFrame) else first
        if not isinstance(spark, SparkSession):
            return function(*args, **kwargs)
        with workers_import_windowstore(spark):
            return function(*args, **kwargs)

    return run


@contextmanager
def workers_import_windowstore(spark: SparkSession) -> Iterator[None]:
    """Raises `WorkerPythonError` unless the Python functions planned inside run an interpreter
    that imports windowstore; on a local master where ``PYSPARK_PYTHON`` is unset, makes them
    run this driver's interpreter if the default one cannot."""
    sc = _context(spark)
    if sc is None:  # Spark Connect: the server's workers, out of the client's sight
        yield
        return
    chosen = sc.pythonExec
    # A relative path is the workers' (``./environment/bin/python`` of an archive, unpacked in
    # their working directory): only a worker can tell whether it runs.
    relative = os.sep in chosen and not os.path.isabs(chosen)
    if relative or not (sc.master or "").startswith("local"):
        _check_cluster(sc, chosen)
        yield
        return
    problem = _local_problem(chosen)
    if problem is None:
        yield
        return
    if "PYSPARK_PYTHON" in os.environ or chosen != "python3":
        raise WorkerPythonError(
            f"Spark's Python workers run {chosen} (PYSPARK_PYTHON), which {problem}: set "
            f"PYSPARK_PYTHON to an interpreter with windowstore installed, such as this one "
            f"({sys.executable}), before the SparkSession starts, or start it with "
            "windowstore.spark.spark_session()"
        )
    # PySpark's default, python3 on PATH: this driver's interpreter has windowstore, and a local
    # master's workers run on this machine. PySpark reads pythonExec when a Python function is
    # planned, so only the functions planned here get it.
    sc.pythonExec = sys.executable
    try:
        yield
    finally:
        sc.pythonExec = chosen


def _context(spark: SparkSession) -> SparkContext | None:
    """The session's SparkContext; None for Spark Connect, which has none on the client."""
    try:
        return spark.sparkContext
    except Exception:
        return None


@functools.cache
def _local_problem(python: str) -> str | None:
    """Why interpreter ``python`` (a path, or a name looked up on ``PATH``) cannot run
    windowstore's workers, or None if it can."""
    path = python if os.sep in python else shutil.which(python)
    if path is None:
        return "is not on PATH"
    try:
        done = subprocess.run(
            [path, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=False
        )
    except OSError as e:
        return f"cannot be run ({e})"
    except subprocess.TimeoutExpired:
        return "did not import windowstore within 120 s"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return f"cannot import windowstore ({lines[-1] if lines else f'exit {done.returncode}'})"
    version = done.stdout.strip()
    if version != _DRIVER_VERSION:
        return f"is Python {version}, not the driver's {_DRIVER_VERSION} (PySpark needs the same)"
    return None


def _check_cluster(sc: SparkContext, python: str) -> None:
    """One task imports windowstore in an executor (once per application and interpreter).

    Standard-library functions only: they unpickle in any worker, where windowstore's would
    fail before the import is tried."""
    application = (sc.applicationId, python)
    if application in _clusters_checked:
        return
    from windowstore._causes import root_cause

    probe = sc.parallelize(["windowstore._core"], 1).map(importlib.import_module).map(str)
    try:
        probe.collect()
    except Exception as e:
        raise WorkerPythonError(
            f"Spark's Python workers ({python}) cannot import windowstore on the executors "
            f"({root_cause(e, hint=False)}): ship it in a packed virtual environment "
            "(spark.archives) and point spark.pyspark.python (PYSPARK_PYTHON for a driver "
            "started with plain python) "
            f"at its interpreter: see {_CLUSTER_DOC}"
        ) from None
    _clusters_checked.add(application)
