"""The cause of a failed Spark job or call in one line, in the user's terms.

It is the innermost meaningful message of the exception's chain (Python's causes, the Java
exception's causes through Py4J, a Python worker's traceback), without Spark's wrappers (``An
error occurred while calling o137.parquet.``, ``Job aborted due to stage failure``, error
classes, ``SQLSTATE``); and, for a cause whose fix is known, what to do."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MASTER_FORMS", "root_cause"]

#: The master URLs Spark accepts, as the errors list them.
MASTER_FORMS = (
    "local, local[N], local[*], local[N,MAX_FAILURES], spark://HOST:PORT, yarn or "
    "k8s://https://HOST:PORT"
)

#: The last line of a Python traceback: ``module.Name: message``.
_RAISED = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*): (.*)$")
#: Spark's decorations of a message: its error class and its SQL state.
_CONDITION = re.compile(r"^\[[A-Z0-9_.]+\] ")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\.?\s*$")

#: How a wrapper's message ends where it quotes its cause: the cause's class name.
_WRAPPER = re.compile(r"(Exception|Error|Throwable)\s*:\s*$")

#: Causes whose fix is known, and what to say after them.
_HINTS = [
    (re.compile(r'Cannot run program "[^"]*python'),
     "the workers' Python, from spark.pyspark.python or PYSPARK_PYTHON, is not there on the "
     "executors"),
    (re.compile(r"Could not parse Master URL"), f"a master URL is one of {MASTER_FORMS}"),
    (re.compile(r"Java gateway process exited"),
     "Spark's JVM did not start: Java 17 or later on PATH or in JAVA_HOME, and the session's "
     "settings, are the usual causes; the lines above are its own"),
    (re.compile(r"No module named '(windowstore|pyarrow)"),
     "the workers' Python lacks windowstore: set spark.pyspark.python to the Python of an "
     "environment that has it (on a cluster, ship one with spark.archives)"),
]  # fmt: skip


def _java_messages(e: BaseException) -> list[str]:
    """The messages of the Java exception behind ``e`` (Py4J's ``java_exception``, or a
    captured exception's origin) and of its causes, outermost first; none for Spark Connect
    or when the JVM is gone."""
    throwable: Any = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
    messages: list[str] = []
    try:
        while throwable is not None and len(messages) < 20:
            message = throwable.getMessage()
            messages.append(str(message) if message is not None else "")
            throwable = throwable.getCause()
    except Exception:  # the gateway closed: keep what was read
        pass
    return messages


def _chain(e: BaseException) -> list[str]:
    """Every message of ``e``'s chain, outermost first: Python's, each followed by its Java
    exception's."""
    messages: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = e
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        messages.append(str(current))
        messages.extend(_java_messages(current))
        current = current.__cause__ or current.__context__
    return messages


def _raised(text: str) -> str | None:
    """The exception a Python traceback in ``text`` ends with (``Name: message``), without its
    module path; ``None`` if ``text`` holds no traceback."""
    _, found, rest = text.rpartition("Traceback (most recent call last):")
    if not found:
        return None
    last = None
    for line in rest.splitlines():
        match = _RAISED.match(line.rstrip())
        if match and not line[:1].isspace():
            last = f"{match[1]}: {match[2]}"
    return last


def _clean(message: str) -> str:
    """``message`` without Spark's error class and SQL state, on one line."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    return _SQLSTATE.sub("", _CONDITION.sub("", first)).strip()


def _adds_context(outer: str, inner: str) -> bool:
    """Whether ``outer`` is ``inner`` with context (``Cannot run program "x": `` before
    ``error=2, ...``) rather than a wrapper naming it as its cause (``... failure: Lost task
    0.0 ...: java.io.IOException: ...``)."""
    at = outer.find(inner)
    return at >= 0 and not _WRAPPER.search(outer[:at])


def root_cause(e: BaseException, *, hint: bool = True) -> str:
    """The innermost meaningful message of a failed Spark call, on one line, with what to do
    when that is known.

    A Python worker's exception wins (``InvalidRecordError: windowstore: unusable row ...``);
    else the innermost Java cause, or the cause just outside it when that one only adds
    context (``Cannot run program "python3": error=2, No such file or directory`` rather than
    ``error=2, No such file or directory``). ``hint=False`` leaves out what to do, for a
    caller that says it in its own words.

    Example:
        >>> root_cause(RuntimeError("[PATH_NOT_FOUND] Path does not exist: x. SQLSTATE: 42K03"))
        'Path does not exist: x.'
    """
    messages = [m for m in _chain(e) if m.strip()]
    found = None
    for message in reversed(messages):
        found = _raised(message)
        if found:
            break
    if found is None and messages:
        i = len(messages) - 1
        while i > 0 and _adds_context(messages[i - 1], messages[i].strip()):
            i -= 1
        found = _clean(messages[i])
    found = found or type(e).__name__
    for pattern, advice in _HINTS if hint else ():
        if pattern.search(found):
            return f"{found} ({advice})"
    return found
