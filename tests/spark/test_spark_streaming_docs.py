"""The Kafka examples of docs/how-to/spark-streaming.md and README.md run as written, pasted in
order into one session, against a real Kafka broker, and give what the pages say.

The pages name a broker on ``127.0.0.1:9092``; the test's broker (``kafka_broker.KafkaBroker``)
runs on a free port, so ``docs_page_job.py`` replaces that address in the code by the test
broker's before running it, and the page's ``spark.jars.packages`` (an Ivy download of the
connector) by ``spark.jars`` with the same connector resolved by Maven (``spark_jars()``):
nothing else of the pages' code changes. Each page runs in a process of its own, in a fresh
working directory, on a topic ``clicks`` of its own broker (the page writes its clicks there).
Skipped only where Java is missing.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from docs_examples import examples

from .kafka_broker import KafkaBroker, java_missing, spark_jars

JAVA_MISSING = java_missing()
pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(JAVA_MISSING is not None, reason=JAVA_MISSING or ""),
]

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("docs_page_job.py")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[KafkaBroker]:
    """A Kafka broker with an empty topic ``clicks``, stopped after the test."""
    with KafkaBroker(tmp_path / "kafka") as running:
        running.create_topic("clicks")
        yield running


def run_page(page: Path, broker: KafkaBroker, workdir: Path) -> dict[str, Any]:
    """Runs ``page``'s examples in ``workdir`` (``docs_page_job.py``); its report."""
    workdir.mkdir()
    result = workdir.parent / f"{page.stem}.json"
    log = workdir.parent / f"{page.stem}.log"
    with log.open("wb") as out:
        done = subprocess.run(
            [sys.executable, str(JOB), str(page), broker.bootstrap, spark_jars(), str(result)],
            cwd=workdir, stdout=out, stderr=subprocess.STDOUT, timeout=240, check=False,
        )  # fmt: skip
    assert done.returncode == 0, log.read_text()[-4000:]
    report: dict[str, Any] = json.loads(result.read_text())
    report["log"] = log.read_text()
    assert report["replaced"]["broker"] > 0
    for query in report["queries"]:
        assert query["error"] is None, query
    return report


def promised(line: str) -> tuple[Any, bool] | None:
    """What the comment of ``line`` says its value is, after its first ``: ``, when that is a
    Python literal (``...`` before the closing brace: more entries may follow), and whether it
    is exact; None when the comment states no value."""
    stated = re.search(r"  # [^:]*: ([-\d\[{(\"'].*)$", line)
    if stated is None:
        return None
    text = stated[1]
    partial = text.endswith(", ...}")
    if partial:
        text = text[: -len(", ...}")] + "}"
    try:
        return ast.literal_eval(text), not partial
    except (ValueError, SyntaxError):
        return None  # prose


def assert_values_as_commented(report: dict[str, Any]) -> int:
    """Each recorded expression whose comment states a value has that value; returns how many
    were checked."""
    checked = 0
    for line, source, value in report["values"]:
        said = promised(source)
        if said is None:
            continue
        want, exact = said
        if exact:
            assert value == want, f"line {line}: {source!r} gave {value!r}"
        else:
            assert {k: value.get(k) for k in want} == want, f"line {line}: gave {value!r}"
        checked += 1
    return checked


def shown_table(code: str) -> str:
    """The table a block shows in comments (``# +---`` ... lines), uncommented."""
    return "".join(line[2:] + "\n" for line in code.splitlines() if re.match(r"# [+|]", line))


def page_clicks(page: Path) -> list[str]:
    """The clicks the streaming page writes to its topic (``values`` of its block that writes
    them), as JSON strings."""
    (block,) = [e for e in examples(page) if "values = " in e.code]
    tree = ast.parse(block.code)
    tree.body.pop()  # the write to Kafka
    namespace: dict[str, Any] = {}
    exec(compile(tree, str(page), "exec"), namespace)
    return [value for (value,) in namespace["values"]]


def closed_sessions(sink: Path) -> list[tuple[str, int, float, float]]:
    """The sessions of a Parquet sink: user, count, sum and max of the amount."""
    rows = pq.read_table(sink).sort_by([("user_id", "ascending")]).to_pylist()
    return [(s["user_id"], s["count"], s["sum_amount"], s["max_amount"]) for s in rows]


#: The sessions of the streaming page's clicks that its watermark closes: u1's first and u2's
#: first (u1's second and u2's second are still open).
CLOSED = [("u1", 2, 29.5, 20.0), ("u2", 2, 10.5, 6.5)]


def test_the_streaming_pages_examples_run_and_give_what_the_page_says(
    broker: KafkaBroker, tmp_path: Path
) -> None:
    page = ROOT / "docs" / "how-to" / "spark-streaming.md"
    report = run_page(page, broker, tmp_path / "run")
    run = tmp_path / "run"
    assert report["replaced"]["packages"] == 1

    # The comments' values: metrics(query) and the rest.
    assert assert_values_as_commented(report) >= 3

    # The sessions the watermark closed are in the sink.
    assert closed_sessions(run / "out" / "sessions") == CLOSED

    # read_state prints u1's open session as the page shows it.
    (state,) = [e for e in examples(page) if "read_state(spark" in e.code]
    table = shown_table(state.code)
    assert table.count("\n") == 5
    assert table in report["printed"][str(state.line)]

    # The changelog query printed upserts (console sink: the JVM's stdout), nothing was
    # rejected, and the idle query wrote no window (nothing has been idle for 5 minutes).
    assert "upsert" in report["log"]
    assert pq.read_table(run / "out" / "rejected").num_rows == 0
    assert len(report["queries"]) == 4


def test_the_readmes_kafka_example_runs_and_writes_the_closed_sessions(
    broker: KafkaBroker, tmp_path: Path
) -> None:
    """README.md's examples in order, its Kafka block last, on a topic holding the streaming
    page's clicks (written here, since the README's block only reads)."""
    broker.produce("clicks", page_clicks(ROOT / "docs" / "how-to" / "spark-streaming.md"))
    report = run_page(ROOT / "README.md", broker, tmp_path / "run")
    assert report["replaced"]["packages"] == 1
    assert len(report["queries"]) == 1
    assert closed_sessions(tmp_path / "run" / "out" / "sessions") == CLOSED


def test_the_login_sessions_page_runs_and_shows_what_it_says(tmp_path: Path) -> None:
    """docs/how-to/login-sessions.md on a topic ``logins`` of its own broker: the page writes its
    events, and both tables it shows (the stream's closed sessions, the batch's all) are printed
    as shown."""
    page = ROOT / "docs" / "how-to" / "login-sessions.md"
    with KafkaBroker(tmp_path / "kafka") as broker:
        broker.create_topic("logins")
        report = run_page(page, broker, tmp_path / "run")
    shows = [e for e in examples(page) if ".show(truncate=False)" in e.code]
    assert len(shows) == 2
    for block in shows:
        table = shown_table(block.code)
        assert table.count("\n") >= 6
        assert table in report["printed"][str(block.line)]
    assert len(report["queries"]) == 1
