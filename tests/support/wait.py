"""Waiting on conditions with a deadline: the only way tests synchronise."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
) -> T:
    """Poll `condition` until it returns something truthy; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = condition()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})"
            )
        time.sleep(interval)


def assert_stays(condition: Callable[[], T], *, seconds: float, what: str) -> None:
    """Check that `condition` keeps holding for `seconds` (a stability check, not a wait)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = condition()
        if not result:
            raise AssertionError(f"{what} stopped holding (got {result!r})")
        time.sleep(0.5)
