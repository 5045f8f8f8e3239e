"""The exceptions windowstore raises, all under :class:`WindowStoreError`."""

from __future__ import annotations

__all__ = [
    "InvalidWindowSpec",
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
