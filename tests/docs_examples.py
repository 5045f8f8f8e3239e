"""The Python examples of README.md and docs/, read as a new user pastes them: page by page.

A page's ```python blocks run in order in one namespace, as one pasted session would run them,
in a fresh working directory, except a block right after an HTML comment
``<!-- not run: WHY -->`` (an illustration that needs what no test has, such as a server). A
block followed by a Markdown table (after at most a blank line) promises that table: its last
expression's value, a pyarrow Table, must have exactly those rows.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

_BLOCK = re.compile(r"^```python\n(.*?)^```\n((?:\n?\|[^\n]*\n)*)", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!-- not run: [^\n]*-->\n\Z")


@dataclass
class Example:
    """One ```python block of a page, and the table the page shows right after it (or None)."""

    page: Path
    line: int
    code: str
    table: list[list[str]] | None


def examples(page: Path) -> list[Example]:
    """The ```python blocks of ``page`` in order, less those marked ``<!-- not run: ... -->``."""
    text = page.read_text()
    found = []
    for match in _BLOCK.finditer(text):
        if _NOT_RUN.search(text, 0, match.start()):
            continue
        line = text.count("\n", 0, match.start()) + 2
        rows = [r.strip() for r in match.group(2).strip().splitlines() if r.strip()]
        table = None
        if len(rows) >= 2:
            # header, the |---| line, then the rows
            table = [_cells(rows[0])] + [_cells(r) for r in rows[2:]]
        found.append(Example(page, line, match.group(1), table))
    return found


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def uses_spark(example: Example) -> bool:
    """Whether the example needs Spark: it names ``spark``, imports pyspark or windowstore.spark,
    or reads or writes a Spark stream."""
    return re.search(r"\bspark\b|pyspark|readStream|writeStream", example.code) is not None


def run_page(page: Path, namespace: dict[str, Any], *, spark: bool) -> int:
    """Runs the examples of ``page`` that use Spark (``spark=True``, with a session in
    ``namespace``) or the others, in order in ``namespace``; checks each table the page shows.
    Returns how many ran."""
    ran = 0
    for example in examples(page):
        if uses_spark(example) != spark:
            continue
        ran += 1
        where = f"{page.relative_to(ROOT)}:{example.line}"
        tree = ast.parse(example.code, filename=where)
        last = None
        final = tree.body[-1] if tree.body else None
        if isinstance(final, ast.Expr):
            tree.body.pop()
            last = ast.Expression(final.value)
        exec(compile(tree, where, "exec"), namespace)
        value = eval(compile(last, where, "eval"), namespace) if last is not None else None
        if example.table is not None:
            assert isinstance(value, pa.Table), f"{where}: the block shows a table, got {value!r}"
            assert_table(value, example.table, where)
    return ran


def assert_table(value: pa.Table, shown: list[list[str]], where: str) -> None:
    """``value`` has the columns and rows of the Markdown table ``shown``, as the page prints
    them (numbers and lists in Python's spelling)."""
    header, rows = shown[0], shown[1:]
    assert value.column_names == header, f"{where}: columns {value.column_names} != {header}"
    got = [[_show(v) for v in row.values()] for row in value.to_pylist()]
    assert got == rows, f"{where}: rows\n{got}\n!= the page's\n{rows}"


def _show(value: object) -> str:
    return str(value)
