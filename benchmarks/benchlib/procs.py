"""Processes seen from /proc: a process tree's CPU time and memory, and a child
process that is sampled while it runs and stopped cleanly.

A replicator is more than one process (Mirrorline: the Python driver, its Spark
JVM and Python workers; MirrorMaker 2: one JVM), so everything here works on
the whole tree below a process, as the kernel reports it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from benchlib.common import BenchmarkError, say, tail, wait_for

# How long a replicator's helper processes (Spark's JVM, Python workers) may take to
# exit after its main process did, before they count as left behind and are killed.
LEFTOVER_GRACE_S = 15.0


PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
# PSS is sampled at every PSS_EVERY-th sample only, and at the last: the kernel walks
# the process's page tables to count it (50 ms of CPU for a 2.7 GB JVM here), which
# at every sample (twice a second) took 0.1 core from the contender being measured.
PSS_EVERY = 10


@dataclass(frozen=True)
class ProcSample:
    name: str
    state: str  # "Z": exited, waiting for its parent to collect it
    ppid: int
    start: int  # start time in clock ticks: tells a reused pid from the original
    cpu_ticks: int
    rss_kib: int  # resident memory: a counter the kernel keeps, cheap to read
    # Where the address space's code, stack and heap begin and end: the same for a
    # child between vfork (or posix_spawn) and its exec as for its parent, whose
    # memory it still shares. None where the kernel hides them (another user's).
    address_space: tuple[int, ...] | None


def read_stat(pid: int) -> ProcSample | None:
    return _read_stat_file(f"/proc/{pid}/stat")


def _read_stat_file(path: str) -> ProcSample | None:
    """A process's or a thread's `stat` file; None once it is gone."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses; the fields follow the last ')'.
    head, rest = text.rsplit(")", 1)
    fields = rest.split()  # fields[i] is field i + 3 of proc(5)
    layout = tuple(int(fields[i]) for i in (23, 24, 25, 44))
    return ProcSample(
        name=head.split("(", 1)[1],
        state=fields[0],
        ppid=int(fields[1]),
        start=int(fields[19]),
        cpu_ticks=int(fields[11]) + int(fields[12]),
        rss_kib=int(fields[21]) * PAGE_KIB,
        address_space=layout if any(layout) else None,
    )


def one_per_address_space(tree: dict[int, ProcSample]) -> list[int]:
    """The tree's pids, one per address space: a child that has not exec'd yet shares
    its parent's memory, and counting its RSS as well counted the JVM's twice."""
    first: dict[tuple[int, ...], int] = {}
    for pid, sample in sorted(tree.items()):
        first.setdefault(sample.address_space or (pid,), pid)
    return list(first.values())


