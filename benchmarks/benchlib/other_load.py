"""The machine's other load: CPU that neither the benchmark nor what it runs used.

The benchmark shares its two cores with whatever else runs on the machine, so
each phase waits for a quiet machine first and records the load it ran under, and
whether the machine stopped meanwhile (`stalls`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import NamedTuple

from benchlib import stalls
from benchlib.common import say
from benchlib.procs import TreeSampler

# Other processes' CPU use below which the machine counts as quiet (kernel, daemons).
QUIET_CORES = 0.15


def _machine_busy_seconds() -> float:
    """CPU time the whole machine spent busy since boot (all cores, from /proc/stat)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class CpuReading(NamedTuple):
    """The machine's and the benchmark's CPU counters at one moment."""

    at: float  # time.monotonic()
    machine_busy_s: float
    own_cpu_s: float


def _other_cores(before: CpuReading, after: CpuReading) -> float:
    """Cores other processes kept busy between two readings."""
    elapsed = after.at - before.at
    other = (after.machine_busy_s - before.machine_busy_s) - (after.own_cpu_s - before.own_cpu_s)
    return round(max(0.0, other) / elapsed, 2) if elapsed > 0 else 0.0


class Mark(NamedTuple):
    """Where a phase began, for `OtherLoad.cores_since` and `disturbance_since`."""

    cpu: CpuReading
    stalls: int
    vm_forks: int | None


class OtherLoad:
    """CPU used by processes that are not the benchmark's, so a busy machine shows.

    The machine's busy time minus the CPU time of the benchmark's own process tree
    (itself, the clusters, the replicator, the load producer). A few hundredths of
    a core is the kernel and idle daemons; more means the numbers are disturbed.
    """

    def __init__(self) -> None:
        self._own = TreeSampler(os.getpid(), interval=1.0).start()
        self._stalls = stalls.StallWatch().start()

    def mark(self) -> Mark:
        """Where a phase begins: the CPU counters, the stalls so far and the kernel's
        virtual machine forks (its log is read here, once per phase)."""
        return Mark(self._cpu_now(), self._stalls.count(), stalls.vm_forks())

    def _cpu_now(self) -> CpuReading:
        self._own.sample()
        return CpuReading(time.monotonic(), _machine_busy_seconds(), self._own.cpu_seconds())

    def cores_since(self, mark: Mark) -> float:
        return _other_cores(mark.cpu, self._cpu_now())

    def disturbance_since(self, mark: Mark) -> dict | None:
        """The machine's stalls and virtual machine forks since `mark` (see `stalls`), or
        None when it ran throughout; a disturbed phase is also told on the console."""
        forks = stalls.vm_forks()
        new_forks = forks - mark.vm_forks if forks is not None and mark.vm_forks is not None else 0
        disturbed = stalls.disturbance(self._stalls.since(mark.stalls), new_forks)
        if disturbed:
            say(f"warning: the machine {stalls.disturbance_text(disturbed)}; results will suffer")
        return disturbed

    def wait_quiet(self, timeout: float, window: float = 5.0) -> float:
        """Wait until other processes use at most QUIET_CORES for `window` seconds.

        Returns the other processes' load in the last window. At the deadline the
        benchmark goes on regardless: each phase records the load it ran under.
        No wait at all with a timeout of 0.
        """
        if timeout <= 0:
            return 0.0
        deadline = time.monotonic() + timeout
        told = False
        while True:
            before = self._cpu_now()
            time.sleep(window)  # the measuring window itself
            cores = _other_cores(before, self._cpu_now())
            if cores <= QUIET_CORES or time.monotonic() >= deadline:
                if cores > QUIET_CORES:
                    say(f"warning: other processes keep {cores} cores busy; results will suffer")
                return cores
            if not told:
                say(f"waiting for other processes to leave the cores alone ({cores} busy)")
                told = True

    def stop(self) -> None:
        self._own.stop()
        self._stalls.stop()
