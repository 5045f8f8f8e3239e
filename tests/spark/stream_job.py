"""A driver process for the kill test: runs a windowing query until it is killed.

python tests/spark/stream_job.py KIND SOURCE SINK CHECKPOINT PROVIDER
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).parent))
from streams import KINDS, PROVIDER, start_to_parquet


def main(kind: str, source: str, sink: str, checkpoint: str, provider: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("windowstore-stream-job")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if provider != "default":
        builder = builder.config(PROVIDER, provider)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    query = start_to_parquet(
        spark, KINDS[kind], Path(source), Path(sink), Path(checkpoint), processingTime="0 seconds"
    )
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:6])
