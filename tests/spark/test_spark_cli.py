"""``windowstore sessions`` / ``sliding`` / ``demo`` on real Spark, with Parquet and CSV files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import windowstore
from windowstore import agg
from windowstore.cli import main
from windowstore.clickstream import clickstream
from windowstore.spark import read_state

from .compare import assert_same_windows
from .test_spark_read_state import run_sessions

pytestmark = pytest.mark.spark


def read_dir(path: Path, fmt: str = "parquet") -> pa.Table:
    """A directory of part files, or one file."""
    if path.is_file():
        return pacsv.read_csv(path) if fmt == "csv" else pq.read_table(path)
    if fmt == "csv":
        return pa.concat_tables([pacsv.read_csv(p) for p in sorted(path.glob("part-*.csv"))])
    return ds.dataset(path, format="parquet").to_table()


def clicks(tmp_path: Path, events: int, users: int, seed: int) -> tuple[pa.Table, str]:
    """A clickstream written to ``clicks.parquet`` in ``tmp_path``: the table, and the file."""
    table = clickstream(events, users=users, seed=seed)
    pq.write_table(table, tmp_path / "clicks.parquet")
    return table, str(tmp_path / "clicks.parquet")


@pytest.mark.usefixtures("spark")
def test_sessions_parquet_in_and_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table, clicks_file = clicks(tmp_path, 20_000, users=100, seed=1)
    out = tmp_path / "sessions"
    args = ["sessions", clicks_file, "-o", str(out), "--key", "user_id"]
    args += ["--time", "ts", "--gap", "30m", "--agg", "count", "--agg", "total=sum:amount"]
    assert main(args) == 0
    want = windowstore.session_windows(
        table,
        key="user_id",
        time="ts",
        gap="30m",
        aggs=[agg.count(), agg.sum("amount").alias("total")],
    )
    assert_same_windows(read_dir(out), want, ["user_id", "session_start"])
    captured = capsys.readouterr()
    assert f"{want.num_rows:,} session windows written" in captured.out
    assert f"read {table.num_rows:,} rows" in captured.err  # progress, on stderr
    # An existing output is replaced only with --overwrite.
    assert main(args) == 2
    assert "argument -o/--output" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert_same_windows(read_dir(out), want, ["user_id", "session_start"])


@pytest.mark.usefixtures("spark")
def test_sessions_records_tag_every_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table, clicks_file = clicks(tmp_path, 3_000, users=30, seed=2)
    out = tmp_path / "tagged"
    args = ["sessions", clicks_file, "-o", str(out), "--key", "user_id"]
    assert main([*args, "--time", "ts", "--gap", "10m", "--records"]) == 0
    want = windowstore.session_windows(table, key="user_id", time="ts", gap="10m",
                                       output="records")  # fmt: skip
    order = [("session_id", "ascending"), ("ts", "ascending"), ("amount", "ascending")]
    assert read_dir(out).sort_by(order).to_pylist() == want.sort_by(order).to_pylist()
    assert f"{table.num_rows:,} tagged rows written" in capsys.readouterr().out


@pytest.mark.usefixtures("spark")
def test_sessions_max_duration_caps_every_session(tmp_path: Path) -> None:
    table, clicks_file = clicks(tmp_path, 3_000, users=30, seed=3)
    out = tmp_path / "capped"
    args = ["sessions", clicks_file, "-o", str(out), "--key", "user_id"]
    assert main([*args, "--time", "ts", "--gap", "30m", "--max-duration", "2m"]) == 0
    want = windowstore.session_windows(table, key="user_id", time="ts", gap="30m",
                                       max_duration="2m", aggs=[agg.count()])  # fmt: skip
    uncapped = windowstore.session_windows(table, key="user_id", time="ts", gap="30m")
    assert want.num_rows > uncapped.num_rows
    assert_same_windows(read_dir(out), want, ["user_id", "session_start"])
    assert main([*args, "--time", "ts", "--gap", "30m", "--max-duration", "0", "--overwrite"]) == 2


@pytest.mark.usefixtures("spark")
def test_without_agg_the_output_has_a_count(tmp_path: Path) -> None:
    table, clicks_file = clicks(tmp_path, 2_000, users=20, seed=3)
    args = ["sliding", clicks_file, "-o", str(tmp_path / "w")]
    assert main([*args, "--key", "user_id", "--time", "ts", "--time-difference", "1m"]) == 0
    want = windowstore.sliding_windows(
        table, key="user_id", time="ts", time_difference="1m", aggs=[agg.count()]
    )
    got = read_dir(tmp_path / "w")
    assert "count" in got.column_names
    assert_same_windows(got, want, ["user_id", "window_start"])


@pytest.mark.usefixtures("spark")
def test_a_text_time_column_parsed_with_time_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    when = ["2024-03-01 10:00:00", "2024-03-01 10:10:00", "not a time", "2024-03-01 12:00:00"]
    table = pa.table({"u": ["a", "a", "a", "b"], "when": when, "amount": [1, 2, 3, 4]})
    pacsv.write_csv(table, tmp_path / "c.csv")
    out, rejected = tmp_path / "s.csv", tmp_path / "bad.csv"
    options = ["--key", "u", "--time", "when", "--time-format", "yyyy-MM-dd HH:mm:ss"]
    options += ["--gap", "30m", "--agg", "sum:amount"]
    args = ["sessions", str(tmp_path / "c.csv"), "-o", str(out), *options]
    assert main([*args, "--on-invalid", "drop", "--rejected", str(rejected)]) == 0
    got = read_dir(out, "csv").sort_by("u").to_pylist()
    assert [(r["u"], r["sum_amount"]) for r in got] == [("a", 3), ("b", 4)]
    assert str(got[0]["session_start"]).startswith("2024-03-01 10:00:00")
    assert str(got[0]["session_end"]).startswith("2024-03-01 10:10:00")
    bad = read_dir(rejected, "csv").to_pylist()
    assert [(r["when"], r["reason"]) for r in bad] == [("not a time", "null_time")]
    assert "1 rejected row written to" in capsys.readouterr().out
    # Under --on-invalid error the unparsable time fails the job, saying why.
    assert main(["sessions", str(tmp_path / "c.csv"), "-o", str(tmp_path / "x"), *options]) == 1
    err = capsys.readouterr().err
    assert "null_time" in err
    assert "--time-format" in err
    assert "--on-invalid drop" in err


@pytest.mark.usefixtures("spark")
def test_sliding_csv_in_and_out_with_rejected_rows(tmp_path: Path) -> None:
    table = clickstream(3_000, users=30, seed=2)
    users = table["user_id"].to_pylist()
    users[5] = None
    table = table.set_column(0, "user_id", pa.array(users, pa.string()))
    pacsv.write_csv(table, tmp_path / "clicks.csv")
    out = tmp_path / "sliding.csv"
    args = ["sliding", str(tmp_path / "clicks.csv"), "-o", str(out), "--key", "user_id"]
    args += ["--time", "ts", "--time-difference", "60000", "--agg", "count"]
    args += ["--agg", "collect:amount:3", "--on-invalid", "drop"]
    assert main(args) == 0
    got = read_dir(out, "csv")
    clean = table.filter(pa.compute.is_valid(table["user_id"]))
    want = windowstore.sliding_windows(
        clean, key="user_id", time="ts", time_difference=60_000, aggs=[agg.count()]
    )
    assert got.num_rows == want.num_rows
    assert sorted(got["count"].to_pylist()) == sorted(want["count"].to_pylist())
    assert got["collect_amount"][0].as_py().startswith("[")  # lists are JSON in CSV
    rejected = read_dir(tmp_path / "sliding.rejected.csv", "csv")
    assert rejected["reason"].to_pylist() == ["null_key"]


@pytest.mark.usefixtures("spark")
def test_bad_input_exits_2_naming_the_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pq.write_table(clickstream(100, users=5), tmp_path / "c.parquet")
    args = ["sessions", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "o"), "--key", "user"]
    assert main([*args, "--time", "ts", "--gap", "1m"]) == 2
    assert '"user"' in capsys.readouterr().err
    args[-1] = "user_id"
    assert main([*args, "--time", "ts", "--gap", "1 eon"]) == 2
    assert "gap" in capsys.readouterr().err
    assert main([*args, "--time", "ts", "--gap", "1m", "--agg", "avg:amount"]) == 2
    assert "avg:amount" in capsys.readouterr().err


@pytest.mark.usefixtures("spark")
def test_a_failing_row_fails_the_command_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pq.write_table(pa.table({"u": ["a", None], "ts": [1, 2]}), tmp_path / "c.parquet")
    args = ["sessions", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "o"), "--key", "u"]
    assert main([*args, "--time", "ts", "--gap", "10"]) == 1
    err = capsys.readouterr().err
    assert "null_key" in err
    assert "--on-invalid drop keeps such rows aside" in err  # the flag, not Python's parameter
    assert "return_rejected" not in err


def test_state_prints_and_writes_the_open_windows(
    tmp_path: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = run_sessions(spark, tmp_path)
    want = read_state(spark, checkpoint).toArrow()
    assert main(["state", str(checkpoint), "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert f"{want.num_rows} open windows at micro-batch" in out
    assert "session_start" in out
    assert "(the first 2;" in out
    assert main(["state", str(checkpoint), "-o", str(tmp_path / "open")]) == 0
    assert f"{want.num_rows} open windows of micro-batch" in capsys.readouterr().out
    written = spark.read.parquet(str(tmp_path / "open")).toArrow()  # INT96 timestamps here
    assert_same_windows(written, want, ["k", "session_start"])
    assert main(["state", str(tmp_path / "open"), "-o", str(tmp_path / "x")]) == 2
    assert "argument CHECKPOINT" in capsys.readouterr().err
    assert main(["state", str(checkpoint), "-o", str(tmp_path / "open.parquet")]) == 0
    assert (tmp_path / "open.parquet").is_file()
    written = spark.read.parquet(str(tmp_path / "open.parquet")).toArrow()
    assert_same_windows(written, want, ["k", "session_start"])


@pytest.mark.usefixtures("spark")
def test_demo_on_spark_writes_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--events", "30000", "--users", "300", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "same sessions from windowstore.spark" in out
    for name in ("sessions_per_user.png", "session_lengths.png"):
        png = (tmp_path / name).read_bytes()
        assert png.startswith(b"\x89PNG")
        assert len(png) > 10_000
        assert str(tmp_path / name) in out


def test_a_failed_job_prints_one_error_line_and_no_spark_logs(
    tmp_path: Path, spark: SparkSession
) -> None:
    del spark  # only to run after the session fixture exists (any order works)
    pq.write_table(pa.table({"u": ["a", None], "ts": [1, 2]}), tmp_path / "c.parquet")
    command = ["windowstore", "sessions", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "o")]
    command += ["--key", "u", "--time", "ts", "--gap", "10", "--master", "local[1]"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 1, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1
    assert "null_key" in errors[0]
    assert errors[0] == lines[-1]
    # No Java stack trace, no Spark log lines; only the JVM's own note may precede ours.
    others = [line for line in lines[:-1] if not line.startswith("[")]
    assert all(line.startswith("WARNING: Using incubator modules") for line in others), others


def test_console_script_runs_a_spark_job(tmp_path: Path, spark: SparkSession) -> None:
    del spark  # only to run after the session fixture exists (any order works)
    pq.write_table(clickstream(2_000, users=20), tmp_path / "c.parquet")
    command = ["windowstore", "sessions", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "s")]
    command += ["--key", "user_id", "--time", "ts", "--gap", "5m", "--agg", "count"]
    command += ["--master", "local[1]", "--conf", "spark.sql.shuffle.partitions=2"]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "windows written" in result.stdout
    assert read_dir(tmp_path / "s").num_rows > 20


@pytest.mark.usefixtures("spark")
def test_an_output_named_as_a_file_is_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, clicks_file = clicks(tmp_path, 3_000, users=30, seed=4)
    pages = pa.array([f"p{i % 7}" if i % 5 else None for i in range(table.num_rows)])
    table = table.append_column("page", pages)
    pq.write_table(table, clicks_file)
    aggs = ["--agg", "count_distinct:page", "--agg", "collect_all:page", "--agg", "count"]
    args = ["--key", "user_id", "--time", "ts", "--gap", "5m", *aggs]
    want = windowstore.session_windows(
        table, key="user_id", time="ts", gap="5m",
        aggs=[agg.count_distinct("page"), agg.collect_all("page"), agg.count()],
    )  # fmt: skip
    order = [("user_id", "ascending"), ("session_start", "ascending")]
    for name in ("w.parquet", "w.csv", "w.json"):
        out = tmp_path / name
        assert main(["sessions", clicks_file, "-o", str(out), *args]) == 0
        assert out.is_file(), name
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".w")]  # no leftovers
        if name.endswith(".parquet"):
            got = pq.read_table(out)
            assert_same_windows(got, want, ["user_id", "session_start"])
        elif name.endswith(".csv"):
            got = pacsv.read_csv(out).sort_by(order)
            assert (
                got["count_distinct_page"].to_pylist()
                == want.sort_by(order)["count_distinct_page"].to_pylist()
            )
            assert json.loads(got["collect_all_page"][0].as_py()) == (
                want.sort_by(order)["collect_all_page"][0].as_py()
            )
        else:
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            assert len(rows) == want.num_rows
            assert sorted(r["count_distinct_page"] for r in rows) == sorted(
                want["count_distinct_page"].to_pylist()
            )
    capsys.readouterr()
    # An existing file is replaced only with --overwrite; a directory path stays a directory.
    assert main(["sessions", clicks_file, "-o", str(tmp_path / "w.csv"), *args]) == 2
    assert "exists; give --overwrite" in capsys.readouterr().err
    assert main(["sessions", clicks_file, "-o", str(tmp_path / "w.csv"), *args, "--overwrite"]) == 0
    assert (tmp_path / "w.csv").is_file()
    assert main(["sessions", clicks_file, "-o", str(tmp_path / "d.csv") + "/", *args]) == 0
    assert (tmp_path / "d.csv").is_dir()
    assert read_dir(tmp_path / "d.csv", "csv").num_rows == want.num_rows


@pytest.mark.usefixtures("spark")
def test_a_bare_integer_on_a_csv_timestamp_column_is_refused_before_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    when = ["2024-03-01 10:00:00", "2024-03-01 10:10:00"]
    pacsv.write_csv(pa.table({"u": ["a", "a"], "when": when}), tmp_path / "c.csv")
    args = ["sessions", str(tmp_path / "c.csv"), "-o", str(tmp_path / "s.csv")]
    args += ["--key", "u", "--time", "when"]
    assert main([*args, "--gap", "30"]) == 2  # Spark infers a timestamp: 30 would be 30 us
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("error: argument --gap: 30 is a bare integer, but the time column ")
    assert "is a timestamp; give a length such as 30m" in err
    assert not (tmp_path / "s.csv").exists()
    assert main([*args, "--gap", "30m"]) == 0
    assert pacsv.read_csv(tmp_path / "s.csv").num_rows == 1


def test_workers_that_cannot_start_are_named_before_the_job(
    tmp_path: Path, spark: SparkSession
) -> None:
    """An archive's interpreter that is not there: windowstore.spark's probe task fails before
    the job, and its root cause (the JVM's, through Py4J) is the one line printed."""
    del spark  # only to run after the session fixture exists (any order works)
    pq.write_table(pa.table({"u": ["a"], "ts": [1]}), tmp_path / "c.parquet")
    command = [sys.executable, "-m", "windowstore.cli", "sessions", str(tmp_path / "c.parquet")]
    command += ["-o", str(tmp_path / "o"), "--key", "u", "--time", "ts", "--gap", "10"]
    command += ["--master", "local[1]", "--conf", "spark.pyspark.python=./environment/bin/python"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    assert lines[-1].startswith("error: ")
    assert (
        "Spark's Python workers (./environment/bin/python) cannot import windowstore on the "
        'executors (Cannot run program "./environment/bin/python": error=2, No such file or '
        "directory): ship it in a packed virtual environment (spark.archives)"
    ) in lines[-1]
    assert not any("Traceback" in line or line.startswith("\tat ") for line in lines)
    assert not (tmp_path / "o").exists()
    verbose = subprocess.run([*command, "--verbose"], capture_output=True, text=True, check=False)
    assert verbose.returncode == 2
    assert verbose.stderr.splitlines()[-1] == lines[-1]
