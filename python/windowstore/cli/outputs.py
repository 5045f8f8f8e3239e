"""Where and how a command writes its result: a path that names a file (``windows.csv``,
``open.parquet``, ``sessions.json``) gets one file; any other path (``sessions/``, ``out``) a
directory of Spark part files. Parquet, CSV (collected lists as JSON text) or JSON Lines."""

from __future__ import annotations

import shutil
import uuid
from typing import TYPE_CHECKING, Any

from windowstore.cli.flags import BadArgument
from windowstore.cli.inputs import local_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["FORMATS", "names_a_file", "output_format", "rejected_path", "write"]

#: The output formats, by the name endings that choose them.
FORMATS = {
    ".parquet": "parquet",
    ".csv": "csv",
    ".csv.gz": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".json.gz": "json",
}


def _ending(path: str) -> str | None:
    """The ending of ``FORMATS`` that ``path`` ends with (the longest), if any."""
    name = path.lower()
    found = [e for e in FORMATS if name.endswith(e) and len(name) > len(e)]
    return max(found, key=len) if found else None


def names_a_file(path: str) -> bool:
    """Whether ``path`` names one file (it ends with a format's ending such as ``.csv``, and
    not with ``/``) rather than a directory."""
    return not path.endswith("/") and _ending(path) is not None


def output_format(path: str, given: str | None) -> str:
    """``given`` (``--output-format``), else the format ``path``'s ending names, else Parquet.

    Raises:
        BadArgument: ``given`` is not the format of the file ``path`` names.
    """
    ending = _ending(path.rstrip("/"))
    named = FORMATS[ending] if ending else None
    if given and named and given != named and names_a_file(path):
        raise BadArgument(
            "--output-format",
            f"{given} into {path}, which names a {named} file; name the file {given}'s way "
            f"or end the path with / for a directory",
        )
    return given or named or "parquet"


def rejected_path(output: str) -> str:
    """Where rejected rows go by default: beside a file output, the same kind of file
    (``windows.csv`` -> ``windows.rejected.csv``); under a directory output, ``OUTPUT.rejected``."""
    ending = _ending(output)
    if ending is None or not names_a_file(output):
        return output.rstrip("/") + ".rejected"
    return f"{output[: -len(ending)]}.rejected{output[-len(ending) :]}"


def write(df: DataFrame, path: str, fmt: str, overwrite: bool) -> None:
    """Writes ``df`` to ``path`` as ``fmt``, replacing it only if ``overwrite``: one file if
    ``path`` names one (the rows gathered into one partition after they are computed, written
    beside it and moved into place), else a directory of part files."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    if fmt == "csv":  # CSV has no arrays: collected lists are written as JSON
        df = df.select(
            *[
                F.to_json(F.col(f.name)).alias(f.name)
                if isinstance(f.dataType, ArrayType)
                else F.col(f.name)
                for f in df.schema.fields
            ]
        )
    single = names_a_file(path)
    target = _beside(path) if single else path
    writer = df.repartition(1).write if single else df.write
    writer = writer.mode("overwrite" if overwrite and not single else "errorifexists")
    if path.lower().endswith(".gz"):
        writer = writer.option("compression", "gzip")
    if fmt == "csv":  # quotes inside a value doubled (RFC 4180), not Spark's default \"
        writer.option("escape", '"').csv(target, header=True)
    elif fmt == "json":
        writer.json(target)
    else:
        writer.parquet(target)
    if single:
        _move_part(df, target, path, overwrite)


def _beside(path: str) -> str:
    """A hidden directory beside ``path`` (Spark's readers skip names starting with ``.``),
    on the same file system so that the part file moves rather than copies where it can."""
    parent, _, name = path.rstrip("/").rpartition("/")
    hidden = f".{name}.windowstore-{uuid.uuid4().hex[:12]}"
    return f"{parent}/{hidden}" if parent else hidden


def _move_part(df: DataFrame, written: str, path: str, overwrite: bool) -> None:
    """Moves the one part file Spark wrote under ``written`` to ``path`` (replacing what is
    there only if ``overwrite``) and removes ``written``."""
    local = local_path(written)
    if local is not None:
        parts = sorted(p for p in local.iterdir() if p.name.startswith("part-"))
        target = local_path(path)
        assert target is not None  # a local directory beside a local path
        try:
            if len(parts) != 1:
                raise RuntimeError(f"Spark wrote {len(parts)} part files for {path}, not one")
            if target.is_dir() and overwrite:
                shutil.rmtree(target)
            elif target.exists() and not overwrite:
                raise FileExistsError(f"{path} exists; give --overwrite to replace it")
            parts[0].replace(target)
        finally:
            shutil.rmtree(local, ignore_errors=True)
        return
    _move_part_hadoop(df, written, path, overwrite)


def _move_part_hadoop(df: DataFrame, written: str, path: str, overwrite: bool) -> None:
    """``_move_part`` on a file system only Spark reaches (``s3a://``, ``hdfs://``), through
    Hadoop's ``FileSystem`` API."""
    spark: Any = df.sparkSession
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    source_dir = jvm.org.apache.hadoop.fs.Path(written)
    fs = source_dir.getFileSystem(conf)
    target = jvm.org.apache.hadoop.fs.Path(path)
    try:
        paths = [status.getPath() for status in fs.listStatus(source_dir)]
        parts = [p for p in paths if str(p.getName()).startswith("part-")]
        if len(parts) != 1:
            raise RuntimeError(f"Spark wrote {len(parts)} part files for {path}, not one")
        if fs.exists(target):
            if not overwrite:
                raise FileExistsError(f"{path} exists; give --overwrite to replace it")
            fs.delete(target, True)
        if not fs.rename(parts[0], target):
            raise OSError(f"cannot move {parts[0]} to {path}")
    finally:
        fs.delete(source_dir, True)
