"""A file input's columns read without Spark (a Parquet footer, a CSV header), with the types
Spark will hand the engines, so that a bad column is reported before Spark starts."""

from __future__ import annotations

import csv
import gzip
import re
from pathlib import Path
from typing import Any

import pyarrow as pa

from windowstore.cli.flags import BadArgument

__all__ = ["file_format", "input_schema", "local_path"]


def file_format(path: str, given: str | None) -> str:
    """``given``, else ``csv`` for a name ending in ``.csv`` or ``.csv.gz``, else ``parquet``."""
    if given:
        return given
    name = path.rstrip("/").lower()
    return "csv" if name.endswith((".csv", ".csv.gz")) else "parquet"


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def local_path(path: str) -> Path | None:
    """The local file system path of ``path``, or ``None`` for a URL (``s3a://``, ``hdfs://``)
    that only Spark can read."""
    if path.startswith("file://"):
        return Path(path.removeprefix("file://"))
    return None if _SCHEME.match(path) else Path(path)


def _data_files(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """The data files of an input file or directory, as Spark lists them (hidden and ``_``
    files skipped, directories searched)."""
    if path.is_file():
        return [path]
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
        and (not suffixes or p.name.lower().endswith(suffixes))
    )


def _spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark's executors hand Python for a Parquet column of Arrow type ``t``
    (Spark reads unsigned integers into wider signed ones, timestamps as microseconds)."""
    if pa.types.is_dictionary(t):
        return _spark_arrow_type(t.value_type)
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC" if t.tz else None)
    widened = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(),
               pa.uint64(): pa.decimal128(20, 0), pa.large_string(): pa.string(),
               pa.string_view(): pa.string(), pa.large_binary(): pa.binary(),
               pa.binary_view(): pa.binary(), pa.date64(): pa.date32()}  # fmt: skip
    return widened.get(t, t)


def input_schema(path: Path, fmt: str) -> pa.Schema | list[str]:
    """The input's schema from a Parquet footer, or its column names from a CSV header."""
    if fmt == "csv":
        files = _data_files(path, ())
        files = [f for f in files if not f.name.lower().endswith((".crc",))]
        if not files:
            raise BadArgument("INPUT", f"no CSV file in {path}")
        first = files[0]
        opener: Any = gzip.open if first.name.lower().endswith(".gz") else open
        try:
            with opener(first, "rt", encoding="utf-8", newline="") as f:
                header = next(csv.reader(f), None)
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            raise BadArgument("INPUT", f"cannot read the CSV header of {first}: {e}") from e
        if not header:
            raise BadArgument("INPUT", f"{first} has no header line")
        return [name.strip() for name in header]
    files = _data_files(path, ())
    if not files:
        raise BadArgument("INPUT", f"no Parquet file in {path}")
    try:
        import pyarrow.dataset as ds

        schema: pa.Schema = ds.dataset(
            [str(f) for f in files] if path.is_dir() else str(path),
            format="parquet",
            partitioning=ds.HivePartitioning.discover() if path.is_dir() else None,
            partition_base_dir=str(path) if path.is_dir() else None,
        ).schema
    except (OSError, pa.ArrowException) as e:
        raise BadArgument("INPUT", f"cannot read a Parquet schema from {path}: {e}") from e
    return pa.schema([pa.field(f.name, _spark_arrow_type(f.type)) for f in schema])
