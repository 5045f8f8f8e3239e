"""The exceptions windowstore raises, all under :class:`WindowStoreError`."""

from __future__ import annotations

__all__ = [
    "InvalidRecordError",
    "InvalidWindowSpec",
    "SchemaError",
    "SessionOverflowError",
    "SnapshotError",
    "StoreCapacityError",
    "WindowStoreError",
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


class StoreCapacityError(WindowStoreError):
    """A limit of the store's in-memory layout was reached (2^32 live keys, 4 GiB per segment)."""


class SchemaError(WindowStoreError, ValueError):
    """An input column is missing or of a type the operation cannot use.

    Attributes:
        column: The column at fault, by its name in the input.
    """

    def __init__(self, message: str, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


class SessionOverflowError(WindowStoreError):
    """A ``collect(..., overflow="fail")`` exceeded its ``max_size``.

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

    Nothing of the call's input was applied. Attributes:
        row: The row number in the whole input of the call (all chunks of a table).
        reason: ``null_key``, ``null_time``, ``invalid_gap`` or ``time_overflow``.
    """

    def __init__(self, message: str, row: int | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.row = row
        self.reason = reason
