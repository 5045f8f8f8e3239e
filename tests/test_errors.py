"""The exception tree and the panic boundary: what reaches Python is a WindowStoreError."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

import windowstore
from windowstore import _core
from windowstore.exceptions import (
    ArrowError,
    BatchTooLargeError,
    InternalError,
    StoreCapacityError,
    WindowStoreError,
)


@pytest.mark.parametrize("cls", [ArrowError, BatchTooLargeError, InternalError, StoreCapacityError])
def test_new_exceptions_are_exported_window_store_errors(cls: type[Exception]) -> None:
    assert issubclass(cls, WindowStoreError)
    assert not issubclass(cls, ValueError)  # none is the caller's argument mistake
    assert cls.__name__ in windowstore.__all__
    assert getattr(windowstore, cls.__name__) is cls


def test_a_panic_becomes_internal_error() -> None:
    with pytest.raises(InternalError, match="please report it") as info:
        _core._panic("boom at row 3")
    assert "panicked: boom at row 3" in str(info.value)
    # Still usable afterwards: the panic left nothing behind.
    table = pa.table({"k": ["a"], "ts": [0]})
    assert windowstore.session_windows(table, key="k", time="ts", gap=5).num_rows == 1


def test_a_failing_input_stream_is_an_arrow_error() -> None:
    schema = pa.schema([("k", pa.string()), ("ts", pa.int64())])

    def batches() -> Iterator[pa.RecordBatch]:
        yield pa.record_batch({"k": ["a"], "ts": [0]}, schema=schema)
        raise OSError("the source went away")

    stream = pa.RecordBatchReader.from_batches(schema, batches())
    with pytest.raises(ArrowError, match="reading the Arrow input") as info:
        windowstore.sliding_windows(stream, key="k", time="ts", time_difference=5)
    assert info.value.context == "reading the Arrow input"
    assert "the source went away" in str(info.value)
