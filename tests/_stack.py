"""A recursion limit lowered for one block, as a host program may lower it."""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator


def _depth() -> int:
    frame, count = sys._getframe(), 0
    while frame is not None:
        frame, count = frame.f_back, count + 1
    return count


@contextlib.contextmanager
def recursion_limit(room: int) -> Iterator[None]:
    """Python's recursion limit set to ``room`` frames above the block's own depth, and
    put back when the block ends."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_depth() + room)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)
