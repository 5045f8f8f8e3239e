"""A SparkSession set up for windowstore's jobs (the CLI's, the demo's, the benchmark's), exported
as ``windowstore.spark.spark_session``. (Not ``sessions.py``, which holds session windows.)"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

__all__ = ["ARROW_BATCH_ROWS", "spark_session"]

#: Rows per Arrow batch between the JVM and the Python workers. The engines concatenate a
#: partition's batches anyway; larger batches only mean fewer round trips (benches/bench_spark.py).
ARROW_BATCH_ROWS = 100_000


def spark_session(
    master: str | None = None, conf: Mapping[str, str] | None = None, app: str = "windowstore"
) -> SparkSession:
    """A SparkSession on ``master`` (default ``local[*]``) with quiet logs, no UI, large Arrow
    batches, UTC session time and microsecond Parquet timestamps; ``conf`` entries override
    these.

    The workers run ``spark.pyspark.python`` if given (``./environment/bin/python`` when a
    venv-pack archive is shipped as ``spark.archives=env.tar.gz#environment``), else
    ``PYSPARK_PYTHON``, else this interpreter. (A driver started with plain ``python`` hands the
    workers ``PYSPARK_PYTHON``, so the setting is copied there.)

    Examples:
        >>> spark = spark_session("local[2]", {"spark.sql.shuffle.partitions": "8"})
    """
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Parquet's standard timestamps (Spark's default is the legacy INT96).
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        **(conf or {}),
    }
    if "spark.pyspark.python" in settings:
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master or "local[*]").appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
