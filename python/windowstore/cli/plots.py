"""The demo's PNG plots: sessions per user over time, and the distribution of session lengths."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["plot_sessions", "timeline_figure"]

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_sessions(
    sessions: pa.Table, out: Path, gap_minutes: int, users: int = 25, days: int = 4
) -> list[Path]:
    """Writes ``sessions_per_user.png`` (a timeline of the sessions of the ``users`` busiest
    users over their first ``days`` days) and ``session_lengths.png`` (histograms of session
    length and events per session) into ``out``; returns their paths. ``sessions`` has
    ``user_id``, ``session_start``, ``session_end`` (epoch milliseconds) and ``count``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig = timeline_figure(sessions, gap_minutes, users, days)
    timeline = out / "sessions_per_user.png"
    fig.savefig(timeline, dpi=110)
    plt.close(fig)

    minutes = (sessions["session_end"].to_numpy() - sessions["session_start"].to_numpy()) / 6e4
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    left.hist(minutes, bins=60, color="#3b6ea5")
    left.set_yscale("log")
    left.set_xlabel("session length (minutes, last event - first event)")
    left.set_ylabel("sessions")
    right.hist(sessions["count"].to_numpy(), bins=60, color="#a5563b")
    right.set_yscale("log")
    right.set_xlabel("events per session")
    fig.suptitle(f"{sessions.num_rows:,} sessions")
    fig.tight_layout()
    lengths = out / "session_lengths.png"
    fig.savefig(lengths, dpi=110)
    plt.close(fig)
    return [timeline, lengths]


def timeline_figure(sessions: pa.Table, gap_minutes: int, users: int = 25, days: int = 4) -> Figure:
    """The timeline of ``plot_sessions``: a bar per session of the ``users`` busiest users
    over their first ``days`` days, coloured by events per session (log scale) with a colour
    bar as its legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import StrMethodFormatter

    per_user = pc.value_counts(sessions["user_id"]).to_pylist()
    busiest = [v["values"] for v in sorted(per_user, key=lambda v: -v["counts"])[:users]]
    chosen = sessions.filter(pc.is_in(sessions["user_id"], pa.array(busiest)))
    row = {u: i for i, u in enumerate(busiest)}
    start = chosen["session_start"].to_numpy() / 3.6e6  # hours
    end = chosen["session_end"].to_numpy() / 3.6e6
    origin = start.min() if len(start) else 0.0
    y = np.array([row[u] for u in chosen["user_id"].to_pylist()])
    counts = chosen["count"].to_numpy()
    week = start - origin < days * 24  # the first days only: sessions last minutes
    start, end, y, counts = start[week], end[week], y[week], counts[week]

    fig, ax = plt.subplots(figsize=(11, 6))
    cmap = plt.get_cmap("viridis")
    norm = LogNorm(vmin=1, vmax=max(int(counts.max()) if len(counts) else 1, 2))
    width = np.maximum(end - start, 0.05)  # one-event sessions still show
    ax.barh(y, width, left=start - origin, height=0.7, color=cmap(norm(np.maximum(counts, 1))))
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.01)
    bar.set_label("events per session")
    bar.ax.yaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    ax.set_yticks(range(len(busiest)), busiest, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"hours since the first session (first {days} days)")
    ax.set_title(f"Sessions of the {len(busiest)} busiest users ({gap_minutes}-minute gap)")
    fig.tight_layout()
    return fig
