"""The Spark pages' examples run as written, as a new user runs them, and print what the pages
say: each page's Python blocks in order, in a fresh interpreter of this environment, started as
from a virtual environment that is not first on PATH and with PYSPARK_PYTHON unset."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

DOCS = Path(__file__).resolve().parents[2] / "docs"


def blocks(page: str, section: str | None = None) -> list[tuple[str, str]]:
    """The fenced blocks of ``page`` (within the ``## section`` if given): (language, text)."""
    text = (DOCS / page).read_text()
    if section is not None:
        start = text.index(f"## {section}\n")
        following = text.find("\n## ", start + 1)
        text = text[start : following if following > 0 else len(text)]
    return [(m[1], m[2]) for m in re.finditer(r"```(\w*)[^\n]*\n(.*?)```", text, re.S)]


def plain_env() -> dict[str, str]:
    """This environment as a new user's shell has it: this venv's ``bin`` off PATH (so that
    ``python3`` is an interpreter without windowstore), no PYSPARK_PYTHON."""
    venv_bin = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PATH"] = os.pathsep.join(
        p
        for p in env["PATH"].split(os.pathsep)
        if p and Path(p).resolve() != Path(venv_bin).resolve()
    )
    python3 = shutil.which("python3", path=env["PATH"])
    assert python3 is not None
    lacks = subprocess.run([python3, "-c", "import windowstore"], env=env, capture_output=True)
    assert lacks.returncode != 0, f"{python3} imports windowstore: the test would prove nothing"
    return env


def run(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**plain_env(), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_getting_started_on_spark_runs_with_a_plain_local_session(tmp_path: Path) -> None:
    """The snippet's ``SparkSession.builder.master("local[2]")`` workers would run ``python3``
    from PATH, which lacks windowstore; the window function runs its workers on this
    interpreter instead, and the page's table comes out."""
    (_, code), (_, printed) = blocks("getting-started.md", "On Spark")
    done = run(code, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert printed.strip() in done.stdout


def test_a_pyspark_python_without_windowstore_fails_before_any_job(tmp_path: Path) -> None:
    """Chosen explicitly, an interpreter without windowstore is refused on the driver, in one
    message that names PYSPARK_PYTHON and the interpreter to use."""
    (_, code), _ = blocks("getting-started.md", "On Spark")
    python3 = shutil.which("python3", path=plain_env()["PATH"])
    assert python3 is not None
    done = run(code, tmp_path, PYSPARK_PYTHON=python3)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("windowstore.exceptions.WorkerPythonError: ")
    for named in ("PYSPARK_PYTHON", sys.executable, python3, "ModuleNotFoundError"):
        assert named in last
    assert "Lost task" not in done.stderr  # no job ran


def checked(code: str) -> str:
    """``code`` with the checks its comments state: ``# a, b (note), c: note`` under an
    assignment to ``name`` becomes ``assert name.columns == ["a", "b", "c"]``, and
    ``print(...)  # text ...`` asserts what it prints (``...``: anything)."""
    out: list[str] = []
    target = None
    for line in code.splitlines():
        assigned = re.match(r"(\w+) = ", line)
        if assigned:
            target = assigned[1]
        comment = re.match(r"# ([\w, ()]+?)(?::.*)?$", line)
        printed = re.match(r"(\s*)print\((.+)\)\s+# (.+)$", line)
        if comment and target is not None and "," in comment[1]:
            names = [n.strip() for n in re.sub(r"\([^)]*\)", "", comment[1]).split(",")]
            out.append(f"assert {target}.columns == {names!r}, {target}.columns")
        elif printed:
            pattern = ".*".join(re.escape(p.strip()) for p in printed[3].split("..."))
            out.append(f"{printed[1]}_text = str({printed[2]}); print(_text)")
            out.append(f"{printed[1]}assert __import__('re').fullmatch({pattern!r}, _text), _text")
        else:
            out.append(line)
    return "\n".join(out)


def test_the_batch_pages_examples_run_and_print_what_they_say(tmp_path: Path) -> None:
    """docs/how-to/spark-batch.md, its Python blocks in order in one interpreter; each text
    block is what the Python block before it prints."""
    code: list[str] = []
    printed: list[str] = []
    for language, text in blocks("how-to/spark-batch.md"):
        if language == "python":
            code.append(checked(text))
        elif language == "text":
            printed.append(text.strip())
    done = run("\n".join(code), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    for text in printed:
        assert text in done.stdout
    assert printed
