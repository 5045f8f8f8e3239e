"""The ``windowstore`` command without Spark: the demo's own checks, argument parsing, the
checks of arguments and input schemas that run before Spark starts, help and version.

The Spark commands (sessions, sliding, the demo on Spark) are tested in
tests/spark/test_spark_cli.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import windowstore
from windowstore import InvalidWindowSpec, agg
from windowstore.cli import main, on_spark, outputs, progress
from windowstore.cli.flags import cli_words, parse_agg


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
        ("count_distinct:page", agg.count_distinct("page")),
        ("pages=count_distinct:page", agg.count_distinct("page").alias("pages")),
        ("collect_all:page", agg.collect_all("page")),
        ("collect_all:page:5:fail", agg.collect_all("page", 5, "fail")),
    ],
)
def test_aggregations_from_the_command_line(text: str, want: agg.Agg) -> None:
    assert parse_agg(text) == want


@pytest.mark.parametrize(
    "text",
    [
        "avg:x",
        "sum",
        "sum:",
        "count:x",
        "count_distinct",
        "collect:page:ten",
        "collect:page:3:explode",
        "collect_all:page:0",
        "sum:a:b",
        "udf:x",
    ],
)
def test_unreadable_aggregations_name_the_parameter(text: str) -> None:
    with pytest.raises(InvalidWindowSpec) as info:
        parse_agg(text)
    assert info.value.parameter in ("aggs", "overflow", "max_size")


def test_every_aggregate_of_the_api_but_udf_has_a_command_line_form() -> None:
    forms = {"count": "count", "collect": "collect:c", "collect_all": "collect_all:c"}
    for name in agg.__all__:
        if name in ("Agg", "Udf", "udf"):
            continue
        func = getattr(agg, name)
        want = func() if name == "count" else func("c")
        assert parse_agg(forms.get(name, f"{name}:c")) == want, name
    with pytest.raises(InvalidWindowSpec, match="Python function"):
        parse_agg("udf:c")


# Arguments and the input's schema are checked before Spark starts: these tests run with
# pyspark unimportable and the SparkSession factory replaced by a spy that fails the test.


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """pyspark (and windowstore.spark) cannot be imported, and starting a session fails the
    test; returns the list of sessions asked for (always empty when the test passes)."""
    for name in [m for m in sys.modules if m == "pyspark" or m.startswith("pyspark.")]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in ("pyspark", "pyspark.sql", "windowstore.spark"):
        monkeypatch.setitem(sys.modules, name, None)
    asked: list[str] = []

    def spy(*args: object, **kwargs: object) -> NoReturn:
        asked.append(repr(args))
        raise AssertionError("a SparkSession was asked for")

    monkeypatch.setattr(on_spark, "session", spy)
    return asked


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    """``in.parquet``, ``in.csv`` and ``parts/`` (u string, ts int64, s string, amount
    double), ``in.ts.parquet`` (the same with ts a timestamp), ``in.txt`` (not Parquet) and an
    existing directory ``taken``."""
    table = pa.table(
        {"u": ["a", "b"], "ts": [1, 2], "s": ["2024-01-01 10:00:00", "x"], "amount": [1.0, 2.0]}
    )
    pq.write_table(table, tmp_path / "in.parquet")
    pacsv.write_csv(table, tmp_path / "in.csv")
    (tmp_path / "parts").mkdir()
    pq.write_table(table, tmp_path / "parts" / "part-0.parquet")
    (tmp_path / "parts" / "_SUCCESS").write_text("")
    (tmp_path / "taken").mkdir()
    (tmp_path / "in.txt").write_text("not parquet\n")
    times = pa.array([0, 60_000_000], pa.timestamp("us", "UTC"))
    pq.write_table(table.set_column(1, "ts", times), tmp_path / "in.ts.parquet")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], where: Path, *args: str) -> tuple[int, str]:
    """``windowstore ARGS`` with paths relative to ``where``: the exit code and stderr."""
    fixed = [str(where / a) if a.startswith(("in.", "parts", "taken", "out")) else a for a in args]
    code = main(fixed)
    return code, capsys.readouterr().err


SESSIONS = ("sessions", "in.parquet", "-o", "out", "--key", "u", "--time", "ts")
TIMES = ("sessions", "in.ts.parquet", "-o", "out", "--key", "u", "--time", "ts")


@pytest.mark.parametrize(
    ("args", "flag", "words"),
    [
        (("sessions", "in.nowhere", "-o", "out", "--key", "u", "--time", "ts", "--gap", "1m"),
         "argument INPUT", "no such file or directory"),
        ((*SESSIONS, "--gap", "1 eon"), "argument --gap", "unknown unit 'eon'"),
        ((*SESSIONS, "--gap=-5s"), "argument --gap", "must be > 0"),
        (SESSIONS, "argument --gap", "--gap (fixed) or --gap-column and --max-gap"),
        ((*SESSIONS, "--gap", "1m", "--gap-column", "ts"), "argument --gap", "not both"),
        ((*SESSIONS, "--gap-column", "ts"), "argument --max-gap", "--gap-column needs --max-gap"),
        ((*SESSIONS, "--gap", "1m", "--max-gap", "1h"), "argument --max-gap", "--gap-column"),
        ((*SESSIONS[:-1], "zz", "--gap", "1m"), "argument --time", 'column "zz": no such column'),
        ((*SESSIONS, "--gap", "1m", "--key", "v"), "argument --key", 'column "v"'),
        ((*SESSIONS, "--gap", "1m", "--key", "U"), "argument --key",
         'column "U": no such column; did you mean "u"? ('),
        ((*SESSIONS, "--gap", "1m", "--agg", "sum:amout"), "argument --agg",
         'column "amout": no such column; did you mean "amount"? ('),
        ((*SESSIONS, "--gap", "1m", "--master", "bogus://x"), "argument --master",
         "Spark cannot run on 'bogus://x': give local, local[N], local[*]"),
        ((*SESSIONS, "--gap", "1m", "--master", "local[2"), "argument --master",
         "Spark cannot run on 'local[2'"),
        ((*SESSIONS[:-1], "s", "--gap", "1m"), "argument --time", "--time-format"),
        ((*SESSIONS, "--gap", "1m", "--agg", "sum:s"), "argument --agg", "cannot be summed"),
        ((*SESSIONS, "--gap", "1m", "--agg", "avg:s"), "argument --agg", "cannot read 'avg:s'"),
        ((*SESSIONS, "--gap", "1m", "--agg", "collect:s:0"), "argument --agg",
         "'collect:s:0': MAX_SIZE must be a positive int"),
        ((*SESSIONS, "--gap", "1m", "--agg", "collect:s:3:boom"), "argument --agg",
         "'collect:s:3:boom': OVERFLOW 'boom'; expected one of"),
        ((*SESSIONS, "--gap", "1m", "--conf", "x"), "argument --conf", "not KEY=VALUE"),
        ((*SESSIONS, "--gap", "1m", "--partitions", "0"), "argument --partitions", "at least 1"),
        ((*SESSIONS, "--gap", "1m", "--records", "--agg", "count"), "argument --records",
         "no --agg"),
        ((*SESSIONS, "--gap", "1m", "--rejected", "r"), "argument --rejected",
         "--on-invalid drop"),
        (("sessions", "in.parquet", "-o", "taken", "--key", "u", "--time", "ts", "--gap", "1m"),
         "argument -o/--output", "exists; give --overwrite"),
        ((*SESSIONS, "--gap", "1m", "--on-invalid", "drop", "--rejected", "taken"),
         "argument --rejected", "exists; give --overwrite"),
        (("sessions", "in.parquet", "-o", "in.parquet", "--key", "u", "--time", "ts", "--gap",
          "1m", "--overwrite"), "argument -o/--output", "in.parquet is also INPUT"),
        ((*SESSIONS, "--gap", "1m", "--on-invalid", "drop", "--rejected", "out/"),
         "argument --rejected", "is also -o/--output"),
        ((*SESSIONS[:-1], "amount", "--gap", "1m", "--time-format", "yyyy"),
         "argument --time-format", "not text to parse"),
        (("sessions", "in.txt", "-o", "out", "--key", "u", "--time", "t", "--gap", "1m"),
         "argument INPUT", "cannot read a Parquet schema"),
        (("sessions", "in.csv", "-o", "out", "--key", "u", "--time", "t", "--gap", "1m"),
         "argument --time", 'column "t": no such column'),
        (("sessions", "parts", "-o", "out", "--key", "u", "--time", "s", "--gap", "1m"),
         "argument --time", "is a string"),
        (("sliding", "in.parquet", "-o", "out", "--key", "u", "--time", "ts",
          "--time-difference", "5x"), "argument --time-difference", "unknown unit 'x'"),
        (("sliding", "in.csv", "-o", "out", "--key", "u", "--time", "ts", "--agg", "max:zz",
          "--time-difference", "5s"), "argument --agg", 'column "zz"'),
        # A bare integer counts ticks of an integer time column: refused on a timestamp.
        ((*TIMES, "--gap", "30"), "argument --gap",
         '30 is a bare integer, but the time column "ts" is a timestamp; give a length such '
         "as 30m, 90s or 1h30m"),
        ((*TIMES, "--gap", "30m", "--max-duration", "4"), "argument --max-duration",
         "4 is a bare integer"),
        ((*TIMES, "--gap-column", "amount", "--max-gap", "7"), "argument --max-gap",
         "7 is a bare integer"),
        (("sliding", "in.ts.parquet", "-o", "out", "--key", "u", "--time", "ts",
          "--time-difference", "5"), "argument --time-difference", "5 is a bare integer"),
        ((*TIMES, "--gap", "30m", "--time-unit", "s"), "argument --time-unit",
         '--time-unit s is the tick of an integer time column only; the time column "ts" is a '
         "timestamp"),
        (("sessions", "in.csv", "-o", "out", "--key", "u", "--time", "s", "--gap", "30",
          "--time-format", "yyyy-MM-dd HH:mm:ss"), "argument --gap", "30 is a bare integer"),
        ((*SESSIONS[:-1], "s", "--gap", "30m", "--time-format", "yyyy", "--time-unit", "s"),
         "argument --time-unit", "--time-format parses text"),
    ],
)  # fmt: skip
def test_argument_errors_exit_2_naming_the_flag_before_spark(
    inputs: Path,
    no_spark: list[str],
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    flag: str,
    words: str,
) -> None:
    code, err = run(capsys, inputs, *args)
    assert code == 2, err
    assert err.startswith(f"error: {flag}: "), err
    assert words in err
    assert len(err.strip().splitlines()) == 1  # one line, no traceback
    assert not no_spark


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("sessions", "in.parquet", "--key", "u", "--time", "ts"),
         "the following arguments are required: -o/--output"),
        ((*SESSIONS, "--gap"), "argument --gap: expected one argument"),
        ((*SESSIONS, "--gap", "1m", "--clock", "processing"),
         "unrecognized arguments: --clock processing (--clock: a file's records have no arrival"),
        ((*SESSIONS, "--gap", "1m", "--idle-timeout=5m"),
         "unrecognized arguments: --idle-timeout=5m (--idle-timeout: a file is never idle"),
        ((*SESSIONS, "--gap", "1m", "--grace", "5m"), "--grace: a file is read whole"),
        ((*SESSIONS, "--gpa", "1m"), "unrecognized arguments: --gpa 1m (did you mean --gap?)"),
        ((*SESSIONS, "--gap", "1m", "--on-invalid", "skip"),
         "argument --on-invalid: invalid choice: 'skip'"),
        (("sesions",), "argument COMMAND: invalid choice: 'sesions'"),
        (("demo", "--events", "-5"), "argument --events: must be at least 1, got -5"),
        (("demo", "--users", "0"), "argument --users: must be at least 1"),
        (("demo", "--gap-minutes", "0"), "argument --gap-minutes: must be at least 1"),
        (("demo", "--grace-minutes", "-1"), "argument --grace-minutes: must be at least 0"),
        (("demo", "--no-spark", "--master", "local[1]"),
         "argument --master: means nothing with --no-spark"),
        (("demo", "--master", "bogus://x"), "argument --master: Spark cannot run on 'bogus://x'"),
        (("state", "ck", "--master", "bogus://x"),
         "argument --master: Spark cannot run on 'bogus://x'"),
    ],
)  # fmt: skip
def test_a_bad_command_line_is_one_error_line_naming_the_flag(
    inputs: Path,
    no_spark: list[str],
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    words: str,
) -> None:
    fixed = [str(inputs / a) if a.startswith("in.") else a for a in args]
    try:
        code = main(fixed)
    except SystemExit as e:  # argparse's own checks
        code = e.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err  # no usage block, no traceback
    assert err.startswith("error: "), err
    assert words in err
    assert not no_spark


def test_the_commands_offer_no_stream_only_option(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys, "sessions")
    for flag in ("--clock", "--idle-timeout", "--grace"):
        assert flag not in text


def test_hints_name_the_command_line_flags() -> None:
    assert (
        cli_words(
            "windowstore: unusable row (null_key); on_invalid='drop' with return_rejected=True "
            "keeps such rows aside"
        )
        == "windowstore: unusable row (null_key); --on-invalid drop keeps such rows aside"
    )
    assert cli_words("invalid gap: give gap (fixed) or gap_column and max_gap (dynamic)") == (
        "invalid --gap: give --gap (fixed) or --gap-column and --max-gap (dynamic)"
    )
    text = cli_words(
        'column "ts": the time column is a string; parse it into a timestamp first '
        "(pyspark.sql.functions.to_timestamp) or give integer epoch ticks"
    )
    assert "to_timestamp" not in text
    assert "--time-format" in text
    assert cli_words("invalid time_difference: must be >= 0") == (
        "invalid --time-difference: must be >= 0"
    )


@pytest.mark.parametrize(
    "good",
    [
        (*SESSIONS, "--gap", "1m"),
        (*SESSIONS, "--gap", "30", "--time-unit", "s"),  # integers on an integer time column
        (*TIMES, "--gap", "30m", "--max-duration", "4h"),
    ],
)
def test_without_pyspark_a_good_command_says_what_to_install(
    inputs: Path, no_spark: list[str], capsys: pytest.CaptureFixture[str], good: tuple[str, ...]
) -> None:
    code, err = run(capsys, inputs, *good)
    assert code == 2
    assert "pip install 'pyspark" in err
    assert "windowstore[spark]" not in err  # the wheel may not come from a package index
    assert not no_spark


def help_of(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    """The output of ``windowstore COMMAND --help``, whitespace-normalized."""
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_shows_examples_defaults_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    top = help_of(capsys)
    assert "exit codes: 0 done 1 the Spark job failed" in top
    assert "2 bad arguments" in top
    for command in ("sessions", "sliding", "demo"):
        text = help_of(capsys, command)
        assert "examples:" in text
        assert f"windowstore {command}" in text
        assert "exit codes:" in text
        assert "``" not in text  # no reStructuredText
        assert "(default: " in text
    sessions = help_of(capsys, "sessions")
    assert "(drop) (default: error)" in sessions
    assert "default: count" in sessions
    assert "--time-format PATTERN" in sessions
    assert "--overwrite" in sessions
    assert "--verbose" in sessions
    assert "(default: 1000000)" in help_of(capsys, "demo")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.split() == ["windowstore", windowstore.__version__]


def test_counts_are_written_in_words() -> None:
    assert progress.plural(1, "rejected row") == "1 rejected row"
    assert progress.plural(4, "session window") == "4 session windows"
    assert progress.plural(12_345, "row") == "12,345 rows"


def test_spark_is_quiet_unless_verbose(tmp_path: Path) -> None:
    quiet = on_spark.log_options({}, verbose=False)["spark.driver.extraJavaOptions"]
    path = Path(quiet.removeprefix("-Dlog4j2.configurationFile=file:"))
    assert "threshold.level = off" in path.read_text()
    verbose = on_spark.log_options({"spark.driver.extraJavaOptions": "-Dx=1"}, verbose=True)
    option = verbose["spark.driver.extraJavaOptions"]
    assert option.endswith(" -Dx=1")  # the user's own options are kept
    loud = Path(option.split()[0].removeprefix("-Dlog4j2.configurationFile=file:"))
    assert "threshold.level = all" in loud.read_text()


def test_the_demo_timeline_has_a_colour_legend() -> None:
    from windowstore.cli.plots import timeline_figure

    sessions = pa.table(
        {
            "user_id": ["a", "a", "b"],
            "session_start": [0, 3_600_000, 60_000],
            "session_end": [60_000, 3_700_000, 60_000],
            "count": [3, 40, 1],
        }
    )
    fig = timeline_figure(sessions, gap_minutes=30)
    try:
        labels = [ax.get_ylabel() for ax in fig.axes]
        assert "events per session" in labels  # the colour bar's axis
        assert "colour" not in fig.axes[0].get_title()
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


@pytest.mark.parametrize(
    ("path", "single", "fmt", "rejected"),
    [
        ("windows.csv", True, "csv", "windows.rejected.csv"),
        ("out/windows.csv.gz", True, "csv", "out/windows.rejected.csv.gz"),
        ("s3a://b/open.parquet", True, "parquet", "s3a://b/open.rejected.parquet"),
        ("w.JSON", True, "json", "w.rejected.JSON"),
        ("w.jsonl", True, "json", "w.rejected.jsonl"),
        ("sessions.parquet/", False, "parquet", "sessions.parquet.rejected"),
        ("sessions", False, "parquet", "sessions.rejected"),
        ("out.csv/", False, "csv", "out.csv.rejected"),
        (".csv", False, "parquet", ".csv.rejected"),
    ],
)
def test_an_output_that_names_a_file_is_one_file(
    path: str, single: bool, fmt: str, rejected: str
) -> None:
    assert outputs.names_a_file(path) is single
    assert outputs.output_format(path, None) == fmt
    assert outputs.rejected_path(path) == rejected


def test_an_output_format_against_the_files_name_is_refused(
    inputs: Path, no_spark: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert outputs.output_format("out/", "json") == "json"  # a directory takes any format
    code, err = run(capsys, inputs, "sessions", "in.parquet", "-o", "out.csv", "--key", "u",
                    "--time", "ts", "--gap", "1m", "--output-format", "parquet")  # fmt: skip
    assert code == 2
    assert err.startswith("error: argument --output-format: parquet into ")
    assert "names a csv file" in err
    assert not no_spark
