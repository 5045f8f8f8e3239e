"""Every Python example of README.md and docs/ that needs no Spark runs as a new user pastes it,
page by page, and a table the page shows after an example is what the example returns."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_examples import DOCS, ROOT, examples, run_page, uses_spark

PAGES = sorted(
    p
    for p in [ROOT / "README.md", *DOCS.rglob("*.md")]
    if any(not uses_spark(e) for e in examples(p))
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run_as_pasted(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_page(page, {"__name__": "__main__"}, spark=False) > 0


def test_the_pages_with_examples_are_found() -> None:
    names = {str(p.relative_to(ROOT)) for p in PAGES}
    assert {"README.md", "docs/getting-started.md", "docs/concepts/windows.md"} <= names
