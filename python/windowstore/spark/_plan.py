"""Pieces shared by the Spark window functions: argument checks and the shuffle by key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypedDict

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from windowstore import _processor
from windowstore._clock import Clock
from windowstore._durations import DurationLike
from windowstore.agg import Agg
from windowstore.exceptions import InvalidWindowSpec

__all__ = [
    "SparkOptions",
    "batch_time",
    "by_key",
    "check_aggs",
    "check_on_invalid",
    "check_stream_options",
    "column",
    "positive_int",
    "project",
]


class SparkOptions(TypedDict, total=False):
    """The keyword arguments the Spark window functions add to the local ones', alike in every
    overload (most for streams only)."""

    partitions: int | None
    grace: DurationLike | None
    emit: Literal["final", "updates"]
    buckets: int | None
    name: str | None
    clock: Clock
    idle_timeout: DurationLike | None


def column(name: str) -> Column:
    """The column ``name`` taken literally (dots and spaces are part of the name)."""
    return F.col("`" + name.replace("`", "``") + "`")


def project(df: DataFrame, names: Sequence[str]) -> DataFrame:
    """Only the columns the engine reads: less to send from the JVM to Python."""
    return df.select(*[column(n) for n in names])


def by_key(df: DataFrame, key: Sequence[str], partitions: int | None) -> DataFrame:
    """``df`` hash-partitioned by the key columns, so that each key lives in one partition."""
    if partitions is None:
        return df.repartition(*[column(k) for k in key])
    return df.repartition(positive_int(partitions, "partitions"), *[column(k) for k in key])


def positive_int(value: object, parameter: str) -> int:
    """``value`` if it is a positive int (not a bool), else an error naming ``parameter``."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidWindowSpec(
            f"invalid {parameter}: must be a positive int, got {value!r}", parameter
        )
    return value


def check_aggs(aggs: Sequence[Agg]) -> list[Agg]:
    """The local API's check (`windowstore._processor.check_aggs`), failing as every Spark
    parameter check does: an `InvalidWindowSpec` naming ``aggs``."""
    try:
        return _processor.check_aggs(aggs)
    except TypeError as e:
        raise InvalidWindowSpec(f"invalid aggs: {e}", "aggs") from None


def check_on_invalid(on_invalid: str) -> str:
    """``on_invalid`` if it is ``"error"`` or ``"drop"``."""
    if on_invalid not in ("error", "drop"):
        raise InvalidWindowSpec(
            f'invalid on_invalid: {on_invalid!r}; expected "error" or "drop"', "on_invalid"
        )
    return on_invalid


def batch_time(
    time: str | None,
    *,
    emit: str,
    grace: DurationLike | None,
    clock: str,
    idle_timeout: DurationLike | None,
    buckets: int | None,
    name: str | None,
) -> str:
    """The time column of a batch DataFrame, its options checked. A batch has complete data and
    no wall clock: its windows are final event-time windows, with no lateness, never idle, no
    state and no progress metrics; each streaming option is refused, naming it."""
    batch = "a batch DataFrame"
    streaming_only = (
        (
            "clock",
            clock != "event",
            f"{clock!r} needs a streaming DataFrame (a batch DataFrame's records have no arrival "
            'time); batch windows are event-time windows (clock="event")',
        ),
        (
            "idle_timeout",
            idle_timeout is not None,
            "needs a streaming DataFrame; a batch DataFrame is complete data, whose windows all "
            "come out",
        ),
        (
            "emit",
            emit != "final",
            f"{emit!r} needs a streaming DataFrame; a batch DataFrame gives the final windows "
            '(emit="final")',
        ),
        (
            "grace",
            grace is not None,
            f"needs a streaming DataFrame; {batch} is complete data, where no record is late: "
            "leave grace out",
        ),
        (
            "buckets",
            buckets is not None,
            f"needs a streaming DataFrame (it sets the state's buckets); {batch} keeps no state: "
            "partitions= sets the shuffle's partitions",
        ),
        (
            "name",
            name is not None,
            f"needs a streaming DataFrame (it names the observed metrics in a query's progress); "
            f"{batch} has no query progress",
        ),
    )
    for parameter, given, why in streaming_only:
        if given:
            raise InvalidWindowSpec(f"invalid {parameter}: {why}", parameter)
    if time is None:
        raise InvalidWindowSpec('invalid time: a batch needs its time column (time="ts")', "time")
    return time


def check_stream_options(*, partitions: int | None, time_unit: str | None) -> None:
    """Refuses the batch-only options on a stream, naming each."""
    batch_only = (
        (
            "partitions",
            partitions is not None,
            "a streaming DataFrame's keys are hashed into buckets= of state (its shuffle has "
            "spark.sql.shuffle.partitions partitions, fixed by the checkpoint)",
        ),
        (
            "time_unit",
            time_unit is not None,
            "a streaming DataFrame's time column is a timestamp (Spark's watermark needs one), "
            "whose unit is known",
        ),
    )
    for parameter, given, why in batch_only:
        if given:
            raise InvalidWindowSpec(
                f"invalid {parameter}: batch DataFrames only; {why}: leave it out", parameter
            )
