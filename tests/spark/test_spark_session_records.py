"""Sessions tagged on rows (``output="records"``) on real Spark: batch and Structured Streaming
(both state store providers, a restart from the checkpoint while rows are held), against a
brute-force model and the complete-data engine; rows with struct, list and map columns."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import windowstore
from windowstore import InvalidWindowSpec, SchemaError, agg
from windowstore.spark import session_windows

from .conftest import to_spark
from .streams import (
    BASE_S,
    GRACE,
    SENTINEL,
    events,
    read_stream,
    to_memory,
    to_parquet,
    write_files,
)

pytestmark = pytest.mark.spark

TAGS = ["session_start", "session_end", "session_id"]
GAP_S = 30
#: The streaming tests' events with a row number and columns of every nested kind.
STREAM_SCHEMA = (
    "k string, ts timestamp, x long, g long, i long, p struct<a:long,b:string>, tags array<long>"
)


def model(rows: list[dict[str, Any]], key: list[str], gap: Any) -> dict[int, tuple[Any, Any]]:
    """Row number -> (session_start, session_end) by the definition: per key, in time order,
    a row further than the gap from the previous one starts a new session."""
    by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        by_key.setdefault(tuple(r[k] for k in key), []).append(r)
    out = {}
    for group in by_key.values():
        group.sort(key=lambda r: (r["ts"], r["i"]))
        sessions: list[list[dict[str, Any]]] = []
        for r in group:
            if sessions and r["ts"] - sessions[-1][-1]["ts"] <= gap:
                sessions[-1].append(r)
            else:
                sessions.append([r])
        for s in sessions:
            out.update({r["i"]: (s[0]["ts"], s[-1]["ts"]) for r in s})
    return out


def assert_model(tagged: pa.Table, rows: list[dict[str, Any]], key: list[str], gap: Any) -> None:
    """Every row of ``rows`` once in ``tagged``, unchanged, with the model's session."""
    got = {r["i"]: r for r in tagged.to_pylist()}
    assert len(got) == tagged.num_rows == len(rows)
    want = model(rows, key, gap)
    for r in rows:
        g = got[r["i"]]
        assert {c: g[c] for c in r} == r
        assert (g["session_start"], g["session_end"]) == want[r["i"]]


def by_row(t: pa.Table) -> pa.Table:
    return t.sort_by([("i", "ascending")])


