"""The exception tree and the panic boundary: what reaches Python is a WindowStoreError."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

import windowstore
from windowstore import _core
from windowstore._processor import Emit
from windowstore.exceptions import (
    ArrowError,
    BatchTooLargeError,
    InternalError,
    ProcessorClosedError,
    SchemaError,
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


def test_a_flushed_processor_names_the_method_called() -> None:
    p = windowstore.SessionWindowProcessor(
        key="k", time="t", gap=5, grace=0, idle_timeout=5, aggs=[windowstore.agg.count()]
    )
    p.process(pa.table({"k": ["a"], "t": [1]}), now=0)
    p.flush()
    before = p.to_bytes()
    calls: dict[str, Callable[[], object]] = {
        "flush": p.flush,
        "process": lambda: p.process(pa.table({"k": ["a"], "t": [2]}), now=0),
        "poll": lambda: p.poll(now=100),
        "advance": lambda: p.advance(50, now=100),
    }
    for method, call in calls.items():
        with pytest.raises(ProcessorClosedError, match=rf"^{method}\(\) after flush\(\)") as info:
            call()
        assert info.value.method == method
        assert "create a new processor" in str(info.value)
        assert not isinstance(info.value, ValueError)  # not an argument mistake
    assert p.to_bytes() == before
    assert p.windows().num_rows == 0  # reads still work
    assert ProcessorClosedError.__name__ in windowstore.__all__


@pytest.mark.parametrize(
    ("key", "emit", "make"),
    [
        ("session_start", "final", "session"),
        ("session_end", "final", "session"),
        ("op", "changes", "session"),
        ("window_time", "final", "sliding"),
        ("window_start", "updates", "sliding"),
    ],
)
def test_a_key_column_named_as_an_output_column_says_to_rename_the_key(
    key: str, emit: Emit, make: str
) -> None:
    kind, window = {
        "session": (windowstore.SessionWindowProcessor, {"gap": 5}),
        "sliding": (windowstore.SlidingWindowProcessor, {"time_difference": 5}),
    }[make]
    p = kind(key=key, time="t", grace=0, emit=emit, aggs=[windowstore.agg.count()], **window)
    with pytest.raises(SchemaError, match=f'a key column may not be named "{key}"') as info:
        p.process(pa.table({key: ["a"], "t": [1]}))
    assert info.value.column == key
    assert "rename the key column" in str(info.value)
    assert "alias" not in str(info.value)
