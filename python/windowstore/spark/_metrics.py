"""windowstore's observed metrics in a streaming query's progress, as a plain dict, read the same
way from classic Spark and from Spark Connect.

Classic Spark gives each observed metric of a progress as a row of named fields; Spark Connect,
which rebuilds the progress from its JSON on the client, gives a row of two fields, ``values``
and ``schema`` (so ``progress["observedMetrics"][name]["windows"]`` raises there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["metrics"]


class StreamingQueryLike(Protocol):
    """A streaming query, classic or Spark Connect: what :func:`metrics` reads of it."""

    @property
    def lastProgress(self) -> Mapping[str, Any] | None: ...

    @property
    def recentProgress(self) -> Sequence[Mapping[str, Any]]: ...


def metrics(
    source: StreamingQueryLike | Mapping[str, Any], name: str = "windowstore"
) -> dict[str, int]:
    """windowstore's counts of a streaming query's latest micro-batch, or of one progress.

    Works on classic and Spark Connect queries alike. The counts are those of the windows
    query named ``name`` (the ``name=`` of
    [`session_windows`][windowstore.spark.session_windows] and
    [`sliding_windows`][windowstore.spark.sliding_windows]): ``windows`` and
    ``rejected_<reason>`` for each reason (``late``, ``null_key``, ``null_time``,
    ``invalid_gap``, ``time_overflow``), each for one micro-batch.

    Args:
        source: a streaming query (its latest micro-batch's progress is read: the last
            progress, or the newest of ``recentProgress`` that carries the counts, since the
            progress updates of an idle query carry none), or one progress (an item of
            ``query.recentProgress``, or a listener event's ``progress``).
        name: the windows' ``name=``.

    Returns:
        The counts by name, or an empty dict when no micro-batch has reported them yet.

    Examples:
        >>> from windowstore.spark import metrics
        >>> metrics(query)["windows"]
        12
        >>> sum(metrics(p)["rejected_late"] for p in query.recentProgress)
        0
    """
    if isinstance(source, Mapping):
        return _of_progress(source, name)
    found = _of_progress(source.lastProgress, name)
    if found:
        return found
    for progress in reversed(source.recentProgress):
        found = _of_progress(progress, name)
        if found:
            return found
    return {}


def _of_progress(progress: Mapping[str, Any] | None, name: str) -> dict[str, int]:
    observed = (progress or {}).get("observedMetrics") or {}
    row = observed.get(name)
    if row is None:
        return {}
    fields = _fields(row)
    if set(fields) == {"values", "schema"}:
        # Spark Connect: the values in the order of the schema's fields.
        schema = _fields(fields["schema"])
        names = [_fields(f)["name"] for f in schema["fields"]]
        fields = dict(zip(names, fields["values"], strict=True))
    return {k: int(v) for k, v in fields.items()}


def _fields(value: Any) -> dict[str, Any]:
    """A row (pyspark's ``Row``) or a mapping as a dict of its fields."""
    if isinstance(value, Mapping):
        return dict(value)
    as_dict = getattr(value, "asDict", None)
    if as_dict is None:
        raise TypeError(f"not a row of observed metrics: {value!r}")
    result: dict[str, Any] = as_dict()
    return result
