"""Records behind Spark's watermark reach windowstore, with both state store providers: Spark's
stateful operators drop the input rows whose watermarked column is at or below the watermark,
but windowstore's lateness is its own (stream time is the watermark plus the delay; a record is
late only if it would change a closed window). A streaming query gives what the processor gives
for the same micro-batches, and every record the processor rejects is in the rejected output
and the metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from windowstore import SessionWindowProcessor, SlidingWindowProcessor, agg
from windowstore.spark import metrics, session_windows, sliding_windows

from .streams import read_stream, to_memory, write_files

pytestmark = pytest.mark.spark

BASE_MS = 1_700_000_000_000
GRACE = "1s"
#: Offsets from BASE_MS (ms), one list per micro-batch. Spark filters a micro-batch's input with
#: the watermark of the micro-batch before it, so the records behind the watermark (199 s from the
#: first micro-batch on) come two micro-batches after it. In the third, a@120 would change a's
#: closed session [100, 100] (late); a@185 starts a session whose reach (215 s) is still open, and
#: b@195 joins b's open session. The last micro-batch closes every window but its own.
BATCHES = [
    [("a", 100_000), ("b", 200_000)],
    [("c", 200_000)],
    [("a", 120_000), ("a", 185_000), ("b", 195_000)],
    [("~end", 86_400_000)],
]
#: Each window kind: the Spark adapter, the processor, their shared keywords, the window columns.
KINDS: dict[str, tuple[Any, Any, dict[str, Any], list[str]]] = {
    "sessions": (
        session_windows,
        SessionWindowProcessor,
        {"gap": "30s"},
        ["session_start", "session_end"],
    ),
    "sliding": (
        sliding_windows,
        SlidingWindowProcessor,
        {"time_difference": "30s"},
        ["window_start", "window_end", "window_time"],
    ),
}


def frame(rows: list[tuple[str, int]]) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=["k", "ts"])
    ts = pd.to_datetime(out["ts"] + BASE_MS, unit="ms", utc=True)
    return out.assign(ts=ts.astype("datetime64[us, UTC]"))


def expected(processor: Any) -> tuple[set[tuple[Any, ...]], list[tuple[str, int]], int]:
    """The processor's closed windows, rejected records (key, offset) and how many records
    behind Spark's watermark it accepted, over BATCHES: each micro-batch in time order, after
    stream time reached the watermark plus the delay (the largest time of the batches before).
    Times in microseconds, as the Spark adapter runs the engine (a sliding window starts 1 us
    after a record)."""
    windows: set[tuple[Any, ...]] = set()
    rejected: list[tuple[str, int]] = []
    behind = 0
    seen: int | None = None
    for rows in BATCHES:
        if seen is not None:
            windows |= {tuple(r.values()) for r in processor.advance(seen * 1000).to_pylist()}
        ts = [t * 1000 for _, t in rows]
        table = pa.table({"k": [k for k, _ in rows], "ts": ts}).sort_by("ts")
        windows |= {tuple(r.values()) for r in processor.process(table).to_pylist()}
        late = sorted((r["k"], r["ts"] // 1000) for r in processor.rejected().to_pylist())
        if seen is not None:
            # Spark's watermark is the largest time so far less the grace (1 s).
            behind += sum(1 for row in rows if row[1] <= seen - 1_000 and row not in late)
        rejected += late
        seen = max(t for _, t in rows) if seen is None else max(seen, *(t for _, t in rows))
    return windows, rejected, behind


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_records_behind_the_watermark_are_judged_by_windowstore(
    spark: SparkSession, provider: str, kind: str, tmp_path: Path
) -> None:
    adapter, processor_class, kwargs, bounds = KINDS[kind]
    want, want_rejected, behind = expected(
        processor_class(
            key="k", time="ts", time_unit="us", grace=GRACE, aggs=[agg.count()], **kwargs
        )
    )
    assert behind > 0  # records behind the watermark that windowstore accepts
    write_files([frame(rows) for rows in BATCHES], tmp_path / "in")
    name = f"drops_{kind}_{provider}"
    windows, rejected = adapter(
        read_stream(spark, tmp_path / "in", "k string, ts timestamp"),
        key="k", time="ts", grace=GRACE, aggs=[agg.count()], return_rejected=True,
        name=name, **kwargs,
    )  # fmt: skip
    queries = to_memory({name: windows, f"{name}_rejected": rejected}, tmp_path)
    times = ", ".join(f"unix_micros({c}) - {BASE_MS * 1000}" for c in bounds)
    got = {tuple(r) for r in spark.sql(f"select k, {times}, count from {name}").collect()}
    got_rejected = spark.sql(
        f"select k, unix_millis(ts) - {BASE_MS}, reason from {name}_rejected order by 2"
    ).collect()
    dropped = [
        op["numRowsDroppedByWatermark"]
        for q in queries
        for p in q.recentProgress
        for op in p["stateOperators"]
    ]
    late = sum(metrics(p, name).get("rejected_late", 0) for p in queries[0].recentProgress)
    assert (got, sorted(dropped)[-1:]) == (want, [0])
    assert [(r[0], r[1]) for r in got_rejected] == want_rejected
    assert {r[2] for r in got_rejected} <= {"late"}
    assert late == len(want_rejected)
