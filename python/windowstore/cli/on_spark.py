"""What the commands do on Spark, imported lazily: say what to install when pyspark is missing,
run a job on a session (Spark's log lines off unless ``--verbose``), read Parquet or CSV, count
rows as a job writes them, and name a failed job's error. Nothing here imports
pyspark until it is called."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from windowstore.cli.causes import root_cause, show_trace
from windowstore.cli.progress import Progress, Say

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

__all__ = [
    "counting",
    "install_hint",
    "log_options",
    "observed",
    "pyspark_missing",
    "read",
    "run_job",
    "session",
    "start_failure",
]


def install_hint() -> str:
    """How to install the Spark extra's packages into this environment, naming the packages
    (with the windowstore wheel's own version bounds) rather than a package index."""
    try:
        requirements = metadata.requires("windowstore") or []
    except metadata.PackageNotFoundError:
        requirements = []
    spark = [r.split(";")[0].strip() for r in requirements if 'extra == "spark"' in r]
    spark = spark or ["pyspark>=4.1,<5", "pandas<3", "matplotlib>=3.8", "protobuf>=5"]
    packages = " ".join(f"'{r.replace(' ', '')}'" for r in spark)
    return f"{sys.executable} -m pip install {packages}"


def pyspark_missing(command: str) -> bool:
    """Whether ``windowstore COMMAND`` cannot run because pyspark (or ``windowstore.spark``)
    cannot be imported; if so, says so on stderr, with what to install."""
    try:
        import windowstore.spark  # noqa: F401
    except ImportError as e:
        print(
            f"error: windowstore {command} runs on Spark, and pyspark cannot be imported ({e}); "
            f"install the Spark extra's packages: {install_hint()}",
            file=sys.stderr,
        )
        return True
    return False


def run_job(
    args: argparse.Namespace, conf: dict[str, str], job: Callable[[SparkSession, Say], int]
) -> int:
    """Runs ``job`` on a session (``session``: ``--master``, ``conf``, ``--verbose``) with its
    stages' progress on stderr, prints the time taken if it succeeded, stops the session if it
    is ours, and returns ``job``'s exit code."""
    began = time.perf_counter()
    say = Say(began)
    say(f"starting Spark ({args.master or 'local[*]'})")
    try:
        spark, owned = session(args.master, conf, f"windowstore {args.command}", args.verbose)
    except Exception as e:  # a master URL Spark cannot read, no Java, a bad --conf value
        show_trace(e, args.verbose)
        message, code = start_failure(args.master, e)
        print(f"error: {message}", file=sys.stderr)
        return code
    try:
        with Progress(spark, say):
            code = job(spark, say)
        if code == 0:
            print(f"done in {time.perf_counter() - began:.1f}s on {spark.sparkContext.master}")
        return code
    finally:
        if owned:
            spark.stop()


_LOG4J = """\
# Spark's log lines for the windowstore command: quiet (nothing) unless --verbose. The root
# level stays WARN either way (Spark prints "Setting default log level" when it differs from
# its shell default); the quiet appender's filter drops every line.
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = {threshold}
"""


def log_options(conf: dict[str, str], verbose: bool) -> dict[str, str]:
    """``conf`` with the driver's log4j set up: quiet (nothing but the command's own lines)
    unless ``verbose`` (Spark's warnings and errors). A ``spark.driver.extraJavaOptions`` of
    the user's is kept, after the setting."""
    name = "verbose" if verbose else "quiet"
    path = Path(tempfile.gettempdir()) / f"windowstore-{os.getuid()}-log4j2-{name}.properties"
    text = _LOG4J.format(threshold="all" if verbose else "off")
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    option = f"-Dlog4j2.configurationFile=file:{path}"
    given = conf.get("spark.driver.extraJavaOptions")
    return {**conf, "spark.driver.extraJavaOptions": f"{option} {given}" if given else option}


def session(
    master: str | None, conf: dict[str, str], app: str, verbose: bool = False
) -> tuple[SparkSession, bool]:
    """The active SparkSession if there is one (running inside a Spark program: it is not
    stopped afterwards), else a new one on ``master``; and whether it is ours to stop.
    Spark's own log lines are off unless ``verbose``."""
    from pyspark.sql import SparkSession

    from windowstore.spark import spark_session

    if not verbose:
        warnings.filterwarnings("ignore", module="pyspark")
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    spark = spark_session(master, log_options(conf, verbose), app=app)
    if verbose:
        spark.sparkContext.setLogLevel("WARN")
    return spark, True


def read(spark: SparkSession, path: str, fmt: str) -> DataFrame:
    """``path`` as a DataFrame: CSV with a header (types inferred), or Parquet."""
    if fmt == "csv":
        return spark.read.csv(path, header=True, inferSchema=True)
    return spark.read.parquet(path)


def counting(df: DataFrame, name: str) -> tuple[DataFrame, Observation]:
    """``df`` observed by a new observation ``name`` that counts its ``rows`` (``observed``)
    as an action reads them."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    observation = Observation(name)
    return df.observe(observation, F.count(F.lit(1)).alias("rows")), observation


def observed(observation: Observation, timeout: float = 60.0) -> int | None:
    """The ``rows`` an observation counted during the action that just ran, or ``None`` if
    Spark has not reported it within ``timeout`` seconds (``Observation.get`` would wait
    forever)."""
    box: list[int] = []

    def get() -> None:
        box.append(int(observation.get["rows"]))

    thread = threading.Thread(target=get, name="windowstore-observation", daemon=True)
    thread.start()
    thread.join(timeout)
    return box[0] if box else None


def start_failure(master: str | None, e: BaseException) -> tuple[str, int]:
    """What to say when a session on ``master`` did not start (raising ``e``), and the exit
    code: 2 naming ``--master`` for a URL Spark cannot read, else 1."""
    cause = root_cause(e)
    if "Master URL" in cause:
        return f"argument --master: Spark cannot start on {master!r}: {cause}", 2
    return f"Spark did not start on {master or 'local[*]'}: {cause}", 1
