"""One local SparkSession for every Spark test (local[2], small shuffles, quiet logs)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from windowstore import agg

from .streams import PROVIDER, PROVIDERS, local_spark

# The workers must run this interpreter (the one windowstore is installed in).
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

#: The numeric aggregates of a clickstream's ``amount`` the adapters' tests compute: those that
#: Spark's own windows compute too.
AMOUNT_AGGS = [agg.count(), agg.sum("amount"), agg.min("amount"), agg.max("amount")]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_spark("windowstore-tests", {"spark.driver.memory": "2g"})
    yield session
    session.stop()


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """Runs the test with the state store provider of the parameter (its name)."""
    name: str = request.param
    chosen = PROVIDERS[name]
    if chosen is None:
        spark.conf.unset(PROVIDER)
    else:
        spark.conf.set(PROVIDER, chosen)
    yield name
    spark.conf.unset(PROVIDER)


def to_spark(spark: SparkSession, table: pa.Table, partitions: int = 3) -> DataFrame:
    """``table`` as a DataFrame spread round-robin over ``partitions`` partitions, so that
    every key's records are split across partitions (the partial-session merge has work)."""
    return spark.createDataFrame(table).repartition(partitions)


def sort_rows(table: pa.Table, by: list[str]) -> pa.Table:
    """``table`` sorted by ``by``, ascending."""
    return table.sort_by([(c, "ascending") for c in by])
