"""Where the benchmark's two brokers keep their data: in memory when there is room.

The brokers are the benchmark's fixture, shared by every contender, not what it
measures. On disk, the kernel writes their logs out in bursts: on the 2-core
machine, Dirty pages fell by about 155 MB within 0.3 s about every 30 s, and
during each burst every record in flight on both brokers waited 80-200 ms (every
stall of 80 ms or more in a 120-s steady run fell on one; benchmarks/RESULTS.md,
"Record age on a disk that writes in bursts"). Such a stall lands on whichever
contender happens to run at that moment, and in a 60-s window it alone decides
the record age's p99. So the brokers' data and logs go to a tmpfs directory
when the run fits in the memory left over; the contenders keep their own state
(Mirrorline's checkpoints, every contender's log) in the work directory on disk,
as a user runs them. `--brokers-on-disk` measures the old way.

The room a run needs is estimated from its largest workload: a backlog's
records, or the steady load's rate over its warm-up, window and drain, on both
brokers, with a quarter more for indexes and the internal topics. Each run's
topics are deleted after it (`Run.clean_up`), and the development brokers
remove a deleted topic's files a second later (`file.delete.delay.ms`).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from benchlib.common import say
from benchlib.environment import meminfo_bytes

MEMORY_DIR = Path("/dev/shm")
# Room left for the processes themselves: a Spark driver or MM2 (2.5 GiB), two
# brokers (1 GiB heaps), the load producer, the consumer and the copy loop.
PROCESS_RESERVE = 8 << 30
RECORD_OVERHEAD = 80  # bytes a record takes in a log beyond its key and value
SLACK_S = 120  # the steady load's drain and stop, beyond warm-up and window


def room_needed(settings, workloads) -> int:
    """Bytes the brokers' logs may hold at once for these workloads and settings."""
    largest = 0
    for w in workloads:
        record = w.value_size + RECORD_OVERHEAD
        if w.kind == "steady":
            seconds = settings.warmup_seconds + settings.latency_seconds + SLACK_S
            one_side = int(w.rate * seconds * record)
        else:
            one_side = settings.records * record
        largest = max(largest, one_side)
    return int(2 * largest * 1.25)  # both brokers; indexes and internal topics


def choose(work: Path, need: int, on_disk: bool) -> tuple[Path, str]:
    """The directory for the clusters and how the report names where it is."""
    if on_disk:
        return work / "clusters", "on disk (as asked)"
    room = meminfo_bytes("MemAvailable") - PROCESS_RESERVE
    if not MEMORY_DIR.is_dir() or need > min(room, shutil.disk_usage(MEMORY_DIR).free):
        say(
            f"brokers' data on disk: the run may keep {need / 2**30:.1f} GiB in their logs, "
            f"more than memory has room for ({max(room, 0) / 2**30:.1f} GiB)"
        )
        return work / "clusters", "on disk (no room in memory)"
    directory = Path(tempfile.mkdtemp(prefix="mirrorline-bench-brokers-", dir=MEMORY_DIR))
    say(f"brokers' data in memory: {directory} (up to {need / 2**30:.1f} GiB)")
    return directory, "in memory (tmpfs)"


def release(directory: Path, work: Path, keep_logs: bool) -> None:
    """Remove an in-memory directory, first copying the brokers' logs (not their data)
    into the work directory when they are kept."""
    if directory.is_relative_to(work):
        return
    if keep_logs:
        shutil.copytree(
            directory,
            work / "clusters",
            ignore=shutil.ignore_patterns("data"),
            dirs_exist_ok=True,
        )
    shutil.rmtree(directory, ignore_errors=True)
    if directory.exists():
        say(f"could not remove {directory} entirely")
