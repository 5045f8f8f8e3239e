"""Figures the user guide states in prose, recomputed with the code: a page that says what the
code does not do fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

from windowstore import sliding_windows

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_the_narrow_time_type_example_of_sliding_windows() -> None:
    """docs/concepts/windows.md: "`uint8` times ... with `D = 10` give `[a, b]`, ..." lists
    every window of those records."""
    text = " ".join((DOCS / "concepts" / "windows.md").read_text().split())
    claim = re.search(r"`uint8` times ([0-9, and]+) with `D = (\d+)` give (.+?)\)", text)
    assert claim is not None, "the uint8 example is gone from docs/concepts/windows.md"
    times = [int(t) for t in re.findall(r"\d+", claim.group(1))]
    stated = {(int(a), int(b)) for a, b in re.findall(r"`\[(-?\d+), (-?\d+)\]`", claim.group(3))}
    table = pa.table({"k": ["a"] * len(times), "ts": pa.array(times, pa.uint8())})
    out = sliding_windows(table, key="k", time="ts", time_difference=int(claim.group(2)))
    assert stated == {(r["window_start"], r["window_end"]) for r in out.to_pylist()}


def paragraphs(text: str) -> list[str]:
    """The paragraphs and list items of a Markdown page, each on one line."""
    blocks = re.split(r"\n\s*\n|\n(?=\s*- )", text)
    return [" ".join(b.split()) for b in blocks]


def test_every_promise_of_spark_equal_sessions_says_what_a_day_is() -> None:
    """A gap of "1 day" is 86,400 s here and a calendar day of the session time zone in Spark's
    session_window (23 or 25 hours across a daylight-saving change), so a page that says the
    sessions are Spark's must say it in the same breath. (The benchmarks page runs Spark in UTC
    and only reports that the results were checked.)"""
    pages = [p for p in DOCS.rglob("*.md") if p.name != "benchmarks.md"]
    promises = [
        (page.relative_to(DOCS), p)
        for page in pages
        for p in paragraphs(page.read_text())
        if "session_window`" in p and re.search(r"\b(same|equal)\b", p)
    ]
    assert len(promises) >= 3  # concepts/windows.md, how-to/spark-batch.md, semantics.md
    for page, p in promises:
        assert re.search(r"\bdays?\b", p), f"{page}: {p}"
