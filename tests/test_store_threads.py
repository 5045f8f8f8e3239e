"""One SessionStore shared by threads: calls serialize (reads together, a write alone), never
"RuntimeError: Already borrowed", and every read sees the store between two writes."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from windowstore import SessionStore

WRITERS = 4
PUTS = 400  # at least, per writer
READS = 10  # at least, by the readers while the writers write
PRELOAD = 5_000


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Threads switch as often as the interpreter allows, so calls interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def run_threads(targets: list[Callable[[], None]]) -> list[BaseException]:
    errors: list[BaseException] = []

    def wrapped(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=wrapped, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def writer_sessions(found: list[tuple[bytes, int, int, bytes]], writer: int) -> list[int]:
    """The indexes of writer `writer`'s sessions among `found`, in order."""
    key = f"w{writer}".encode()
    return sorted(int(v) for k, _, _, v in found if k == key and v != b"gone")


@pytest.mark.usefixtures("fast_switching")
def test_reads_during_writes_from_many_threads(tmp_path: Path) -> None:
    store = SessionStore(10**12, segment_interval=1_000)
    for i in range(PRELOAD):  # scans of this many sessions release the GIL for a while
        store.put(f"k{i % 100}", i, i, b"preload")
    done = threading.Event()
    snapshots: list[list[tuple[bytes, int, int, bytes]]] = []

    puts = [0] * WRITERS

    def writer(w: int) -> Callable[[], None]:
        def run() -> None:
            i = 0
            while i < PUTS or len(snapshots) < READS:
                store.put(f"w{w}", i * 10, i * 10 + 5, str(i).encode())
                store.put(f"w{w}", i * 10, i * 10 + 1, b"gone")
                assert store.remove(f"w{w}", i * 10, i * 10 + 1)
                i += 1
            puts[w] = i

        return run

    def reader() -> None:
        while not done.is_set():
            found = store.find_sessions_by_end(0, 10**9)
            snapshots.append([s for s in found if s[0].startswith(b"w")])
            assert len(store.fetch_range("k0", "k9")) > 0
            assert (store.metrics()["live_sessions"] or 0) >= PRELOAD
            assert store.to_arrow().num_rows >= PRELOAD
            assert store.find_sessions("w0", 0, 10**9) is not None
            assert store.fetch_session("w0", 0, 5) in (None, b"0")
            repr(store)

    def snapshotter() -> None:
        while not done.is_set():
            store.snapshot(tmp_path / "store.snap")
            back = SessionStore.restore(tmp_path / "store.snap")
            snapshots.append([s for s in back.find_sessions_by_end(0, 10**9) if s[0][:1] == b"w"])

    readers = [reader, reader, snapshotter]
    writers = [writer(w) for w in range(WRITERS)]

    def write_all() -> None:
        try:
            errors = run_threads(writers)
            if errors:
                raise errors[0]
        finally:
            done.set()

    errors = run_threads([write_all, *readers])
    assert errors == []
    # Every read saw each writer's sessions as a prefix of its puts: no torn state.
    assert len(snapshots) >= READS
    for seen in snapshots:
        for w in range(WRITERS):
            got = writer_sessions(seen, w)
            assert got == list(range(len(got)))
    final = store.find_sessions_by_end(0, 10**9)
    assert all(v != b"gone" for _, _, _, v in final)
    for w in range(WRITERS):
        assert writer_sessions(final, w) == list(range(puts[w]))
    assert store.metrics()["puts"] == PRELOAD + 2 * sum(puts)
