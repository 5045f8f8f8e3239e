"""Sessions tagged on rows (``output="records"``) on the bench_sessions clickstream, beside
windows mode and Polars, in the same run.

Prints medians over --repeat runs (alternating the contenders) of:
- the streaming processor in records mode beside the same processor in windows mode (count,
  sum, max), fed the same batches in time order; the ratio is records over windows throughput;
- the floor of records mode beside them: windows mode plus an output of records mode's size,
  each call's rows gathered once in (user, time) order (the order computed before the timing)
  and three int64 columns added. Records mode does at least this much work;
- complete mode records beside Polars tagging every row with its session's start and end
  (sort, diff, cum_sum, then min/max ``over`` the session), results checked equal (each row's
  user, time, start and end) before any figure is printed. Polars runs at its defaults (every
  core). windowstore also computes each row's ``session_id``, which Polars does not.

Run: python benches/bench_records.py [--events 10000000] [--users 100000] [--repeat 5]
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from bench_sessions import AGGS, GAP_MS, GRACE_MS
from harness import alternating_medians, arguments

from windowstore import SessionWindowProcessor, session_windows
from windowstore._records import SESSION_COLUMNS as TAGS
from windowstore.clickstream import clickstream


def polars_records(df: pl.DataFrame) -> pl.DataFrame:
    """Every row with its session's start and end, as a Polars user writes it."""
    user, ts = pl.col("user_id"), pl.col("ts")
    return (
        df.sort(["user_id", "ts"], maintain_order=True)
        .with_columns(
            session=((user != user.shift()).fill_null(True) | (ts.diff() > GAP_MS)).cum_sum()
        )
        .with_columns(session_start=ts.min().over("session"), session_end=ts.max().over("session"))
        .drop("session")
    )


def stream(table: pa.Table, batch_rows: int, output: str) -> pa.Table:
    kwargs = {"output": "records"} if output == "records" else {"aggs": AGGS}
    p = SessionWindowProcessor(key="user_id", time="ts", gap=GAP_MS, grace=GRACE_MS, **kwargs)
    out = [p.process(b) for b in table.to_batches(max_chunksize=batch_rows)]
    out.append(p.flush())
    if p.metrics()["rejected"]:
        raise AssertionError(f"records rejected: {p.metrics()}")
    return pa.concat_tables(out)


def floor(batches: list[tuple[pa.RecordBatch, pa.Array]]) -> list[pa.RecordBatch]:
    """Windows mode, and each call's rows gathered in the given order with three int64 columns
    added: what records mode outputs, without finding the sessions' rows or tagging them."""
    p = SessionWindowProcessor(key="user_id", time="ts", gap=GAP_MS, grace=GRACE_MS, aggs=AGGS)
    out = []
    for batch, order in batches:
        out.append(p.process(batch))
        rows = batch.take(order)
        tags = [pa.array(np.zeros(batch.num_rows, dtype=np.int64)) for _ in range(3)]
        out.append(pa.RecordBatch.from_arrays([*rows.columns, *tags], [*rows.schema.names, *TAGS]))
    out.append(p.flush())
    return out


def canonical(t: pa.Table) -> pa.Table:
    cols = ["user_id", "ts", "session_start", "session_end"]
    schema = pa.schema([(c, pa.string() if c == "user_id" else pa.int64()) for c in cols])
    return t.select(cols).cast(schema).sort_by([(c, "ascending") for c in cols])


def main() -> None:
    parser = arguments(__doc__, size=10_000_000, keys=100_000, repeat=5)
    args = parser.parse_args()

    data = clickstream(args.events, users=args.users)
    n = data.num_rows
    df = pl.from_arrow(data)
    assert isinstance(df, pl.DataFrame)
    print(
        f"{n:,} events, {pc.count_distinct(data['user_id']).as_py():,} users; gap 30 min, grace "
        f"5 min; polars {pl.__version__} on {pl.thread_pool_size()} threads; medians of "
        f"{args.repeat}, contenders alternating"
    )

    complete = lambda: session_windows(  # noqa: E731 - the timed call
        data, key="user_id", time="ts", gap=GAP_MS, output="records"
    )
    tagged = complete()
    if not canonical(tagged).equals(canonical(polars_records(df).to_arrow())):
        raise AssertionError("windowstore and polars tag rows differently")
    windows = stream(data, args.batch_rows, "windows")
    streamed = stream(data, args.batch_rows, "records")
    if not canonical(streamed).equals(canonical(tagged)):
        raise AssertionError("the processor's records differ from complete mode's")
    if windows["count"].to_numpy().sum() != n or windows.num_rows != len(
        set(zip(tagged["user_id"].to_pylist(), tagged["session_start"].to_pylist(), strict=True))
    ):
        raise AssertionError("windows mode and records mode disagree on the sessions")
    print(f"rows tagged: {tagged.num_rows:,} into {windows.num_rows:,} sessions (checked)")
    del tagged, windows, streamed

    ordered = [
        (b, pc.sort_indices(b, [("user_id", "ascending"), ("ts", "ascending")]))
        for b in data.to_batches(max_chunksize=args.batch_rows)
    ]
    (win_s, floor_s, rec_s, ws_s, pl_s), _ = alternating_medians(
        [
            lambda: stream(data, args.batch_rows, "windows"),
            lambda: floor(ordered),
            lambda: stream(data, args.batch_rows, "records"),
            complete,
            lambda: polars_records(df),
        ],
        args.repeat,
    )
    rate = lambda s: n / s / 1e6  # noqa: E731 - a one-line helper
    print(f"{'mode':<52}{'median s':>10}{'M rec/s':>10}{'ratio':>9}")
    print(f"{'processor, windows mode (1 core)':<52}{win_s:>10.3f}{rate(win_s):>10.2f}")
    print(
        f"{'floor: windows mode + records-sized output (1 core)':<52}{floor_s:>10.3f}"
        f"{rate(floor_s):>10.2f}{win_s / floor_s:>8.2f}x  (of windows mode's throughput)"
    )
    print(
        f"{'processor, records mode (1 core)':<52}{rec_s:>10.3f}{rate(rec_s):>10.2f}"
        f"{win_s / rec_s:>8.2f}x  (of windows mode's throughput)"
    )
    print(
        f"{'complete mode, records (1 core)':<52}{ws_s:>10.3f}{rate(ws_s):>10.2f}"
        f"{pl_s / ws_s:>8.2f}x  (vs polars)"
    )
    print(
        f"{f'polars sort/diff/cum_sum + over ({pl.thread_pool_size()} threads)':<52}"
        f"{pl_s:>10.3f}{rate(pl_s):>10.2f}"
    )


if __name__ == "__main__":
    main()
