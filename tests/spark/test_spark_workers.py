"""The workers' interpreter is checked before any job: on a cluster, one probe task imports
windowstore in an executor and its failure becomes one WorkerPythonError naming the cause.
(The local-master cases run a whole driver: tests/spark/test_spark_docs.py.)"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from pyspark.sql import SparkSession

from windowstore.spark import WorkerPythonError, _workers

pytestmark = pytest.mark.spark


def python_without_windowstore() -> str:
    """An interpreter of the driver's Python version that cannot import windowstore."""
    for candidate in (f"python{sys.version_info[0]}.{sys.version_info[1]}", "python3"):
        for found in (shutil.which(candidate, path="/usr/bin"), shutil.which(candidate)):
            if found is None:
                continue
            probe = subprocess.run([found, "-c", _workers._PROBE], capture_output=True, text=True)
            if probe.returncode != 0 and "windowstore" in probe.stderr:
                return found
    pytest.fail("no interpreter without windowstore on this machine")


def test_executors_without_windowstore_fail_the_probe_in_one_line(spark: SparkSession) -> None:
    sc = spark.sparkContext
    python = python_without_windowstore()
    before = sc.pythonExec
    sc.pythonExec = python  # what a cluster's executors would run
    try:
        with pytest.raises(WorkerPythonError) as e:
            _workers._check_cluster(sc, python)
    finally:
        sc.pythonExec = before
    message = str(e.value)
    assert "\n" not in message
    assert "ModuleNotFoundError: No module named 'windowstore'" in message
    assert python in message
    assert "spark.archives" in message
    assert "cluster.md" in message
    assert (sc.applicationId, python) not in _workers._clusters_checked


def test_executors_with_windowstore_pass_the_probe_once(spark: SparkSession) -> None:
    sc = spark.sparkContext
    _workers._check_cluster(sc, sc.pythonExec)
    assert (sc.applicationId, sc.pythonExec) in _workers._clusters_checked
