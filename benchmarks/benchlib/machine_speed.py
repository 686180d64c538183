"""How fast the machine was when a run began and when it ended.

The machine these benchmarks run on is shared with others: from one hour to the
next the same single-threaded work takes up to half again as long, and record-age
tails move four- to sixfold (benchmarks/RESULTS.md). That is more than most
goals' margins. So every results file records two numbers taken at the start and
at the end of the run. The first is the time of a fixed piece of CPU-bound Python,
a loop of 10⁷ additions (`python_loop_s`). It runs inside a function, so it
takes about 0.4 of the time the same loop takes when it is timed at a module's top
level, as the earlier entries in RESULTS.md timed it by hand. The second is the kernel's CPU
pressure over the last minute (`/proc/pressure/cpu`, the share of time some
runnable task waited for a CPU). The first sample is taken before the clusters
start, so its pressure is other people's load. The last is taken after the
clusters stop, but its minute still covers the run's end. Runs are compared only
when these numbers are close.
"""

from __future__ import annotations

import time
from pathlib import Path

LOOP_ADDITIONS = 10_000_000
PRESSURE = Path("/proc/pressure/cpu")


def python_loop_s() -> float:
    """Seconds for a loop of LOOP_ADDITIONS additions in this Python, on one core."""
    began = time.perf_counter()
    total = 0
    for i in range(LOOP_ADDITIONS):
        total += i
    return round(time.perf_counter() - began, 2)


def cpu_pressure_pct() -> float | None:
    """The share of the last minute that some runnable task waited for a CPU, in %,
    or None where the kernel does not report pressure."""
    try:
        some = PRESSURE.read_text().splitlines()[0].split()  # "some avg10=.. avg60=.. ..."
        return float(dict(part.split("=", 1) for part in some[1:])["avg60"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


def sample() -> dict:
    """{"python_loop_s": ..., "cpu_pressure_pct": ...}, measured now."""
    return {"python_loop_s": python_loop_s(), "cpu_pressure_pct": cpu_pressure_pct()}


def text(before: dict, after: dict) -> str:
    """One sentence on both samples, for the printed report."""

    def pressure(value: float | None) -> str:
        return "not reported" if value is None else f"{value:.0f} %"

    return (
        f"Machine speed: the Python loop of 10⁷ additions took {before['python_loop_s']} s "
        f"before the run and {after['python_loop_s']} s after it; CPU pressure over the "
        f"minute before {pressure(before['cpu_pressure_pct'])}, over its last minute "
        f"{pressure(after['cpu_pressure_pct'])} (benchlib/machine_speed.py)."
    )
