"""Session windows in a stream: windowstore beside Apache Flink itself, on the same clickstream.

The data: benches/bench_sessions.py's clickstream (`windowstore.clickstream`, --events over
--users Zipf users) in arrival order: --delayed of the records delayed within the grace by
bench_sessions' `delayed` (10% by default, as its streaming part), and --late of them delayed
further, beyond the grace (none by default). Gap 30 minutes and grace 5 minutes, bench_sessions'.
It is written once, untimed, as CSV (`user_id,ts,amount`, ts epoch milliseconds): one file in
arrival order; for Flink at parallelism P > 1, P files dealt round-robin from that order (one per
source reader: Flink does not split a CSV file, and reads the files of a folder in no set order,
so one folder of ordered chunks would not be a stream in order); for Spark, --spark-files chunks
of the arrival order, one micro-batch each.

Contenders, each timed end to end from the CSV on disk to the sessions in hand as Arrow, count,
sum, min and max of `amount`, final sessions only, taking turns --repeat times:

- windowstore: `SessionWindowProcessor` (gap, grace, emit="final") fed the file read by pyarrow on
  one thread, in calls of --batch-rows records, then `flush()`; one core.
- Flink (PyPI `apache-flink`, --flink-version, in a virtual environment of its own, created once
  and cached: PyFlink pins its own pyarrow and py4j): a streaming job (batch mode refuses session
  windows) over the filesystem connector's CSV source, `ts` as an event-time attribute with a
  watermark per record, the SQL `SESSION` window table function partitioned by user, into a CSV
  filesystem sink that is read back; --parallelism 1 and 2. Its time is from the job's submission
  to the sink read back: planning, the local mini-cluster's start, the job (its own net runtime is
  printed beside), the files. Not in it: the JVM's start and the first job of that JVM (class
  loading, code generation), which run once before and are printed apart.
- windowstore.spark: `session_windows` on a Structured Streaming CSV file source (one file per
  micro-batch, then a sentinel file of one record ten days later that closes every session, as in
  benches/bench_spark_streaming.py), into a Parquet sink read back; Spark's default state store
  provider and RocksDB. Its time is from the query's definition to the sink read back, every
  micro-batch in it. Spark's session (the JVM) starts once, untimed, and each provider runs a
  small query first, untimed.

Watermark. Flink's session window is [first, last + gap), closed once the watermark (the largest
time read minus the delay) reaches last + gap - 1; windowstore's session [first, last] closes once
stream time passes last + gap + grace. A watermark delay of grace + 2 ms closes them at the same
record, so that the two decide lateness alike; --flink-delay-ms sets another delay.

Checks, before any figure. What a contender lost is, per user, the input's records minus the
sum of its sessions' counts (Flink drops late records without a trace; windowstore's processor
must have rejected exactly that many, and windowstore.spark too, plus what Spark's operator
dropped below its watermark before windowstore saw them, from the query's progress). A user all
of whose records arrived within the grace (time >= the stream time of the one file's order minus
the grace; every other reader's stream time is lower) can have no record late in any engine: every
contender must lose none of them and give complete mode's sessions over all records, key, start,
end (Flink's mapped to window_end - gap), count, min and max exactly, sum to 1e-9 relative. With
--late 0 that is every user. The users with a record beyond the grace are printed apart: records
lost; users who lost none but whose sessions are split (a record that reaches a closed session no
longer held opens a new one: in windowstore once the session has left the store after its
retention, docs/semantics.md section 2 rule 6, in Flink once its window fired); and, of the users
who lost nothing in either, how many differ from the processor's. At Flink parallelism 1 none may
(the same close rule, the records in the same order); with more source readers Flink's watermark
is the least of theirs, and Spark's stream time moves once a micro-batch, so they may.

Run: python benches/bench_flink.py [--events 1000000] [--users 100000] [--repeat 3]
     [--delayed 0.1] [--late 0.01] [--parallelism 1,2] [--spark-files 10] [--no-spark]
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv
from bench_sessions import GAP_MS, GRACE_MS, delayed
from harness import arguments, scratch
from stream_contenders import (
    AGGS,
    SESSION,
    SPARK_SENTINEL,
    FlinkRuns,
    SparkRuns,
    flink_python,
    read_flink,
)

from windowstore import SessionWindowProcessor, session_windows
from windowstore.clickstream import clickstream

#: One thread, as the processor; blocks of 16 MB, so that the calls have --batch-rows records.
INPUT = csv.ReadOptions(
    column_names=["user_id", "ts", "amount"], use_threads=False, block_size=1 << 24
)
INPUT_TYPES = csv.ConvertOptions(
    column_types={"user_id": pa.string(), "ts": pa.int64(), "amount": pa.float64()}
)


# ---------------------------------------------------------------------------------------------
# The data


def beyond_grace(table: pa.Table, fraction: float, seed: int) -> pa.Table:
    """The records in their arrival order with ``fraction`` of them moved later, to where the
    stream time has passed the stream time at which they were due by more than the grace:
    between grace + 1 ms and 2 x (gap + grace) (beyond gap + grace, a record is late whatever its
    session; below that, when its session closed without it)."""
    rng = np.random.default_rng(seed)
    due = np.maximum.accumulate(table["ts"].to_numpy())
    n = len(due)
    delay = rng.integers(GRACE_MS + 1, 2 * (GAP_MS + GRACE_MS), n)
    arrival = np.where(rng.random(n) < fraction, due + delay, due)
    return table.take(pa.array(np.argsort(arrival, kind="stable")))


def write_csv(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    csv.write_csv(table, path, csv.WriteOptions(include_header=False))


def dealt(table: pa.Table, folder: Path, files: int) -> Path:
    """``table`` dealt round-robin into ``files`` CSV files of ``folder`` (each in the table's
    order): one file per Flink source reader."""
    rows = np.arange(table.num_rows)
    for i in range(files):
        write_csv(table.take(pa.array(rows[rows % files == i])), folder / f"part-{i}.csv")
    return folder


def chunked(table: pa.Table, folder: Path, files: int, sentinel_ms: int) -> Path:
    """``table`` cut into ``files`` consecutive CSV files of ``folder``, then the sentinel's file,
    dated in order (Spark's file source takes files by modification time)."""
    bounds = np.linspace(0, table.num_rows, files + 1).astype(int)
    parts = [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    parts.append(
        pa.table(
            {
                "user_id": pa.array([SPARK_SENTINEL]),
                "ts": pa.array([sentinel_ms], pa.int64()),
                "amount": pa.array([0.0]),
            }
        )
    )
    for i, part in enumerate(parts):
        path = folder / f"part-{i:04d}.csv"
        write_csv(part, path)
        os.utime(path, (86_400 + i, 86_400 + i))
    return folder


# ---------------------------------------------------------------------------------------------
# The contenders: each returns its sessions (``SESSION`` columns) and what it says it rejected


def windowstore_stream(path: Path, batch_rows: int) -> tuple[pa.Table, int]:
    table = csv.read_csv(path, read_options=INPUT, convert_options=INPUT_TYPES)
    p = SessionWindowProcessor(
        key="user_id",
        time="ts",
        gap=timedelta(milliseconds=GAP_MS),
        grace=timedelta(milliseconds=GRACE_MS),
        emit="final",
        aggs=AGGS,
    )
    out = [p.process(b) for b in table.to_batches(max_chunksize=batch_rows)]
    out.append(p.flush())
    metrics = p.metrics()
    if metrics["rejected"] != metrics["rejected_late"]:
        raise AssertionError(f"records rejected for other reasons than lateness: {metrics}")
    return pa.concat_tables(out).rename_columns(SESSION), int(metrics["rejected_late"] or 0)


# ---------------------------------------------------------------------------------------------
# The checks


def frame(sessions: pa.Table) -> pl.DataFrame:
    """Sessions as a polars frame of the ``SESSION`` columns, times as epoch ms."""
    df = pl.from_arrow(sessions.select(SESSION))
    assert isinstance(df, pl.DataFrame)
    return df.with_columns(
        pl.col("start").cast(pl.Int64),
        pl.col("end").cast(pl.Int64),
        pl.col("count").cast(pl.Int64),
        pl.col("sum").cast(pl.Float64),
        pl.col("min").cast(pl.Float64),
        pl.col("max").cast(pl.Float64),
    )


def lost_by_user(sessions: pl.DataFrame, records: pl.DataFrame) -> dict[str, int]:
    """Per user who lost any, input records minus the records the sessions count."""
    got = sessions.group_by("user_id").agg(pl.col("count").sum().alias("got"))
    lost = (
        records.join(got, on="user_id", how="full", coalesce=True)
        .with_columns(lost=pl.col("n").fill_null(0) - pl.col("got").fill_null(0))
        .filter(pl.col("lost") != 0)
    )
    if lost.filter(pl.col("lost") < 0).height:
        raise AssertionError(f"sessions count more records than the input:\n{lost.head()}")
    return dict(zip(lost["user_id"].to_list(), lost["lost"].to_list(), strict=True))


def differing_users(a: pl.DataFrame, b: pl.DataFrame) -> set[str]:
    """Users whose sessions differ between ``a`` and ``b`` (sums to 1e-9 relative)."""
    j = a.join(b, on=["user_id", "start", "end"], how="full", coalesce=True, suffix="_b")
    bad = j.filter(
        pl.col("count").is_null()
        | pl.col("count_b").is_null()
        | (pl.col("count") != pl.col("count_b"))
        | (pl.col("min") != pl.col("min_b"))
        | (pl.col("max") != pl.col("max_b"))
        | ((pl.col("sum") - pl.col("sum_b")).abs() > 1e-9 * pl.col("sum").abs() + 1e-9)
    )
    return set(bad["user_id"].unique().to_list())


def some(users: set[str]) -> list[str]:
    return sorted(users)[:5]


@dataclass
class Truth:
    """What every contender is checked against: the input's records per user, complete mode's
    sessions over all of them, the users with a record beyond the grace, and the processor's
    sessions and losses (from its first run)."""

    records: pl.DataFrame  # user_id, n
    complete: pl.DataFrame
    beyond: set[str]
    processor: pl.DataFrame | None = None
    processor_lost: set[str] = field(default_factory=set)

    def check(self, name: str, sessions: pa.Table, said: int | None, kind: str) -> str:
        """Raises if ``sessions`` are wrong; one line saying what was compared and lost.

        ``said``: the records the contender says it rejected. ``kind``: "processor" (the
        reference for the users with a record beyond the grace), "exact" (a contender that must
        equal it there, wherever neither lost a record) or "other"."""
        got = frame(sessions)
        lost = lost_by_user(got, self.records)
        total = sum(lost.values())
        if said is not None and said != total:
            raise AssertionError(f"{name}: rejected {said:,} records but lost {total:,}")
        # Users all of whose records arrived within the grace: no engine may lose or split
        # anything of theirs (docs/semantics.md section 2, the guarantee).
        not_complete = differing_users(got, self.complete)
        bad = (set(lost) | not_complete) - self.beyond
        if bad:
            raise AssertionError(
                f"{name}: sessions differ from complete mode's for users whose records all "
                f"arrived within the grace: {some(bad)}"
            )
        if not self.beyond:
            return f"{got.height:,} sessions = complete mode's, nothing lost"
        line = (
            f"lost {total:,} records of {len(lost):,} users; the "
            f"{self.records.height - len(self.beyond):,} users on time = complete mode's; "
            f"{len(not_complete - set(lost)):,} users kept all but have split sessions"
        )
        if kind == "processor":
            if self.processor is None:
                self.processor, self.processor_lost = got, set(lost)
            return line
        assert self.processor is not None
        both = self.beyond - self.processor_lost - set(lost)
        differ = differing_users(got, self.processor) & both
        if kind == "exact" and differ:
            raise AssertionError(
                f"{name}: sessions differ from windowstore's for users with no record lost in "
                f"either: {some(differ)}"
            )
        only_here = len(set(lost) - self.processor_lost)
        return (
            f"{line}; vs windowstore: {only_here:,} users lost records only here, of "
            f"{len(both):,} late users who lost none in either {len(differ):,} differ"
        )


# ---------------------------------------------------------------------------------------------


def detail(extra: dict[str, float]) -> str:
    """A run's own figures: Flink's job and net runtime, what Spark dropped before windowstore."""
    if "net_s" in extra:
        return f" (job {extra['job_s']:.2f} s, Flink's net runtime {extra['net_s']:.2f} s)"
    if extra.get("dropped"):
        return (
            f" (windowstore rejected {extra['rejected']:,.0f} records as late, Spark's operator "
            f"dropped {extra['dropped']:,.0f} below its watermark before windowstore saw them)"
        )
    return ""


def warmed_up(run: str, events: int, seconds: float, more: str = "") -> None:
    """Prints the line of an untimed warm-up ``run`` over ``events`` events."""
    print(f"{run} on {events:,} events (untimed warm-up): {seconds:.1f} s{more}", flush=True)


@dataclass
class Contender:
    name: str
    kind: str  # Truth.check's
    run: Callable[[], tuple[pa.Table, int | None, dict[str, float]]]
    times: list[float] = field(default_factory=list)
    extra: list[dict[str, float]] = field(default_factory=list)


def main() -> None:
    parser = arguments(__doc__.split("\n")[0], size=1_000_000, keys=100_000, repeat=3)
    parser.add_argument("--delayed", type=float, default=0.10, help="fraction delayed < grace")
    parser.add_argument("--late", type=float, default=0.0, help="fraction delayed > grace")
    parser.add_argument("--parallelism", default="1,2", help="Flink's, comma-separated")
    parser.add_argument("--flink-version", default="2.3.0")
    parser.add_argument(
        "--flink-venvs",
        type=Path,
        default=Path.home() / ".cache" / "windowstore",
        help="where Flink's virtual environment is created and kept",
    )
    parser.add_argument(
        "--flink-delay-ms",
        type=int,
        default=GRACE_MS + 2,
        help="Flink's watermark delay (default: grace + 2 ms, the same close instant)",
    )
    parser.add_argument("--warmup-events", type=int, default=50_000)
    parser.add_argument("--no-spark", action="store_true", help="leave windowstore.spark out")
    parser.add_argument("--spark-files", type=int, default=10, help="micro-batches")
    parser.add_argument("--partitions", type=int, default=8, help="spark.sql.shuffle.partitions")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--arrow-batch", type=int, default=10_000)
    a = parser.parse_args()
    parallelisms = [int(p) for p in a.parallelism.split(",")]

    python = flink_python(a.flink_version, a.flink_venvs)

    data = clickstream(a.events, users=a.users)
    if a.delayed:
        data = delayed(data, a.delayed, seed=1)
    if a.late:
        data = beyond_grace(data, a.late, seed=2)
    n = data.num_rows
    users = pl.from_arrow(data.select(["user_id"]))
    assert isinstance(users, pl.DataFrame)
    records = users.group_by("user_id").agg(pl.len().cast(pl.Int64).alias("n"))
    complete = session_windows(
        data, key="user_id", time="ts", gap=timedelta(milliseconds=GAP_MS), aggs=AGGS
    ).rename_columns(SESSION)
    ts = data["ts"].to_numpy()
    beyond = data["user_id"].filter(pa.array(ts < np.maximum.accumulate(ts) - GRACE_MS))
    truth = Truth(records, frame(complete), set(pc.unique(beyond).to_pylist()))
    print(
        f"{n:,} events over {records.height:,} users, {a.delayed:.0%} delayed within the grace, "
        f"{a.late:.0%} beyond it; gap {GAP_MS // 60_000} min, grace {GRACE_MS // 60_000} min, "
        f"Flink's watermark delay {a.flink_delay_ms:,} ms; complete mode: "
        f"{complete.num_rows:,} sessions; {a.repeat} rounds",
        flush=True,
    )

    with contextlib.ExitStack() as stack:
        root = stack.enter_context(scratch("ws-bench-flink-"))
        single = root / "input" / "part-0.csv"
        write_csv(data, single)
        sources = {1: single} | {
            p: dealt(data, root / f"flink-{p}", p) for p in parallelisms if p > 1
        }
        warm = data.slice(0, a.warmup_events)

        flink = FlinkRuns(python, root / "flink.log")
        stack.callback(flink.close)
        print(f"Flink: process and JVM started in {flink.start_s:.1f} s", flush=True)
        for p in parallelisms:
            out = root / f"flink-warm-{p}"
            got = flink.run(dealt(warm, root / f"warm-{p}", p), out, p, a.flink_delay_ms)
            warmed_up(
                f"Flink: first job at parallelism {p}",
                warm.num_rows,
                got["job_s"],
                f", net {got['net_s']:.1f} s",
            )

        def flink_contender(p: int) -> Contender:
            def run() -> tuple[pa.Table, int | None, dict[str, float]]:
                out = root / f"flink-out-{p}"
                shutil.rmtree(out, ignore_errors=True)
                got = flink.run(sources[p], out, p, a.flink_delay_ms)
                table = read_flink(out)
                end = pc.subtract(table["end"].cast(pa.int64()), GAP_MS)
                table = table.set_column(2, "end", end).set_column(
                    1, "start", table["start"].cast(pa.int64())
                )
                return table, None, got

            # At parallelism 1 Flink's watermark follows the records in their order, as
            # windowstore's stream time does; with more source readers it is the least of theirs.
            return Contender(f"Flink SQL, parallelism {p}", "exact" if p == 1 else "other", run)

        contenders = [
            Contender(
                "windowstore processor (1 core)",
                "processor",
                lambda: (*windowstore_stream(single, a.batch_rows), {}),
            )
        ]
        contenders += [flink_contender(p) for p in parallelisms]

        if not a.no_spark:
            spark = SparkRuns(a.partitions, a.driver_memory, a.arrow_batch)
            stack.callback(spark.close)
            print(f"Spark: session (JVM) started in {spark.start_s:.1f} s", flush=True)
            sentinel = int(pc.max(data["ts"]).as_py()) + 10 * 86_400_000
            stream = chunked(data, root / "spark", a.spark_files, sentinel)
            warm_stream = chunked(warm, root / "spark-warm", 2, sentinel)
            for provider in ("default", "rocksdb"):
                start = time.perf_counter()
                spark.run(warm_stream, root / "spark-work", provider)
                warmed_up(
                    f"Spark: first query with the {provider} provider",
                    warm.num_rows,
                    time.perf_counter() - start,
                )

            def spark_contender(provider: str) -> Contender:
                def run() -> tuple[pa.Table, int | None, dict[str, float]]:
                    table, said = spark.run(stream, root / "spark-work", provider)
                    return table, said["rejected"] + said["dropped"], dict(said)

                return Contender(f"windowstore.spark, {provider} provider", "other", run)

            contenders += [spark_contender(p) for p in ("default", "rocksdb")]

        for i in range(a.repeat):
            for c in contenders:
                start = time.perf_counter()
                sessions, rejected, extra = c.run()
                seconds = time.perf_counter() - start
                c.times.append(seconds)
                c.extra.append(extra)
                checked = truth.check(c.name, sessions, rejected, c.kind)
                print(
                    f"  run {i + 1} {c.name:38s} {seconds:7.2f} s{detail(extra)}; {checked}",
                    flush=True,
                )

    med = {c.name: statistics.median(c.times) for c in contenders}
    flinks = [c.name for c in contenders if c.name.startswith("Flink")]
    print(
        f"\n{'medians, from the CSV on disk to the sessions in hand':<44}{'s':>8}{'events/s':>12}"
    )
    for c in contenders:
        s = med[c.name]
        line = f"{c.name:<44}{s:>8.2f}{n / s:>12,.0f}"
        if "net_s" in c.extra[0]:
            net = statistics.median(e["net_s"] for e in c.extra)
            line += f"   (Flink's net runtime {net:.2f} s: {n / net:,.0f} events/s)"
        print(line)
    print("\nratios of events/s, windowstore / Flink (> 1: windowstore is faster)")
    for c in contenders:
        if c.name.startswith("windowstore"):
            ratios = ", ".join(f"{f}: {med[f] / med[c.name]:.2f}" for f in flinks)
            print(f"{c.name:<44}{ratios}")


if __name__ == "__main__":
    main()
