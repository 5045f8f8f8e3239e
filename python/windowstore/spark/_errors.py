"""The root cause of a failed Spark job, in one line: what a user must read first.

A job that fails in a Python worker reaches the driver as a Py4J or PySpark exception whose text
is the JVM's stack trace wrapping the worker's Python traceback; the cause is the traceback's last
line (windowstore's own error, say). A job that fails in the JVM has its cause at the end of the
Java exception's chain (``Cannot run program "./environment/bin/python"``).
"""

from __future__ import annotations

import re

__all__ = ["root_cause"]

#: The last line of a Python traceback: ``module.ErrorClass: message``.
_PYTHON_ERROR = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|Spec)\b(?::.*)?$"
)
_TRACEBACK = "Traceback (most recent call last):"


def root_cause(exc: BaseException) -> str:
    """The root cause of ``exc`` (a failed Spark job, query or call) in one line.

    The Python worker's exception if a worker raised one (its type and message, as the last line
    of its traceback), else the innermost Java cause, else the exception's first line.

    Examples:
        >>> try:
        ...     sessions.write.parquet("out/")
        ... except Exception as e:
        ...     print(root_cause(e))
        windowstore.exceptions.InvalidRecordError: invalid record: ... key is null
    """
    texts = [*_java_chain(exc), *_captured_chain(exc), str(exc)]
    for text in texts:
        found = _python_error(text)
        if found is not None:
            return found
    for text in texts:
        line = _first_line(text)
        if line:
            return line
    return type(exc).__name__


def _python_error(text: str) -> str | None:
    """The exception line of the last Python traceback in ``text``, if it holds one."""
    at = text.rfind(_TRACEBACK)
    if at < 0:
        return None
    for line in text[at:].splitlines()[1:]:
        if _PYTHON_ERROR.match(line):
            return line.strip()
    return None


def _first_line(text: str) -> str:
    """The first line of ``text`` that says something (PySpark's texts open with blank lines)."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("JVM stacktrace"):
            return line
    return ""


def _java_chain(exc: BaseException) -> list[str]:
    """The texts of the Java exception behind ``exc`` and its causes, innermost first."""
    throwable = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    texts: list[str] = []
    seen = 0
    try:
        while throwable is not None and seen < 50:
            texts.append(str(throwable.toString()))
            throwable = throwable.getCause()
            seen += 1
    except Exception:  # a gateway that is gone, or an origin that is not a Java object
        pass
    return texts[::-1]


def _captured_chain(exc: BaseException) -> list[str]:
    """The descriptions of a PySpark captured exception's causes, innermost first."""
    texts: list[str] = []
    cause: object = getattr(exc, "_cause", None)
    while isinstance(cause, BaseException) and len(texts) < 50:
        texts.append(str(cause))
        cause = getattr(cause, "_cause", None)
    return texts[::-1]
