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
    detail: Callable[[], str] | None = None,
) -> T:
    """Poll `condition` until it returns something truthy; fail naming `what` at the deadline,
    followed by what `detail` says then (a process's output, say)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = condition()
        if last:
            return last
        if time.monotonic() > deadline:
            said = f"\n{detail()}" if detail is not None else ""
            raise AssertionError(
                f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r}){said}"
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