def batch_table(n: int, seed: int) -> pa.Table:
    """Random rows: a two-column key (one with nulls), timestamps, and struct, list and map
    columns the engine never reads."""
    rng = random.Random(seed)
    users = [None if rng.random() < 0.05 else rng.choice("abcdefgh") for _ in range(n)]
    return pa.table(
        {
            "user": pa.array(users, pa.string()),
            "dev": pa.array([rng.randrange(3) for _ in range(n)], pa.int32()),
            "ts": pa.array(
                [rng.randrange(0, 3_600_000_000) for _ in range(n)], pa.timestamp("us", "UTC")
            ),
            "i": pa.array(range(n), pa.int64()),
            "p": pa.array([{"a": i, "b": f"r{i}"} for i in range(n)]),
            "tags": pa.array([list(range(i % 3)) for i in range(n)], pa.list_(pa.int64())),
            "m": pa.array([[("n", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        }
    )


def test_batch_tags_every_row_as_the_model_and_the_complete_engine(spark: SparkSession) -> None:
    table = batch_table(4_000, seed=1)
    kw: dict[str, Any] = dict(key=["user", "dev"], time="ts", gap="2m", on_invalid="drop")
    tagged, rejected = session_windows(
        to_spark(spark, table), **kw, output="records", return_rejected=True
    )
    assert tagged.columns == [*table.column_names, *TAGS]
    assert dict(tagged.dtypes)["session_start"] == "timestamp"
    got, lost = by_row(tagged.toArrow()), by_row(rejected.toArrow())
    want = windowstore.session_windows(table, **kw, output="records")
    assert got.num_rows > 3_000
    # The same rows, columns, types and session ids as the complete-data engine.
    assert got.to_pylist() == by_row(want).to_pylist()
    assert got.schema.field("m").type == table.schema.field("m").type
    assert lost["reason"].to_pylist() == ["null_key"] * lost.num_rows
    assert sorted(got["i"].to_pylist() + lost["i"].to_pylist()) == list(range(table.num_rows))
    accepted = [r for r in table.to_pylist() if r["user"] is not None]
    assert_model(got, accepted, ["user", "dev"], pd.Timedelta(minutes=2).to_pytimedelta())


def test_batch_integer_times_and_spark_aggregates_of_the_tagged_rows(spark: SparkSession) -> None:
    table = batch_table(2_000, seed=2).drop_columns("m")
    table = table.set_column(2, "ts", table["ts"].cast(pa.int64()))
    df = to_spark(spark, table.filter(table["user"].is_valid()))
    tagged = session_windows(df, key="user", time="ts", gap=60_000_000, output="records")
    assert dict(tagged.dtypes)["session_end"] == "bigint"
    assert_model(tagged.toArrow(), df.toArrow().to_pylist(), ["user"], 60_000_000)
    # Any Spark aggregation applies to the sessions.
    ours = (
        tagged.groupBy("user", "session_start", "session_end")
        .agg(F.count("*").alias("count"), F.sum("i").alias("sum_i"))
        .toArrow()
    )
    windows = session_windows(
        df, key="user", time="ts", gap=60_000_000, aggs=[agg.count(), agg.sum("i")]
    ).toArrow()
    order = [("user", "ascending"), ("session_start", "ascending")]
    assert ours.sort_by(order).to_pylist() == windows.sort_by(order).to_pylist()


def test_batch_refusals_name_the_parameter_or_column(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 0, 1)], "k string, t long, session_id long")
    with pytest.raises(SchemaError) as info:
        session_windows(df, key="k", time="t", gap=10, output="records")
    assert info.value.column == "session_id"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"output": "records", "aggs": [agg.count()]}, "aggs"),
        ({"output": "rows"}, "output"),
    ]
    for kwargs, parameter in cases:
        with pytest.raises(InvalidWindowSpec) as e:
            session_windows(df, key="k", time="t", gap=10, **kwargs)
        assert e.value.parameter == parameter


# --- Structured Streaming ----------------------------------------------------------------------


def stream_frames(seed: int) -> list[pd.DataFrame]:
    """The streaming tests' events (out of order within the grace; a sentinel far ahead at the
    end closes every other session) with a row number, a struct and a list column."""
    frames = events(seed=seed)
    out, i = [], 0
    for frame in frames:
        n = len(frame)
        ids = list(range(i, i + n))
        i += n
        out.append(
            frame.assign(
                i=ids,
                p=[{"a": j * 2, "b": f"s{j}"} for j in ids],
                tags=[list(range(j % 3)) for j in ids],
            )
        )
    return out


def start(spark: SparkSession, source: Path, sink: Path, checkpoint: Path) -> Any:
    tagged = session_windows(
        read_stream(spark, source, STREAM_SCHEMA),
        key="k", time="ts", gap=f"{GAP_S}s", grace=GRACE, output="records",
    )  # fmt: skip
    return to_parquet(tagged, sink, checkpoint, availableNow=True)


def test_stream_equals_the_batch_and_survives_a_restart(
    spark: SparkSession, provider: str, tmp_path: Path
) -> None:
    frames = stream_frames(seed=7)
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "checkpoint"
    write_files(frames[:5], source)
    start(spark, source, sink, checkpoint).awaitTermination()
    first = spark.read.parquet(str(sink)).count()
    # The restart continues with the rows the state holds for sessions still open.
    write_files(frames[5:], source, first=5)
    query = start(spark, source, sink, checkpoint)
    query.awaitTermination()
    got = by_row(spark.read.parquet(str(sink)).toArrow())

    every = pd.concat(frames, ignore_index=True)
    every = every[every["k"] != SENTINEL]
    batch = session_windows(
        spark.createDataFrame(every, STREAM_SCHEMA),
        key="k", time="ts", gap=f"{GAP_S}s", output="records",
    ).toArrow()  # fmt: skip
    assert 0 < first < got.num_rows == len(every)
    assert got.column_names == [*every.columns, *TAGS]
    assert got.to_pylist() == by_row(batch).to_pylist()
    inputs = pa.Table.from_pandas(every, preserve_index=False).to_pylist()
    assert_model(got, inputs, ["k"], pd.Timedelta(GAP_S, "s"))
    rows = [p["observedMetrics"]["windowstore"]["windows"] for p in query.recentProgress]
    assert sum(rows) == len(every) - first


