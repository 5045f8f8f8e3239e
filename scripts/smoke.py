"""Smoke test of an installed windowstore wheel, run by scripts/smoke.sh in a fresh virtual
environment: no Rust, no build tools, no pyspark. Every check asserts values; any failure exits
non-zero.

    python -I scripts/smoke.py WHEEL
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def check(condition: bool, what: str) -> None:
    """Fails the smoke test with ``what`` unless ``condition`` holds."""
    if not condition:
        raise SystemExit(f"smoke: FAILED: {what}")


def environment_is_bare() -> None:
    for tool in ("cargo", "rustc", "maturin"):
        check(shutil.which(tool) is None, f"{tool} is on PATH: the environment is not bare")
    for module in ("maturin", "pyspark"):
        check(importlib.util.find_spec(module) is None, f"{module} is installed")


def imports_from_the_wheel() -> None:
    import windowstore

    where = Path(windowstore.__file__).resolve()
    check(
        Path(sys.prefix).resolve() in where.parents,
        f"windowstore imported from {where}, not from the environment {sys.prefix}",
    )
    check("pyspark" not in sys.modules, "importing windowstore imported pyspark")
    from importlib.metadata import version

    check(
        windowstore.__version__ == version("windowstore"),
        f"windowstore.__version__ {windowstore.__version__} is not the installed "
        f"{version('windowstore')}",
    )


def sessions() -> None:
    import pyarrow as pa

    from windowstore import SessionWindowProcessor, agg, session_windows

    events = pa.table(
        {
            "user": ["a", "a", "a", "b"],
            "ts": [0, 5_000, 90_000, 1_000],
            "amount": [3.0, 4.0, 1.0, 7.0],
        }
    )
    got = session_windows(
        events, key="user", time="ts", gap="30s", aggs=[agg.count(), agg.sum("amount")]
    ).sort_by([("user", "ascending"), ("session_start", "ascending")])
    want = [
        {"user": "a", "session_start": 0, "session_end": 5_000, "count": 2, "sum_amount": 7.0},
        {"user": "a", "session_start": 90_000, "session_end": 90_000, "count": 1,
         "sum_amount": 1.0},
        {"user": "b", "session_start": 1_000, "session_end": 1_000, "count": 1,
         "sum_amount": 7.0},
    ]  # fmt: skip
    check(got.to_pylist() == want, f"session_windows gave {got.to_pylist()}")

    p = SessionWindowProcessor(key="user", time="ts", gap="30s", grace="10s", aggs=[agg.count()])
    first = p.process(events.slice(0, 2))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.snap"
        p.snapshot(path)
        p = SessionWindowProcessor.restore(path)
    rest = p.process(events.slice(2))
    flushed = p.flush()
    rows = sorted(
        (r["user"], r["session_start"], r["session_end"], r["count"])
        for t in (first, rest, flushed)
        for r in t.to_pylist()
    )
    check(
        rows == [("a", 0, 5_000, 2), ("a", 90_000, 90_000, 1)],
        f"the streaming processor (with a snapshot and restore) gave {rows}",
    )
    # b at 1s arrives after stream time 90s: later than the 10s grace, it is rejected, not lost.
    late = [(r["user"], r["ts"], r["reason"]) for r in p.rejected().to_pylist()]
    check(late == [("b", 1_000, "late")], f"the processor rejected {late}")


def sliding() -> None:
    import pyarrow as pa

    from windowstore import agg, sliding_windows

    events = pa.table({"user": ["a", "a", "a"], "ts": [8_000, 9_200, 12_400], "amount": [1, 2, 3]})
    got = sliding_windows(
        events, key="user", time="ts", time_difference="5s", aggs=[agg.count(), agg.sum("amount")]
    ).sort_by([("window_start", "ascending")])
    bounds = list(zip(got["window_start"].to_pylist(), got["window_end"].to_pylist(), strict=True))
    check(
        bounds == [(3000, 8000), (4200, 9200), (7400, 12400), (8001, 13001), (9201, 14201)],
        f"sliding_windows gave the windows {bounds}",
    )
    check(got["count"].to_pylist() == [1, 2, 3, 2, 1], f"sliding counts {got['count']}")
    check(got["sum_amount"].to_pylist() == [1, 3, 6, 5, 3], f"sliding sums {got['sum_amount']}")


def command_line(work: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["windowstore", *args], capture_output=True, text=True, check=False, cwd=work
        )

    import windowstore

    helped = run("--help")
    check(helped.returncode == 0, f"windowstore --help exited {helped.returncode}: {helped.stderr}")
    for word in ("sessions", "sliding", "demo", "exit codes"):
        check(word in helped.stdout, f"windowstore --help does not mention {word!r}")
    check("``" not in helped.stdout, "windowstore --help shows reStructuredText backticks")
    version = run("--version")
    check(
        version.returncode == 0
        and version.stdout.split() == ["windowstore", windowstore.__version__],
        f"windowstore --version printed {version.stdout!r}",
    )
    demo = run("demo", "--events", "3000", "--users", "40", "--no-spark", "--no-plots")
    check(demo.returncode == 0, f"windowstore demo exited {demo.returncode}: {demo.stderr}")
    check("independent check" in demo.stdout, f"the demo printed {demo.stdout!r}")

    # Without pyspark: a bad argument is still named (exit 2, before any Spark import), and a
    # good command says how to get pyspark (exit 2) without naming a package index.
    missing = run("sessions", "nowhere.parquet", "-o", "out", "--key", "u", "--time", "t",
                  "--gap", "1m")  # fmt: skip
    check(missing.returncode == 2, f"a missing input exited {missing.returncode}")
    check("nowhere.parquet" in missing.stderr, f"a missing input said {missing.stderr!r}")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"u": ["a"], "t": [1]}), work / "in.parquet")
    nospark = run("sessions", "in.parquet", "-o", "out", "--key", "u", "--time", "t",
                  "--gap", "1m")  # fmt: skip
    check(nospark.returncode == 2, f"without pyspark the command exited {nospark.returncode}")
    check("pyspark" in nospark.stderr, f"without pyspark the command said {nospark.stderr!r}")
    check("Traceback" not in nospark.stderr, f"a traceback: {nospark.stderr}")


def main() -> None:
    wheel = sys.argv[1] if len(sys.argv) > 1 else "(installed)"
    environment_is_bare()
    imports_from_the_wheel()
    sessions()
    sliding()
    with tempfile.TemporaryDirectory() as tmp:
        command_line(Path(tmp))
    print(f"smoke: OK: {Path(wheel).name}")


if __name__ == "__main__":
    main()
