"""Moments the whole machine stopped running the benchmark, so a disturbed run shows.

The machine is a virtual one, and its host may pause it: once (2026-12-04, 00:26)
it stood still for about 40 s in the middle of a 600-s real-time run, and the
kernel logged "crng reseeded due to virtual machine fork" as it came back. The
benchmark saw it only as records its load producer did not write and samples its
checkpoint probe did not take; the record ages of three windows went to seconds.
A CPU-load check cannot see this: a paused machine runs nothing, neither the
benchmark nor anyone else.

So a thread wakes every TICK_S and notes how late it woke. A wake-up more than
STALL_S late is a stall: in that time no thread of the benchmark's process ran,
which a busy but running machine does not do to a thread that sleeps (the
interpreter hands the GIL over every few milliseconds). The kernel log is read too,
where it can be, for the virtual machine forks it records: one logged during a run
is named even when the clocks hid the pause. Each phase of a benchmark marks where
it began (`OtherLoad.mark`) and reports what happened since.
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import asdict, dataclass

TICK_S = 0.05
STALL_S = 1.0
FORK_LINE = "virtual machine fork"


@dataclass(frozen=True)
class Stall:
    """A time the benchmark's process did not run: from `began` (epoch s), `seconds` long."""

    began: float
    seconds: float

    def text(self) -> str:
        return f"{self.seconds:.1f} s at {time.strftime('%H:%M:%S', time.localtime(self.began))}"


def vm_forks() -> int | None:
    """How many virtual machine forks the kernel has logged since boot, or None where
    its log cannot be read."""
    try:
        log = subprocess.run(
            ["dmesg"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return sum(FORK_LINE in line for line in log.splitlines())


class StallWatch:
    """Notes every stall of at least STALL_S while it runs (see the module)."""

    def __init__(self) -> None:
        self._stalls: list[Stall] = []
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="stall-watch", daemon=True)

    def start(self) -> StallWatch:
        self._thread.start()
        return self

    def _watch(self) -> None:
        last = time.monotonic()
        while not self._halt.wait(TICK_S):
            now = time.monotonic()
            late = now - last - TICK_S
            if late >= STALL_S:
                with self._lock:
                    self._stalls.append(Stall(time.time() - (now - last), round(late, 1)))
            last = now

    def count(self) -> int:
        """How many stalls so far: a mark for `since`."""
        with self._lock:
            return len(self._stalls)

    def since(self, count: int) -> list[Stall]:
        with self._lock:
            return list(self._stalls[count:])

    def stop(self) -> None:
        self._halt.set()
        self._thread.join(1)


def disturbance(stalls: list[Stall], forks: int) -> dict | None:
    """What a phase reports: None when the machine ran throughout, as far as it shows."""
    if not stalls and not forks:
        return None
    return {"stalls": [asdict(s) for s in stalls], "vm_forks": forks}


def disturbance_text(disturbed: dict) -> str:
    """`disturbance`'s dict in words."""
    parts = [Stall(**s).text() for s in disturbed["stalls"]]
    stalled = f"stood still {', '.join(parts)}" if parts else "did not stall"
    forks = disturbed["vm_forks"]
    logged = f"; the kernel logged {forks} virtual machine fork(s)" if forks else ""
    return stalled + logged
