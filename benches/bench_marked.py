"""Sessions that a logout ends, on a generated clickstream: what the marker costs.

No other engine has sessions that a record ends exactly under late data (Flink users write a
Trigger that fires on the end event, which depends on arrival order), so the figures are
windowstore with an `ends_session` column beside windowstore without it, on the same data and
from the same run. The clickstream gets a `logout` column, true on the last click of each burst
(the last before an idle period longer than the gap), so the marked sessions are the plain
ones, which every result is checked against. Prints medians over --repeat runs of:

- complete mode, plain and marked;
- the streaming processor in time order and with 10% of the records delayed within the grace,
  plain and marked (the marked processor keeps the records of open sessions, as with
  `max_duration`, and applies them one by one), and plain sessions on the record-by-record
  path too (`record path`: what plain sessions cost without their batched path);
- the ratio of marked to plain throughput (the target is at least 0.8).

Run: python benches/bench_marked.py [--events 2000000] [--users 50000] [--repeat 3]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from bench_max_duration import canonical, stream
from bench_sessions import AGGS, GAP_MS, delayed
from harness import arguments, median_seconds

from windowstore import session_windows
from windowstore.clickstream import clickstream


def with_logouts(data: pa.Table) -> pa.Table:
    """`data` with a boolean `logout`: true where the user's next click is more than the gap
    later, or there is none (the end of a burst)."""
    users = data["user_id"].combine_chunks().dictionary_encode().indices.to_numpy()
    ts = data["ts"].to_numpy()
    order = np.lexsort((ts, users))
    last = np.ones(len(ts), dtype=bool)
    same = users[order][1:] == users[order][:-1]
    last[order[:-1]] = ~same | (np.diff(ts[order]) > GAP_MS)
    return data.append_column("logout", pa.array(last))


def main() -> None:
    args = arguments(__doc__, size=2_000_000, keys=50_000, repeat=3).parse_args()
    data = with_logouts(clickstream(args.events, users=args.users))
    n = data.num_rows
    logouts = int(np.count_nonzero(data["logout"].to_numpy(zero_copy_only=False)))
    print(f"{n:,} events, {logouts:,} logouts; gap 30 min, grace 5 min; medians of {args.repeat}")
    marked = {"ends_session": "logout"}

    def complete(**kw: str) -> pa.Table:
        return session_windows(data, key="user_id", time="ts", gap=GAP_MS, aggs=AGGS, **kw)

    rows = []
    plain_s, want = median_seconds(complete, args.repeat)
    marked_s, got = median_seconds(lambda: complete(**marked), args.repeat)
    if not canonical(got).equals(canonical(want)):
        raise AssertionError("complete mode: the marked sessions differ from the plain ones")
    rows.append(("complete", plain_s, None, marked_s))
    late = delayed(data, 0.10, seed=1)
    for name, table in (("streaming in time order", data), ("streaming 10% delayed", late)):
        times = []
        for batched, kw in ((True, {}), (False, {}), (True, marked)):
            s, (out, _, _) = median_seconds(
                lambda t=table, b=batched, kw=kw: stream(t, None, args.batch_rows, b, **kw),
                args.repeat,
            )
            if not canonical(out).equals(canonical(want)):
                raise AssertionError(f"{name} ({kw or 'plain'}) differs from complete mode")
            times.append(s)
        rows.append((name, *times))

    rate = lambda s: n / s / 1e6  # noqa: E731 - a one-line helper
    print(
        f"{'mode':<26}{'plain s':>9}{'M rec/s':>9}{'record path s':>15}{'marked s':>10}"
        f"{'M rec/s':>9}{'ratio':>7}"
    )
    for name, p, r, m in rows:
        path = "" if r is None else f"{r:.3f}"
        print(f"{name:<26}{p:>9.3f}{rate(p):>9.2f}{path:>15}{m:>10.3f}{rate(m):>9.2f}{p / m:>7.2f}")
    print(f"sessions: {want.num_rows:,}; ratio = marked throughput / plain throughput")


if __name__ == "__main__":
    main()
