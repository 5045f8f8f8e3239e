"""The ``windowstore`` command: the demo runs, checks itself, and reports its sessions."""

from __future__ import annotations

import subprocess
import sys

import pytest

from windowstore.cli import main


def test_demo_checks_itself(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--events", "20000", "--users", "300"]) == 0
    out = capsys.readouterr().out
    assert "sessions" in out
    assert "independent check" in out
    assert "same sessions" in out


def test_console_script_is_installed() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "windowstore.cli", "demo", "--events", "5000", "--users", "50"],
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
