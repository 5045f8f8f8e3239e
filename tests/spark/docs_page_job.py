"""Runs the Python examples of a docs page as one pasted session, for the Kafka docs test
(``test_spark_streaming_docs.py``), in a process of its own (Spark's jars are fixed when its
first session starts, and other tests' session has no Kafka connector):

    python tests/spark/docs_page_job.py PAGE BOOTSTRAP JARS RESULT

The blocks of PAGE (``docs_examples.examples``) run in order in one namespace, in the current
directory, with the page's broker address ``127.0.0.1:9092`` replaced by BOOTSTRAP and the
page's ``spark.jars.packages`` (an Ivy download) by ``spark.jars`` JARS (the same connector,
resolved by Maven). After each block, every active query processes all the input available
(as a user waits before pasting the next block). Then every query is stopped. RESULT gets, as
JSON, the value of each top-level expression statement (``values``: page line, source, value),
what each block printed from Python (``printed``) and how each query ended (``queries``).
"""

from __future__ import annotations

import ast
import io
import json
import sys
import threading
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docs_examples import examples

#: How long a query's ``processAllAvailable`` may take before it is taken for a ticking query.
PROCESS_ALL_S = 20
PAGE_BROKER = "127.0.0.1:9092"
PAGE_PACKAGES = '"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"'


def runnable(code: str, bootstrap: str, jars: str) -> str:
    """``code`` pointed at the test's broker and its locally resolved connector jars."""
    code = code.replace(PAGE_BROKER, bootstrap)
    return code.replace(PAGE_PACKAGES, f'"spark.jars": {jars!r}')


def recorded(tree: ast.Module, where: str) -> ast.Module:
    """``tree`` with each top-level expression statement ``e`` (line N) made
    ``__record__(N, e)``."""
    body: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr):
            call = ast.Call(
                ast.Name("__record__", ast.Load()), [ast.Constant(stmt.lineno), stmt.value], []
            )
            stmt = ast.Expr(call)
        body.append(stmt)
    return ast.fix_missing_locations(ast.Module(body, []))


def read_all(query: Any) -> bool:
    """Whether ``query``'s latest micro-batch read its sources up to their latest offsets."""
    progress = query.lastProgress
    return bool(progress) and all(
        s["endOffset"] is not None and s["endOffset"] == s["latestOffset"]
        for s in progress["sources"]
    )


def wait(query: Any, ticking: set[str]) -> None:
    """Waits until ``query`` has processed all its available input: ``processAllAvailable``,
    which never returns for a query that runs a micro-batch at every trigger (processing-time
    timers); such a query (in ``ticking`` once known) is done when a micro-batch read its
    sources to their end."""
    if query.id not in ticking:
        waiter = threading.Thread(target=query.processAllAvailable, daemon=True)
        waiter.start()
        waiter.join(PROCESS_ALL_S)
        if not waiter.is_alive():
            return
        ticking.add(query.id)
    deadline = time.monotonic() + 120
    while not read_all(query):
        assert time.monotonic() < deadline, f"{query.name} never read its input"
        time.sleep(0.5)


def main(page: Path, bootstrap: str, jars: str, result: Path) -> None:
    """Runs ``page``'s examples as the module's docstring says; writes the report to ``result``."""
    values: list[tuple[int, str, Any]] = []
    printed: dict[int, str] = {}
    namespace: dict[str, Any] = {"__name__": "__main__"}
    replaced = {"broker": 0, "packages": 0}
    started: dict[str, Any] = {}
    ticking: set[str] = set()
    for example in examples(page):
        replaced["broker"] += example.code.count(PAGE_BROKER)
        replaced["packages"] += example.code.count(PAGE_PACKAGES)
        code = runnable(example.code, bootstrap, jars)
        lines = example.code.splitlines()

        def record(
            lineno: int, value: Any, line: int = example.line, lines: list[str] = lines
        ) -> None:
            values.append((line + lineno - 1, lines[lineno - 1], value))

        namespace["__record__"] = record
        where = f"{page.name}:{example.line}"
        out = io.StringIO()
        with redirect_stdout(out):
            exec(compile(recorded(ast.parse(code), where), where, "exec"), namespace)
        printed[example.line] = out.getvalue()
        spark = namespace.get("spark")
        if spark is not None:
            for query in spark.streams.active:
                started.setdefault(query.id, query)
                wait(query, ticking)
    queries = []
    for query in started.values():
        query.stop()
        error = query.exception()
        queries.append({"name": query.name, "error": None if error is None else str(error)})
    spark = namespace["spark"]
    spark.stop()
    report = {"values": values, "printed": printed, "queries": queries, "replaced": replaced}
    result.write_text(json.dumps(report, default=repr))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4]))
