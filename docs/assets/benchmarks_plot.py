"""Draws docs/assets/benchmarks.png: windowstore's speed relative to each benchmark's baseline.

The figures are the medians recorded on docs/benchmarks.md (each with the command that measured
it); change them there and here together. Not run by the docs build: run it by hand after a new
measurement, with matplotlib installed (`pip install '.[spark]'`):

    python docs/assets/benchmarks_plot.py
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

# (label, baseline seconds or events/s, windowstore seconds or events/s, higher_is_better),
# all measured between 2026-11-26 and 28 (docs/benchmarks.md, "Where windowstore stands").
FIGURES = [
    ("Sessions, complete mode\nvs Polars (10M events)", 2.480, 0.583, False),
    ("Sessions, complete mode\nvs DuckDB (10M events)", 2.627, 0.583, False),
    ("Sessions tagged on rows\nvs Polars over (10M events)", 2.607, 1.341, False),
    (
        "Sliding, complete mode, all windows\nvs Polars rolling, left windows (10M)",
        1.514,
        0.994,
        False,
    ),
    (
        "Sliding, complete mode, all windows\nvs DuckDB RANGE, left windows (10M)",
        2.416,
        0.994,
        False,
    ),
    ("Sliding, streaming vs Kafka Streams\nat its defaults (200k records)", 24.361, 0.279, False),
    ("Sessions, streaming vs Flink SQL\nparallelism 2 (1M events)", 5.78, 0.72, False),
    ("Spark batch sessions\nvs session_window (10M events)", 16.57, 9.71, False),
    ("Spark batch sliding, all windows\nvs rangeBetween, left windows (10M)", 16.40, 16.96, False),
    ("Spark streaming sessions, RocksDB\nvs native (events/s)", 35_971, 68_444, True),
    ("Spark streaming sessions, default\nstate store vs native (events/s)", 96_301, 89_405, True),
]


def main() -> None:
    labels = [f[0] for f in FIGURES]
    speed = [(ws / base) if higher else (base / ws) for _, base, ws, higher in FIGURES]
    fig, ax = plt.subplots(figsize=(8, 5.4), layout="constrained")
    colors = ["#2e7d32" if s >= 1 else "#c62828" for s in speed]
    bars = ax.barh(labels[::-1], speed[::-1], color=colors[::-1])
    ax.axvline(1.0, color="gray", linestyle="--", linewidth=1, zorder=0)
    ax.bar_label(bars, labels=[f"{s:.2f}x" for s in speed[::-1]], padding=3)
    ax.set_xscale("log")
    ax.set_xlabel("speed relative to the baseline (baseline = 1; higher is faster; log scale)")
    ax.set_xlim(0.3, max(speed) * 3)
    ax.set_title("windowstore beside its baselines (medians, 2 cores, 2026-11-26/28)")
    ax.tick_params(axis="y", labelsize=8)
    out = Path(__file__).with_name("benchmarks.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
