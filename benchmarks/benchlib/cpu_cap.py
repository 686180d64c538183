"""A CPU limit per process tree, through the cgroup v1 `cpu` controller.

On a 2-core machine, two uncapped executors saturate both cores and measure
nothing about scaling. Capping each Spark worker (and the executors it forks,
which inherit its group) at a fraction of a core keeps the machine below
saturation, so that adding executors adds capacity the way adding hosts would.
The brokers and the driver stay outside the caps.

Each capped process gets a group of its own under `/sys/fs/cgroup/cpu`
(`cpu.cfs_quota_us` = cores x `cpu.cfs_period_us`); `cpu.stat` tells how often
the group was throttled, which shows whether the cap, not something else, set
the pace. Groups are removed when the processes in them have ended.
"""

from __future__ import annotations

import os
from pathlib import Path

CPU_ROOT = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000


class CpuCapError(RuntimeError):
    """The cgroup v1 `cpu` controller is not there or not writable."""


class CpuCap:
    """One capped group per added process; use as a context manager."""

    def __init__(self, cores: float, name: str = "mirrorline-bench") -> None:
        if cores <= 0:
            raise ValueError(f"a CPU cap must be above 0 cores, not {cores}")
        if not (CPU_ROOT / "cpu.cfs_quota_us").exists() or not os.access(CPU_ROOT, os.W_OK):
            raise CpuCapError(
                f"{CPU_ROOT} is not a writable cgroup v1 cpu controller: cannot cap CPU here"
            )
        self.cores = cores
        self._name = name
        self._groups: list[Path] = []

    def add(self, pid: int) -> Path:
        """Cap `pid` (and the children it starts from now on) at `cores`."""
        group = CPU_ROOT / f"{self._name}-{os.getpid()}-{pid}"
        group.mkdir(exist_ok=True)
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(int(self.cores * PERIOD_US)))
        (group / "cgroup.procs").write_text(str(pid))
        self._groups.append(group)
        return group

    def throttled(self) -> dict[str, dict[str, int]]:
        """Per group: periods, periods throttled and time throttled (ns), from `cpu.stat`."""
        found = {}
        for group in self._groups:
            stat = dict(
                (line.split()[0], int(line.split()[1]))
                for line in (group / "cpu.stat").read_text().splitlines()
                if line.strip()
            )
            found[group.name] = {
                "periods": stat.get("nr_periods", 0),
                "throttled_periods": stat.get("nr_throttled", 0),
                "throttled_ns": stat.get("throttled_time", 0),
            }
        return found

    def close(self) -> None:
        """Move what is left back to the root group and remove the groups."""
        for group in self._groups:
            try:
                for pid in (group / "cgroup.procs").read_text().split():
                    (CPU_ROOT / "cgroup.procs").write_text(pid)
                group.rmdir()
            except OSError:
                continue  # gone already, or a process in it just ended
        self._groups = []

    def __enter__(self) -> CpuCap:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
