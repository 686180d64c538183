"""Memory of every process below a root, sampled for as long as a run lasts.

A soak runs for an hour and restarts processes on purpose: the driver is
killed every 15 minutes, brokers restart. So memory is followed per process
(pid and start time, named by its role: Python driver, Spark JVM, service,
Kafka brokers, ...), and growth is judged per process over the part of its
life after a warm-up, within the window the soak cares about (its last 45
minutes): a leak shows as RSS that keeps rising after the JVM heaps and
caches have settled. Growth is read off the least-squares line through the
judged samples (one every 30 s), so that a sample taken in a burst (a
catch-up) weighs as one of many.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from benchlib.procs import process_role, process_tree


@dataclass(frozen=True)
class Growth:
    role: str
    pid: int
    from_s: float  # seconds into the run of the first sample judged
    to_s: float
    first_mib: float  # RSS sampled at from_s and at to_s
    last_mib: float
    percent: float  # the least-squares line's rise from from_s to to_s, of its value at from_s


def _fitted_growth(samples: list[tuple[float, int]]) -> float:
    """Percent growth over the samples' span along their least-squares line.

    A line through every sample, not the last against the first: a sample taken
    during a burst (a catch-up after a broker restart) says little about a
    trend, and the trend is what a leak is.
    """
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_r = sum(r for _, r in samples) / n
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    slope = sum((t - mean_t) * (r - mean_r) for t, r in samples) / spread if spread else 0.0
    start = mean_r + slope * (samples[0][0] - mean_t)
    return 100.0 * slope * (samples[-1][0] - samples[0][0]) / start if start > 0 else 0.0


class MemoryLog(threading.Thread):
    """Samples RSS of each process below `root` every `interval` seconds."""

    def __init__(self, root: int, interval: float = 30.0) -> None:
        super().__init__(name="memory-log", daemon=True)
        self._root = root
        self._interval = interval
        self._halt = threading.Event()
        self.began = time.monotonic()
        # (pid, start) -> role, first seen (s), samples of (s into the run, RSS KiB)
        self.processes: dict[tuple[int, int], tuple[str, float, list[tuple[float, int]]]] = {}

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self._interval)

    def sample(self) -> None:
        now = round(time.monotonic() - self.began, 1)
        for pid, stat in process_tree(self._root).items():
            if pid == self._root or stat.state == "Z":
                continue
            key = (pid, stat.start)
            if key not in self.processes:
                self.processes[key] = (process_role(pid), now, [])
            if stat.rss_kib:
                self.processes[key][2].append((now, stat.rss_kib))

    def stop(self) -> None:
        self._halt.set()
        if self.ident is not None:
            self.join(30)
        self.sample()

    def growth(self, window_s: float, warm_up_s: float) -> list[Growth]:
        """Per process that lived through warm-up: RSS at its first sample that is both
        `warm_up_s` after it started and inside the last `window_s` of the run, at its
        last sample, and the growth between along the line through all of them."""
        end = time.monotonic() - self.began
        rows = []
        for (pid, _start), (role, seen, samples) in sorted(self.processes.items()):
            judged = [(t, r) for t, r in samples if t >= max(seen + warm_up_s, end - window_s)]
            if len(judged) < 2:
                continue
            (t0, r0), (t1, r1) = judged[0], judged[-1]
            rows.append(
                Growth(
                    role,
                    pid,
                    t0,
                    t1,
                    round(r0 / 1024, 1),
                    round(r1 / 1024, 1),
                    round(_fitted_growth(judged), 2),
                )
            )
        return rows
