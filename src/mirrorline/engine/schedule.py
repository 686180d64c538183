"""A flow's periodic control loops, listed in one place, each failure kept apart.

Every loop runs at once when the flow starts and then every `interval`
seconds, at a fixed rate (a loop whose interval is None runs once, at start);
the flow looks at its loops as soon as one falls due (`wait_s`). A loop that
fails does not stop the others or the flow: its error is kept, for the
flow's status, until the loop succeeds again, and it is tried again soon
(after 1, 2, 4 ... seconds, at most `RETRY_MAX_S`, never later than its regular
run): a topic refresh that failed at start because a just-created internal
topic had no leader yet must not leave the flow idle for its 10-minute
interval. An action that reports its own partial failures (a topic that could
not be created, a topic's configs that could not be copied, in the flow's
problems) returns False to be tried again soon in the same way.

Loops come in stages, so that the flow runs each stage where its conditions
hold (a stage needs the clusters to answer, another a running query); a loop
that is due while its stage cannot run waits and runs as soon as it can.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

from mirrorline.engine.status import summarise

log = logging.getLogger(__name__)

RETRY_FIRST_S = 1.0
RETRY_MAX_S = 60.0


@dataclass
class Due:
    """A control loop's schedule: runs at start, then every `interval` seconds; sooner
    again after a failure."""

    interval: float | None
    next_at: float = 0.0
    failures: int = 0  # in a row

    def take(self, now: float) -> bool:
        """Whether the loop is due at `now`; if so, its next run is scheduled."""
        if now < self.next_at:
            return False
        if self.interval is None:
            self.next_at = math.inf
        else:
            # At a fixed rate: a run that came late does not make every later one late
            # (the flow looks at its loops when one falls due, or sooner).
            planned = self.next_at + self.interval
            self.next_at = planned if planned > now else now + self.interval
        return True

    def outcome(self, ok: bool, now: float) -> None:
        """After a run at `now`: a failed one is tried again after a growing delay."""
        if ok:
            self.failures = 0
            return
        delay = min(RETRY_MAX_S, RETRY_FIRST_S * 2**self.failures)
        self.failures += 1
        self.next_at = min(self.next_at, now + delay)


@dataclass
class Loop:
    name: str  # as the status shows it: "topic refresh failed: ..."
    stage: str
    due: Due
    action: Callable[[], object]


class Scheduler:
    """The control loops of one flow and their latest errors; thread-safe for readers."""

    def __init__(self, flow: str) -> None:
        self.flow = flow
        self._loops: list[Loop] = []
        self._lock = threading.Lock()
        self._errors: dict[str, str] = {}

    def every(
        self, name: str, interval: float | None, action: Callable[[], object], *, stage: str
    ) -> None:
        """Add a loop running `action` every `interval` seconds in `stage`, in this order."""
        self._loops.append(Loop(name, stage, Due(interval), action))

    def run(self, stage: str, now: float) -> None:
        """Run the due loops of `stage`, in the order they were added."""
        for loop in self._loops:
            if loop.stage == stage and loop.due.take(now):
                loop.due.outcome(self.guard(loop.name, loop.action), now)

    def wait_s(self, now: float, longest: float) -> float:
        """How long the flow may wait, at `now`, before a loop falls due: `longest` at
        most. Loops due already (their stage cannot run) or at every look do not count."""
        ahead = [loop.due.next_at - now for loop in self._loops if loop.due.next_at > now]
        return min([longest, *ahead])

    def hurry(self, *names: str) -> None:
        """Make these loops due now (their stage still decides when they run)."""
        for loop in self._loops:
            if loop.name in names:
                loop.due.next_at = 0.0

    def guard(self, name: str, action: Callable[[], object]) -> bool:
        """Run one loop's work; its failure is a problem in the status, not the flow's end.
        Whether it succeeded (an action returning False did not finish: see the module)."""
        try:
            finished = action() is not False
        except Exception as exc:  # noqa: BLE001 - one loop's failure must not stop the others
            log.warning("flow %s: %s failed: %s", self.flow, name, exc)
            with self._lock:
                self._errors[name] = summarise(str(exc))
            return False
        with self._lock:
            self._errors.pop(name, None)
        return finished

    def errors(self) -> dict[str, str]:
        """The latest error of each loop that has not succeeded since."""
        with self._lock:
            return dict(self._errors)
