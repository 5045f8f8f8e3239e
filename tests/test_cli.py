"""The ``windowstore`` command without Spark: the demo's own checks, argument parsing.

The Spark commands (sessions, sliding, the demo on Spark) are tested in
tests/spark/test_spark_cli.py.
"""

from __future__ import annotations

import subprocess

import pytest

from windowstore import InvalidWindowSpec, agg
from windowstore.cli import main, parse_agg


def test_demo_checks_itself(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--events", "20000", "--users", "300", "--no-spark", "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "sessions" in out
    assert "independent check" in out
    assert "same sessions" in out
    assert "skipped (--no-spark)" in out


def test_console_script_is_installed() -> None:
    result = subprocess.run(
        ["windowstore", "demo", "--events", "5000", "--users", "50", "--no-spark", "--no-plots"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "events" in result.stdout


def test_bad_arguments_exit_with_usage() -> None:
    with pytest.raises(SystemExit) as info:
        main(["demo", "--events", "many"])
    assert info.value.code == 2


def test_sessions_needs_an_output() -> None:
    with pytest.raises(SystemExit) as info:
        main(["sessions", "in.parquet", "--key", "u", "--time", "ts"])
    assert info.value.code == 2


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("count", agg.count()),
        ("sum:amount", agg.sum("amount")),
        ("max:amount", agg.max("amount")),
        ("top=max:amount", agg.max("amount").alias("top")),
        ("mean:x", agg.mean("x")),
        ("first:page", agg.first("page")),
        ("last:page", agg.last("page")),
        ("collect:page", agg.collect("page")),
        ("collect:page:10", agg.collect("page", 10)),
        ("collect:page:10:drop_newest", agg.collect("page", 10, "drop_newest")),
        ("pages=collect:page:3:fail", agg.collect("page", 3, "fail").alias("pages")),
    ],
)
def test_aggregations_from_the_command_line(text: str, want: agg.Agg) -> None:
    assert parse_agg(text) == want


@pytest.mark.parametrize(
    "text", ["avg:x", "sum", "count:x", "collect:page:ten", "collect:page:3:explode", "sum:a:b"]
)
def test_unreadable_aggregations_name_the_parameter(text: str) -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        parse_agg(text)
    assert info.value.parameter in ("aggs", "overflow")
