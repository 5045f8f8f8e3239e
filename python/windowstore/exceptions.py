"""The exceptions windowstore raises, all under
[`WindowStoreError`][windowstore.exceptions.WindowStoreError]."""

from __future__ import annotations

__all__ = [
    "AggregateFunctionError",
    "AggregateOverflowError",
    "ArrowError",
    "BatchTooLargeError",
    "InternalError",
    "InvalidRecordError",
    "InvalidWindowSpec",
    "ProcessorClosedError",
    "SchemaError",
    "SessionOverflowError",
    "SnapshotError",
    "StoreCapacityError",
    "WindowStoreError",
    "WorkerPythonError",
]


class WindowStoreError(Exception):
    """Base class of every error windowstore raises on purpose."""


class InvalidWindowSpec(WindowStoreError, ValueError):
    """A window or store parameter is out of its domain.

    Attributes:
        parameter: The public name of the parameter at fault (``"retention"``, ``"gap"``, ...).
    """

    def __init__(self, message: str, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


class SnapshotError(WindowStoreError):
    """A snapshot could not be written, or was refused on restore (truncated, altered, foreign).

    Attributes:
        path: The snapshot file.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class ProcessorClosedError(WindowStoreError):
    """A processor was called after `flush()` ended its input: it takes no more calls.

    Create a new processor for more input, or restore a snapshot taken before the flush. Its
    reads (`windows()`, `metrics()`, `to_bytes()`, ...) still work.

    Attributes:
        method: The method that was called (``"process"``, ``"flush"``, ``"poll"``,
            ``"advance"``).

    Example:
        >>> import pyarrow as pa
        >>> from windowstore import SessionWindowProcessor, agg
        >>> p = SessionWindowProcessor(key="k", time="t", gap=5, grace=0, aggs=[agg.count()])
        >>> _ = p.flush()
        >>> try:
        ...     p.flush()
        ... except ProcessorClosedError as e:
        ...     print(e.method)
        flush
    """

    def __init__(self, message: str, method: str | None = None) -> None:
        super().__init__(message)
        self.method = method


class StoreCapacityError(WindowStoreError):
    """A limit of the store's in-memory layout was reached (2^32 live keys, 4 GiB per segment)."""


class BatchTooLargeError(WindowStoreError):
    """One call's input or output exceeds a per-call limit (2^32 - 1 rows, 2 GiB of states).

    Split the input by key and make several calls.
    """


class ArrowError(WindowStoreError):
    """An Arrow operation failed while reading the input or building a result.

    The message carries Arrow's own error.

    Attributes:
        context: What windowstore was doing (``"building output"``, ``"reading the Arrow
            input"``, ...).
    """

    def __init__(self, message: str, context: str | None = None) -> None:
        super().__init__(message)
        self.context = context


class InternalError(WindowStoreError):
    """A bug in windowstore: an invariant did not hold, or the Rust core panicked.

    The call was stopped before the panic could reach Python. Please report it with the message.
    A processor or store whose state the failed call was changing refuses further calls.
    """


class SchemaError(WindowStoreError, ValueError):
    """An input column is missing or of a type the operation cannot use.

    Attributes:
        column: The column at fault, by its name in the input.
    """

    def __init__(self, message: str, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


class AggregateOverflowError(WindowStoreError, ArithmeticError):
    """An aggregate's exact value does not fit its output type (a decimal ``sum`` or ``mean``
    beyond 38 digits): raised, never wrapped or rounded away.

    Attributes:
        aggregate: The aggregate, as ``sum(column)``.
        column: The aggregated column.
        key: The key, rendered as ``column=value`` (None where the failing layer does not know it).
        start: The window start in ticks (with ``key``).
        end: The window end in ticks (with ``key``).
    """

    def __init__(
        self,
        message: str,
        aggregate: str | None = None,
        column: str | None = None,
        key: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> None:
        super().__init__(message)
        self.aggregate = aggregate
        self.column = column
        self.key = key
        self.start = start
        self.end = end


class SessionOverflowError(WindowStoreError):
    """A ``collect(..., overflow="fail")`` exceeded its ``max_size``, in a window of any kind.

    Attributes:
        key: The key, rendered as ``column=value``.
        start: The window start in ticks.
        end: The window end in ticks.
    """

    def __init__(
        self, message: str, key: str | None = None, start: int | None = None, end: int | None = None
    ) -> None:
        super().__init__(message)
        self.key = key
        self.start = start
        self.end = end


class InvalidRecordError(WindowStoreError, ValueError):
    """A record could not be used and ``on_invalid="error"`` was asked for.

    Nothing of the call's input was applied.

    Attributes:
        row: The row number in the whole input of the call (all chunks of a table).
        reason: ``null_key``, ``null_time``, ``invalid_gap`` or ``time_overflow``.
    """

    def __init__(self, message: str, row: int | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.row = row
        self.reason = reason


class AggregateFunctionError(WindowStoreError):
    """A user-defined aggregate (``agg.udf``) raised, or returned a value its ``returns`` type
    cannot hold. The call changed nothing; the function's exception is the ``__cause__``.

    Attributes:
        aggregate: The aggregate's output name.
        key: The window's key values, by column.
        start: The window start, as in the output.
        end: The window end, as in the output.
    """

    def __init__(
        self,
        message: str,
        aggregate: str,
        key: dict[str, object] | None = None,
        start: object = None,
        end: object = None,
    ) -> None:
        super().__init__(message)
        self.aggregate = aggregate
        self.key = key
        self.start = start
        self.end = end


class WorkerPythonError(WindowStoreError, RuntimeError):
    """Spark's Python workers would run an interpreter that cannot import windowstore.

    Raised on the driver by ``windowstore.spark`` before any job, naming the interpreter and how
    to choose another (``PYSPARK_PYTHON``, or ``spark.archives`` and ``spark.pyspark.python`` on
    a cluster).
    """
