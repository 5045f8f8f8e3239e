"""The wall clock's reading as the core takes it: ``now=`` arguments as epoch milliseconds.

The clocks themselves (processing time, idle timeouts) are the core's: a processor made with
``clock="processing"`` or ``idle_timeout=`` reads ``now`` on every call, inside the call's
transaction (docs/semantics.md, "Wall clock").
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Literal

import numpy as np

from windowstore.exceptions import InvalidWindowSpec

__all__ = ["Clock", "Stamp", "wall_ms"]

#: What gives a record its time: its time column, or its arrival on the wall clock.
Clock = Literal["event", "processing"]
#: A wall-clock reading: epoch milliseconds (a Python or numpy integer), or a timezone-aware
#: ``datetime``.
Stamp = int | np.integer[Any] | datetime

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_I64 = (-(2**63), 2**63 - 1)


def wall_ms(now: Stamp | None) -> int | None:
    """The clock reading ``now`` as epoch milliseconds; ``None`` (the core reads the system
    clock) if ``None``.

    Raises:
        InvalidWindowSpec: ``now`` is a naive ``datetime``, or out of the 64-bit range of
            epoch milliseconds (names ``now``).
        TypeError: ``now`` is neither an integer (Python's or numpy's), a ``datetime`` nor
            ``None``.
    """
    if now is None:
        return None
    if isinstance(now, datetime):
        if now.tzinfo is None or now.utcoffset() is None:
            raise InvalidWindowSpec(
                f"invalid now: {now!r} has no time zone; pass an aware datetime "
                "(datetime.now(timezone.utc)) or epoch milliseconds",
                "now",
            )
        return (now - _EPOCH) // timedelta(milliseconds=1)
    if isinstance(now, bool | np.bool_) or not isinstance(now, int | np.integer):
        raise TypeError(
            f"now must be epoch milliseconds (int) or an aware datetime, not {type(now).__name__}"
        )
    now = int(now)
    if not _I64[0] <= now <= _I64[1]:
        raise InvalidWindowSpec(
            f"invalid now: {now} is out of range (epoch milliseconds fit a signed 64-bit integer)",
            "now",
        )
    return now
