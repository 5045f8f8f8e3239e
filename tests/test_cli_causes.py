"""The cause of a failed Spark call in one line (``windowstore._causes``, which the CLI and
``windowstore.spark.root_cause`` use), on exceptions
built as Py4J and pyspark build them: Python's chain, the Java causes behind it, a Python
worker's traceback. The real failures run in tests/spark/test_spark_cli.py."""

from __future__ import annotations

import pytest

from windowstore.cli.causes import root_cause, show_trace
from windowstore.cli.on_spark import start_failure


class _Throwable:
    """A Java exception as Py4J shows it: a message and a cause."""

    def __init__(self, message: str | None, cause: _Throwable | None = None) -> None:
        self.message, self.cause = message, cause

    def getMessage(self) -> str | None:
        return self.message

    def getCause(self) -> _Throwable | None:
        return self.cause


class _Py4JError(Exception):
    """An exception with a Java exception behind it, as Py4J's ``Py4JJavaError``."""

    def __init__(self, text: str, java: _Throwable) -> None:
        super().__init__(text)
        self.java_exception = java


_WORKER = """An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/x/windowstore/spark/_udf.py", line 128, in _each
    raise invalid_row(e, table) from None
windowstore.exceptions.InvalidRecordError: windowstore: unusable row (null_key) {'u': None}
 SQLSTATE: 38000"""


@pytest.mark.parametrize(
    ("error", "want"),
    [
        # The innermost cause, or the one just outside it that only adds context.
        (_Py4JError("An error occurred while calling o137.parquet.\n: org.apache...", _Throwable(
            "Job aborted due to stage failure: Task 0 in stage 1.0 failed 1 times, most recent "
            'failure: Lost task 0.0: java.io.IOException: Cannot run program "./env/bin/python"'
            ": error=2, No such file or directory",
            _Throwable('Cannot run program "./env/bin/python": error=2, No such file or '
                       "directory", _Throwable("error=2, No such file or directory")))),
         'Cannot run program "./env/bin/python": error=2, No such file or directory (the '
         "workers' Python, from spark.pyspark.python or PYSPARK_PYTHON, is not there on the "
         "executors)"),
        # A Python worker's exception, from its traceback, through Python's chain.
        (_Py4JError("An error occurred while calling o93.parquet.", _Throwable(
            "[PYTHON_EXCEPTION] " + _WORKER.replace("\n", "\n", 1))),
         "InvalidRecordError: windowstore: unusable row (null_key) {'u': None}"),
        (_Py4JError("An error occurred while calling None.JavaSparkContext.", _Throwable(
            "Could not parse Master URL: 'bogus://x'")),
         "Could not parse Master URL: 'bogus://x' (a master URL is one of local, local[N], "
         "local[*]"),
        (RuntimeError("[PATH_NOT_FOUND] Path does not exist: file:/x.parquet. SQLSTATE: 42K03"),
         "Path does not exist: file:/x.parquet."),
        (RuntimeError(_WORKER.replace("InvalidRecordError: windowstore: unusable row (null_key) "
                                      "{'u': None}", "ModuleNotFoundError: No module named "
                                      "'windowstore'")),
         "ModuleNotFoundError: No module named 'windowstore' (the workers' Python lacks "
         "windowstore: set spark.pyspark.python to the Python"),
    ],
)  # fmt: skip
def test_a_failed_spark_call_is_named_by_its_root_cause(error: BaseException, want: str) -> None:
    found = root_cause(error)
    assert found.startswith(want), found
    assert "\n" not in found
    assert "SQLSTATE" not in found


def test_the_root_cause_is_found_through_pythons_chain() -> None:
    try:
        try:
            raise _Py4JError("An error occurred while calling o2.parquet.", _Throwable(
                "[PYTHON_EXCEPTION] " + _WORKER))  # fmt: skip
        except _Py4JError as inner:
            raise RuntimeError("An error occurred while calling o1.parquet.") from inner
    except RuntimeError as chained:
        found = root_cause(chained)
    assert found == "InvalidRecordError: windowstore: unusable row (null_key) {'u': None}"


def test_the_whole_trace_only_with_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        raise _Py4JError("An error occurred while calling o1.parquet.", _Throwable("boom"))
    except _Py4JError as e:
        show_trace(e, verbose=False)
        assert capsys.readouterr().err == ""
        show_trace(e, verbose=True)
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "o1.parquet" in err


def test_a_session_that_does_not_start_says_why() -> None:
    gateway = RuntimeError(
        "[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number."
    )
    message, code = start_failure(None, gateway)
    assert code == 1
    assert message.startswith("Spark did not start on local[*]: Java gateway process exited")
    assert "JAVA_HOME" in message
    master = _Py4JError("An error occurred while calling None.JavaSparkContext.", _Throwable(
        "Could not parse Master URL: 'x://y'"))  # fmt: skip
    message, code = start_failure("x://y", master)
    assert code == 2
    assert message.startswith("argument --master: Spark cannot start on 'x://y': Could not parse")
