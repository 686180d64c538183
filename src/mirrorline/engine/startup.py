"""Where a flow's start-up time goes, from the driver process's start to its first copy.

Operators (and the benchmarks) ask why the first record takes as long as it
does. A driver's start-up passes through steps that wait on different things:
the Python interpreter and its imports, the Spark session (a JVM and its
context), then per flow its leadership (a group join on the target), its
take-over (the progress and the translation store read back), its remote topics,
the query's start and its first batch (task launch, class loading, the first
producer and fetches). `StartupTimeline` notes when each step was first
reached, in seconds since the process started (`process_age`), and logs them all
in one line when the flow's first batch with records is committed:

    flow east->west: first records copied 9.6 s after the driver process started:
    leads 0.8 s, taken over 1.9 s, topics ready 2.1 s, Spark session 5.1 s,
    query started 5.5 s, first batch committed 9.6 s

A step reached again later (a restart, a new term) keeps its first time: the
line is about the start-up, once per process.
"""

from __future__ import annotations

import logging
import os
import threading
import time

log = logging.getLogger(__name__)

# The steps of a flow's start-up, in the order they happen (see the module).
SPARK_SESSION = "Spark session"
LEADS = "leads"
TAKEN_OVER = "taken over"
TOPICS_READY = "topics ready"
QUERY_STARTED = "query started"
FIRST_BATCH = "first batch committed"


def _process_started() -> float:
    """The `time.time()` at which this process started (Linux `/proc`; else now)."""
    try:
        with open("/proc/self/stat") as stat:
            # Field 22, after the command in parentheses (which may hold spaces).
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as uptime:
            up = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return time.time()
    return time.time() - up + ticks / os.sysconf("SC_CLK_TCK")


_STARTED = _process_started()
_shared: dict[str, float] = {}  # driver-wide steps (the Spark session)
_shared_lock = threading.Lock()


def process_age() -> float:
    """Seconds since this process started."""
    return time.time() - _STARTED


def driver_step(step: str) -> None:
    """Note a step every flow of the driver shares (the Spark session)."""
    with _shared_lock:
        _shared.setdefault(step, process_age())


class StartupTimeline:
    """One flow's start-up steps (see the module); thread-safe."""

    def __init__(self, flow: str) -> None:
        self.flow = flow
        self._lock = threading.Lock()
        self._steps: dict[str, float] = {}

    def reached(self, step: str) -> None:
        """Note `step` at its first time; `FIRST_BATCH` logs the whole timeline."""
        with self._lock:
            if step in self._steps:
                return
            self._steps[step] = process_age()
        if step == FIRST_BATCH:
            log.info("flow %s: %s", self.flow, self.describe())

    def steps(self) -> dict[str, float]:
        """Step -> seconds after the process started, the driver's steps included."""
        with _shared_lock:
            shared = dict(_shared)
        with self._lock:
            return dict(sorted({**shared, **self._steps}.items(), key=lambda item: item[1]))

    def describe(self) -> str:
        steps = self.steps()
        first = steps.get(FIRST_BATCH)
        head = (
            f"first records copied {first:.1f} s after the driver process started"
            if first is not None
            else "start-up so far"
        )
        shown = ", ".join(f"{step} {at:.1f} s" for step, at in steps.items())
        return f"{head}: {shown}"
