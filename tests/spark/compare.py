"""Comparing Spark results with the complete-data engine's: exact, but floats up to rounding."""

from __future__ import annotations

import math

import pyarrow as pa


def assert_same_windows(got: pa.Table, want: pa.Table, by: list[str]) -> None:
    """``got`` and ``want`` hold the same rows (any order) with the same column names and
    types; float columns equal up to relative 1e-9 (merges sum in another order)."""
    assert got.column_names == want.column_names
    assert got.num_rows == want.num_rows, (got.num_rows, want.num_rows)
    order = [(c, "ascending") for c in by]
    got, want = got.sort_by(order), want.sort_by(order)
    for name in want.column_names:
        g, w = got[name], want[name]
        assert g.type == w.type, f"{name}: {g.type} != {w.type}"
        if pa.types.is_floating(w.type):
            for a, b in zip(g.to_pylist(), w.to_pylist(), strict=True):
                assert (a is None and b is None) or math.isclose(a, b, rel_tol=1e-9), (name, a, b)
        else:
            assert g.to_pylist() == w.to_pylist(), name