def test_stream_rejected_rows_complete_the_input(spark: SparkSession, tmp_path: Path) -> None:
    base = pd.Timestamp(BASE_S, unit="s", tz="UTC")
    files: list[list[tuple[str | None, int]]] = [
        [("a", 0), ("b", 0), ("a", 10)],
        [("a", 100), ("a", -50), (None, 1), ("b", 101)],  # -50: late (grace 20 s); None: null
        [("c", 500), (SENTINEL, 10_000)],
    ]
    frames, i = [], 0
    for rows in files:
        frame = pd.DataFrame(rows, columns=["k", "s"])
        ts = (base + pd.to_timedelta(frame["s"], unit="s")).astype("datetime64[us, UTC]")
        ids = list(range(i, i + len(rows)))
        i += len(rows)
        frames.append(
            pd.DataFrame(
                {
                    "k": frame["k"],
                    "ts": ts,
                    "x": ids,
                    "g": 0,
                    "i": ids,
                    "p": [{"a": j, "b": f"s{j}" if j else None} for j in ids],
                    "tags": [[j] for j in ids],
                }
            )
        )
    write_files(frames, tmp_path / "in")
    tagged, rejected = session_windows(
        read_stream(spark, tmp_path / "in", STREAM_SCHEMA), key="k", time="ts", gap="30s",
        grace=GRACE, on_invalid="drop", return_rejected=True, output="records",
    )  # fmt: skip
    to_memory({"records_tagged": tagged, "records_rejected": rejected}, tmp_path)
    got = by_row(spark.table("records_tagged").toArrow())
    lost = by_row(spark.table("records_rejected").toArrow())
    assert [(r["i"], r["reason"]) for r in lost.to_pylist()] == [(4, "late"), (5, "null_key")]
    assert lost.column_names == [*frames[0].columns, "reason"]
    # Every input row is tagged or rejected, once; only the sentinel's session stays open.
    assert sorted(got["i"].to_pylist() + lost["i"].to_pylist() + [i - 1]) == list(range(i))
    sessions = {r["i"]: (r["k"], r["session_start"], r["session_end"]) for r in got.to_pylist()}
    at = {s: (base + pd.Timedelta(s, "s")).to_pydatetime() for s in (0, 10, 100, 101, 500)}
    assert sessions == {
        0: ("a", at[0], at[10]), 2: ("a", at[0], at[10]), 1: ("b", at[0], at[0]),
        3: ("a", at[100], at[100]), 6: ("b", at[101], at[101]), 7: ("c", at[500], at[500]),
    }  # fmt: skip
    assert got["p"].to_pylist()[0] == {"a": 0, "b": None}
    id_of = dict(zip(got["i"].to_pylist(), got["session_id"].to_pylist(), strict=True))
    assert id_of[0] == id_of[2] != id_of[3]


def test_a_stream_of_records_needs_final_emit(spark: SparkSession, tmp_path: Path) -> None:
    write_files(stream_frames(seed=1)[:1], tmp_path / "in")
    df: DataFrame = read_stream(spark, tmp_path / "in", STREAM_SCHEMA)
    with pytest.raises(InvalidWindowSpec) as e:
        session_windows(df, key="k", time="ts", gap="30s", grace="10s", emit="updates",
                        output="records")  # fmt: skip
    assert e.value.parameter == "output"
