"""The driver program of the cluster test: runs windowstore.spark on a standalone cluster whose
executors get windowstore from a venv-pack archive shipped through ``spark.archives``.

Usage: python cluster_job.py MASTER_URL ARCHIVE INPUT_PARQUET OUTPUT_DIR
Writes OUTPUT_DIR/sessions and OUTPUT_DIR/sliding (Parquet) and OUTPUT_DIR/executors.txt (the
windowstore module file each executor imported).
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from windowstore import agg
from windowstore.spark import session_windows, sliding_windows

AGGS = [agg.count(), agg.sum("amount"), agg.max("amount"), agg.collect("amount", max_size=3)]


def where_windowstore(_: object) -> str:
    import windowstore

    return str(windowstore.__file__)


def main() -> None:
    master, archive, source, out = sys.argv[1:5]
    # A driver started with plain `python` (not spark-submit) gives the executors the Python of
    # PYSPARK_PYTHON: the interpreter inside the shipped archive, as it is unpacked there.
    os.environ["PYSPARK_PYTHON"] = "./environment/bin/python"
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master(master)
        .appName("windowstore cluster test")
        .config("spark.archives", f"{archive}#environment")
        .config("spark.pyspark.python", "./environment/bin/python")
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.executor.memory", "768m")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.read.parquet(source).repartition(4)
        sessions = session_windows(df, key="user_id", time="ts", gap="30m", aggs=AGGS)
        sessions.write.parquet(f"{out}/sessions")
        sliding = sliding_windows(df, key="user_id", time="ts", time_difference="5m", aggs=AGGS)
        sliding.write.parquet(f"{out}/sliding")
        files = spark.sparkContext.parallelize(range(4), 4).map(where_windowstore).collect()
        with open(f"{out}/executors.txt", "w") as f:
            f.write("\n".join(files))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
