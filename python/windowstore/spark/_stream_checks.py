"""What a stream's definition checks against its DataFrame before the query exists: the time
column and the grace by the clock, the time column's type, and the core's duration rules against
it (``_stream`` calls them)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import LongType, TimestampType

from windowstore import _core
from windowstore._durations import (
    DurationLike,
    check_session_durations,
    check_sliding_durations,
    to_duration,
)
from windowstore.exceptions import InvalidWindowSpec, SchemaError
from windowstore.spark import _schema


def check_stream_time(
    df: DataFrame, time: str | None, grace: DurationLike | None, clock: str
) -> None:
    """A processing-time stream reads no time column and has no grace; an event-time stream
    needs its time column, a timestamp (Spark's watermark needs one)."""
    if clock == "processing":
        if time is not None:
            raise InvalidWindowSpec(
                f"invalid time: {time!r}; processing-time windows read no time column (a "
                "record's time is its micro-batch's processing time): leave time out",
                "time",
            )
        if grace is not None:
            raise InvalidWindowSpec(
                "invalid grace: processing-time records are never late (each arrives at its "
                "micro-batch's processing time), so there is no grace; leave it out",
                "grace",
            )
        return
    if time is None:
        raise InvalidWindowSpec(
            'invalid time: an event-time stream needs its time column (time="ts"); '
            'clock="processing" uses arrival times instead',
            "time",
        )
    dt = _schema.field(df, time).dataType
    if not isinstance(dt, TimestampType):
        hint = (
            " (convert epoch ticks with timestamp_millis/timestamp_micros)"
            if isinstance(dt, LongType)
            else ""
        )
        raise SchemaError(
            f'column "{time}": a stream needs a timestamp time column for Spark\'s watermark, '
            f"not {dt.simpleString()}{hint}",
            time,
        )


def check_durations(
    df: DataFrame,
    kind: str,
    time: str | None,
    params: dict[str, Any],
    grace: DurationLike | None,
    clock: str,
    idle_timeout: DurationLike | None,
) -> None:
    """The core's duration rules against the time column's Spark type, before the query is
    defined: a bare integer on a timestamp column is refused here, as in a batch job (the
    workers see epoch microseconds, an integer column, and could not tell)."""
    time_type = None if time is None else _schema.arrow_schema(df, [time]).field(time).type
    common: dict[str, Any] = {
        "time": time,
        "grace": 0 if grace is None else grace,
        "clock": clock,
        "idle_timeout": idle_timeout,
    }
    if kind == "sessions":
        check_session_durations(
            time_type,
            gap=params["gap"],
            gap_column=params["gap_column"],
            max_gap=params["max_gap"],
            max_duration=params["max_duration"],
            **common,
        )
        if time is not None and params["gap_column"] is not None:
            _check_gap_column(df, time, params["gap_column"], params["max_gap"])
    else:
        check_sliding_durations(time_type, time_difference=params["time_difference"], **common)


def _check_gap_column(
    df: DataFrame, time: str, gap_column: str, max_gap: DurationLike | None
) -> None:
    """The gap column's type beside the time column's, as the batch adapter checks it: the
    core's complete mode on an empty table of the two columns' Arrow types (an integer gap
    column next to a timestamp is refused, in Spark's terms: the workers, which see epoch
    microseconds, could not tell)."""
    _schema.in_spark_terms(
        df,
        _schema.arrow_schema(df, [time, gap_column]),
        lambda schema: _core.session_windows(
            schema.empty_table(),
            key=[time],
            time=time,
            time_unit=None,
            gap=None,
            gap_column=gap_column,
            max_gap=None if max_gap is None else to_duration(max_gap, "max_gap"),
            aggs=[],
            on_invalid="drop",
        ),
    )