def read_pss_kib(pid: int) -> int:
    """PSS of one process in KiB: shares pages fairly among forked workers."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def process_tree(root: int) -> dict[int, ProcSample]:
    """`root` and all its live descendants, from one pass over /proc."""
    samples = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            sample = read_stat(int(entry))
            if sample is not None:
                samples[int(entry)] = sample
    tree: dict[int, ProcSample] = {}
    if root in samples:
        tree[root] = samples[root]
        frontier = [root]
        while frontier:
            parent = frontier.pop()
            for pid, sample in samples.items():
                if sample.ppid == parent and pid not in tree:
                    tree[pid] = sample
                    frontier.append(pid)
    return tree


# What a process of a replicator's tree is, by a marker in its command line. A
# script may put its own markers first (the profiler runs the driver in-process).
ROLES: list[tuple[str, str]] = [
    ("org.apache.spark.deploy.SparkSubmit", "Spark JVM"),
    ("pyspark.daemon", "Python workers"),
    ("mirrorline driver", "Python driver"),
    ("mirrorline service", "service"),
    ("org.apache.kafka.connect.mirror.MirrorMaker", "MirrorMaker 2 JVM"),
    ("CopyLoop", "copy loop JVM"),
    ("kafka.Kafka", "Kafka brokers"),
]


def process_role(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "exited"
    for marker, role in ROLES:
        if marker in cmdline:
            return role
    return cmdline.split(" ", 1)[0].rsplit("/", 1)[-1] or "unknown"


# What a JVM thread does, by its name as the kernel shows it (the first 15 characters
# of the Java thread's name): the first pattern that matches wins.
THREAD_KINDS: list[tuple[str, str]] = [
    (r"C[12] CompilerThre", "JIT compilers"),
    (r"GC Thread|G1 |VM Thread", "garbage collector"),
    (r"Executor task|task-thread", "tasks"),
    (r"kafka-producer-", "producer I/O"),
    (r"stream executio", "query thread"),
    (r"python", "Python"),
]


def thread_kind(name: str) -> str:
    for pattern, kind in THREAD_KINDS:
        if re.match(pattern, name):
            return kind
    return "other threads"


def thread_group(name: str) -> str:
    """A JVM thread's name with its numbers as `#`, so that a pool's threads add up
    (`dispatcher-event-loop-#`, `C# CompilerThre`)."""
    return re.sub(r"\d+", "#", name).strip()


def thread_cpu_seconds(
    pids: Iterable[int], by: Callable[[str], str] = thread_kind
) -> dict[str, float]:
    """CPU seconds the threads of `pids` used so far, summed by `by` of their names
    (`thread_kind` unless told).

    A thread that ended took its time with it: compare two readings only over a
    stretch in which the threads that do the work live on (a copy's transfer).
    """
    ticks: dict[str, int] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            sample = _read_stat_file(f"/proc/{pid}/task/{tid}/stat")
            if sample is not None:
                key = by(sample.name)
                ticks[key] = ticks.get(key, 0) + sample.cpu_ticks
    return {key: n / os.sysconf("SC_CLK_TCK") for key, n in ticks.items()}


class TreeSampler:
    """Samples a process tree's memory and CPU time in the background.

    RSS summed over processes counts pages shared by forked workers more than
    once, so PSS is kept too (sampled less often: see `PSS_EVERY`). CPU time is
    the sum over every process seen in the tree (by pid and start time), so a
    worker that exits still counts up to its last sample; it is also kept per
    role (driver, JVM, workers) to show where the time goes.
    """

    def __init__(self, root: int, interval: float = 0.5) -> None:
        self.root = root
        self.interval = interval
        self.peak_rss_kib = 0
        self.peak_pss_kib = 0
        self.peak_processes = 0
        self._samples = 0
        self._cpu_ticks: dict[tuple[int, int], int] = {}
        self._roles: dict[tuple[int, int], tuple[str, str]] = {}  # -> (name, role)
        self._members: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-sampler", daemon=True)

    def start(self) -> TreeSampler:
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self, pss: bool | None = None) -> None:
        """One sample; PSS every `PSS_EVERY`-th time, or as `pss` says (the last: always)."""
        tree = process_tree(self.root)
        distinct = one_per_address_space(tree)
        rss = sum(tree[pid].rss_kib for pid in distinct)
        self._samples += 1
        if pss is None:
            pss = self._samples % PSS_EVERY == 1
        pss_kib = sum(read_pss_kib(pid) for pid in distinct) if pss else 0
        with self._lock:
            for pid, s in tree.items():
                self._cpu_ticks[(pid, s.start)] = s.cpu_ticks
                # A child seen between its fork and its exec still has its parent's
                # command line: its role is read again once its name changes.
                if self._roles.get((pid, s.start), ("", ""))[0] != s.name:
                    self._roles[(pid, s.start)] = (s.name, process_role(pid))
            if tree:
                self._members = {pid: s.start for pid, s in tree.items()}
            self.peak_rss_kib = max(self.peak_rss_kib, rss)
            self.peak_pss_kib = max(self.peak_pss_kib, pss_kib)
            self.peak_processes = max(self.peak_processes, len(tree))

    def cpu_seconds(self) -> float:
        with self._lock:
            return sum(self._cpu_ticks.values()) / os.sysconf("SC_CLK_TCK")

    def cpu_seconds_now(self) -> float:
        """CPU time up to this very moment (samples first, unlike `cpu_seconds`).

        Without PSS: a Spark driver's takes the kernel up to 0.15 s to add up, and
        the steady workload asks for this in the thread that reads the target, at
        the start of its measured window, where the wait would age the records.
        """
        self.sample(pss=False)
        return self.cpu_seconds()

    def cpu_seconds_by_role(self) -> dict[str, float]:
        ticks_per_s = os.sysconf("SC_CLK_TCK")
        with self._lock:
            by_role: dict[str, float] = {}
            for member, ticks in self._cpu_ticks.items():
                role = self._roles[member][1]
                by_role[role] = by_role.get(role, 0.0) + ticks / ticks_per_s
        # Short-lived helpers (a shell, readlink) show up with no measurable time.
        return {role: round(sec, 1) for role, sec in sorted(by_role.items()) if sec >= 0.05}

    def thread_cpu_seconds(
        self, role: str | None = None, by: Callable[[str], str] = thread_kind
    ) -> dict[str, float]:
        """`thread_cpu_seconds` of the tree's processes as last sampled (`cpu_seconds_now`
        samples first); only those of `role` when given."""
        with self._lock:
            pids = [
                pid
                for pid, start in self._members.items()
                if role is None or self._roles.get((pid, start), ("", ""))[1] == role
            ]
        return thread_cpu_seconds(pids, by)

    def members(self) -> dict[int, int]:
        """The last seen tree, pid -> start time."""
        with self._lock:
            return dict(self._members)


def end_tree(members: dict[int, int], grace: float) -> list[str]:
    """Give a stopped replicator's other processes `grace` seconds to exit on their own,
    then SIGKILL the rest; returns the names of those killed.

    A process counts as the same one only with the same pid and start time, so a
    reused pid is never touched.
    """

    def running() -> dict[int, str]:
        alive = {}
        for pid, start in members.items():
            sample = read_stat(pid)
            if sample is not None and sample.start == start and sample.state != "Z":
                alive[pid] = sample.name
        return alive

    deadline = time.monotonic() + grace
    while (left := running()) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(
        lambda: not (set(running()) & set(left)),
        timeout=30,
        what=f"processes {sorted(left)} to die after SIGKILL",
    )
    return sorted(left.values())


@dataclass
class StopReport:
    graceful: bool  # exited by itself after SIGTERM
    seconds: float  # from SIGTERM until the process exited
    tree_seconds: float  # ... until every process of its tree was gone
    leftovers_killed: list[str]  # processes still running LEFTOVER_GRACE_S after that


class SampledProcess:
    """One replicator (or copy loop) run as a subprocess: output in a log file, its
    process tree sampled, stopped with SIGTERM and, past a deadline, SIGKILL."""

    def __init__(
        self, name: str, command: list[str], env: dict[str, str], log_path: Path, cwd: Path
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.command = command
        setpriv = shutil.which("setpriv")
        if setpriv:
            # The kernel kills the replicator if the benchmark dies, even by SIGKILL.
            command = [setpriv, "--pdeathsig", "KILL", "--", *command]
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.started = time.monotonic()
        self.popen = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=cwd,  # whatever a replicator leaves in its working directory stays there
            start_new_session=True,  # a terminal's Ctrl-C goes to the benchmark, which stops us
        )
        self.sampler = TreeSampler(self.popen.pid).start()

    def check(self) -> None:
        """Raise if the process exited on its own (with the end of its log)."""
        if self.popen.poll() is not None:
            raise BenchmarkError(
                f"{self.name} exited with code {self.popen.returncode}; "
                f"end of {self.log_path}:\n{tail(self.log_path)}"
            )

    def stop(self, timeout: float = 120) -> StopReport:
        """SIGTERM, wait up to `timeout` s for a graceful exit, then SIGKILL whatever is
        left of the tree."""
        self.sampler.sample(pss=True)
        members = self.sampler.members()
        self.sampler.stop()
        began = time.monotonic()
        graceful = True
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                graceful = False
                self.popen.kill()
                self.popen.wait(30)
        seconds = time.monotonic() - began
        leftovers = end_tree(members, grace=LEFTOVER_GRACE_S)
        if leftovers:
            say(
                f"  killed {', '.join(leftovers)}: still running {LEFTOVER_GRACE_S:.0f}s "
                f"after {self.name} exited"
            )
        tree_seconds = time.monotonic() - began
        self._log.close()
        return StopReport(graceful, round(seconds, 2), round(tree_seconds, 2), leftovers)
