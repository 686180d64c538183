#!/usr/bin/env python3
"""Mirrorline next to MirrorMaker 2: throughput, record age and memory, in one run.

Both replicators run on the same machine, against the same two local Apache Kafka
clusters (`east` -> `west`), on identical data, one after the other (never
concurrently: on a small machine they would steal each other's cores). Each tool
gets its own source topics, so one run never sees the other's records.

Phases, per tool:

1. Throughput: a source topic pre-loaded with `--records` random records is
   replicated from the beginning. Clocks: replicator start, first record on the
   target, all records on the target (target end offsets polled per partition).
2. Latency: an empty topic is replicated while a separate process produces
   `--rate` records/s. A consumer on the target computes each record's age
   (arrival time - original timestamp; both tools keep the source timestamp).
   Records produced during the warm-up are discarded.

While a replicator runs, its whole process tree (Mirrorline: the Python driver,
its Spark JVM and Python workers; MM2: its JVM) is sampled in /proc for peak
memory and CPU time.

Run `python benchmarks/replication_benchmark.py --help`; see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import multiprocessing
import os
import platform
import queue
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
# Measure the Mirrorline of this checkout, whatever else the environment has installed.
sys.path.insert(0, str(REPO / "src"))

from confluent_kafka import (  # noqa: E402
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from mirrorline import jvm  # noqa: E402
from mirrorline.devcluster import DevClusters  # noqa: E402

SOURCE, TARGET = "east", "west"
TOOLS = ("mirrorline", "mm2")
TOOL_NAMES = {"mirrorline": "Mirrorline", "mm2": "MirrorMaker 2"}
MM2_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
# How Kafka's connect-mirror-maker.sh starts MM2 (heap and JVM options as shipped).
MM2_JVM_OPTIONS = [
    "-Xms256M",
    "-Xmx2G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]
# Errors of a partition that was created a moment ago and has no leader yet.
_NOT_READY = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
}
POLL_S = 0.1  # how often progress on the target is looked at
# How long a replicator's helper processes (Spark's JVM, Python workers) may take to
# exit after its main process did, before they count as left behind and are killed.
LEFTOVER_GRACE_S = 15.0
PROBE_RATE = 10  # records/s produced before the replicator is seen to work
MIB = 1024 * 1024
# Other processes' CPU use below which the machine counts as quiet (kernel, daemons).
QUIET_CORES = 0.15


class BenchmarkError(RuntimeError):
    """The benchmark cannot go on; the message says what happened and where to look."""


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def wait_for(
    condition: Callable[[], object],
    *,
    timeout: float,
    what: str,
    check: Callable[[], None] | None = None,
    interval: float = POLL_S,
):
    """Poll `condition` until truthy; `check` may raise (a replicator that died)."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if check is not None:
            check()
        if time.monotonic() > deadline:
            raise BenchmarkError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


# -- options ------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    records: int
    record_size: int
    partitions: int
    rate: int
    latency_seconds: float
    warmup_seconds: float
    tools: tuple[str, ...]
    tasks_max: int
    timeout: float
    quiet_timeout: float
    save: bool
    work_dir: Path | None
    keep_work_dir: bool
    exactly_once: bool = False


def parse_options(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(
        description="Measure Mirrorline and MirrorMaker 2 side by side on local clusters.",
    )
    parser.add_argument(
        "--records", type=int, default=1_000_000, help="records to replicate (%(default)s)"
    )
    parser.add_argument(
        "--record-size", type=int, default=1024, help="value size in bytes (%(default)s)"
    )
    parser.add_argument(
        "--partitions", type=int, default=8, help="partitions per topic (%(default)s)"
    )
    parser.add_argument(
        "--rate", type=int, default=5000, help="records/s in the latency test (%(default)s)"
    )
    parser.add_argument(
        "--latency-seconds",
        type=float,
        default=60,
        help="measured part of the latency test, seconds (%(default)s)",
    )
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        default=10,
        help="discarded start of the latency test, seconds (%(default)s)",
    )
    parser.add_argument("--only", choices=TOOLS, help="run one tool only")
    parser.add_argument(
        "--tasks-max",
        type=int,
        help="tasks.max for both tools (default: the partition count)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800,
        help="longest wait for one phase, seconds (%(default)s)",
    )
    parser.add_argument(
        "--quiet-timeout",
        type=float,
        default=0,
        help="before each phase, wait up to this many seconds for other processes to "
        f"use under {QUIET_CORES} cores (for shared machines; default: no wait)",
    )
    parser.add_argument(
        "--no-save",
        action="store_true",
        help="print only; do not write results/<date>.json nor RESULTS.md",
    )
    parser.add_argument(
        "--work-dir", type=Path, help="clusters and logs (default: a new temporary directory)"
    )
    parser.add_argument(
        "--keep-work-dir", action="store_true", help="keep clusters' data and logs afterwards"
    )
    parser.add_argument(
        "--exactly-once",
        action="store_true",
        help="run Mirrorline with exactly.once.source.support = enabled and read the target "
        "read_committed (needs --only mirrorline)",
    )
    args = parser.parse_args(argv)
    if args.exactly_once and args.only != "mirrorline":
        parser.error("--exactly-once needs --only mirrorline")
    for name in ("records", "record_size", "partitions", "rate"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.latency_seconds <= 0 or args.warmup_seconds < 0:
        parser.error("--latency-seconds must be > 0 and --warmup-seconds >= 0")
    return Options(
        records=args.records,
        record_size=args.record_size,
        partitions=args.partitions,
        rate=args.rate,
        latency_seconds=args.latency_seconds,
        warmup_seconds=args.warmup_seconds,
        tools=(args.only,) if args.only else TOOLS,
        tasks_max=args.tasks_max or args.partitions,
        timeout=args.timeout,
        quiet_timeout=args.quiet_timeout,
        save=not args.no_save,
        work_dir=args.work_dir,
        keep_work_dir=args.keep_work_dir,
        exactly_once=args.exactly_once,
    )


# -- process trees -----------------------------------------------------------------


@dataclass(frozen=True)
class _ProcSample:
    name: str
    state: str  # "Z": exited, waiting for its parent to collect it
    ppid: int
    start: int  # start time in clock ticks: tells a reused pid from the original
    cpu_ticks: int


def _read_stat(pid: int) -> _ProcSample | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses; the fields follow the last ')'.
    head, tail = text.rsplit(")", 1)
    fields = tail.split()
    return _ProcSample(
        name=head.split("(", 1)[1],
        state=fields[0],
        ppid=int(fields[1]),
        start=int(fields[19]),
        cpu_ticks=int(fields[11]) + int(fields[12]),
    )


def _read_memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; PSS shares pages fairly among forked workers."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def process_tree(root: int) -> dict[int, _ProcSample]:
    """`root` and all its live descendants, from one pass over /proc."""
    samples = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            sample = _read_stat(int(entry))
            if sample is not None:
                samples[int(entry)] = sample
    tree: dict[int, _ProcSample] = {}
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


def process_role(pid: int) -> str:
    """What a process of a replicator's tree is, from its command line."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "exited"
    for marker, role in _ROLES:
        if marker in cmdline:
            return role
    return cmdline.split(" ", 1)[0].rsplit("/", 1)[-1] or "unknown"


_ROLES = (
    ("org.apache.spark.deploy.SparkSubmit", "Spark JVM"),
    ("pyspark.daemon", "Python workers"),
    ("mirrorline driver", "Python driver"),
    (MM2_MAIN, "MirrorMaker 2 JVM"),
    ("kafka.Kafka", "Kafka brokers"),
)


class TreeSampler:
    """Samples a process tree's memory and CPU time in the background.

    RSS summed over processes counts pages shared by forked workers more than
    once, so PSS is kept too. CPU time is the sum over every process seen in the
    tree (by pid and start time), so a worker that exits still counts up to its
    last sample; it is also kept per role (driver, JVM, workers) to show where
    the time goes.
    """

    def __init__(self, root: int, interval: float = 0.5) -> None:
        self.root = root
        self.interval = interval
        self.peak_rss_kib = 0
        self.peak_pss_kib = 0
        self.peak_processes = 0
        self._cpu_ticks: dict[tuple[int, int], int] = {}
        self._roles: dict[tuple[int, int], str] = {}
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

    def sample(self) -> None:
        tree = process_tree(self.root)
        rss = pss = 0
        for pid in tree:
            process_rss, process_pss = _read_memory_kib(pid)
            rss += process_rss
            pss += process_pss
        with self._lock:
            for pid, s in tree.items():
                self._cpu_ticks[(pid, s.start)] = s.cpu_ticks
                if (pid, s.start) not in self._roles:
                    self._roles[(pid, s.start)] = process_role(pid)
            if tree:
                self._members = {pid: s.start for pid, s in tree.items()}
            self.peak_rss_kib = max(self.peak_rss_kib, rss)
            self.peak_pss_kib = max(self.peak_pss_kib, pss)
            self.peak_processes = max(self.peak_processes, len(tree))

    def cpu_seconds(self) -> float:
        with self._lock:
            return sum(self._cpu_ticks.values()) / os.sysconf("SC_CLK_TCK")

    def cpu_seconds_by_role(self) -> dict[str, float]:
        ticks_per_s = os.sysconf("SC_CLK_TCK")
        with self._lock:
            by_role: dict[str, float] = {}
            for member, ticks in self._cpu_ticks.items():
                role = self._roles[member]
                by_role[role] = by_role.get(role, 0.0) + ticks / ticks_per_s
        # Short-lived helpers (a shell, readlink) show up with no measurable time.
        return {role: round(sec, 1) for role, sec in sorted(by_role.items()) if sec >= 0.05}

    def members(self) -> dict[int, int]:
        """The last seen tree, pid -> start time."""
        with self._lock:
            return dict(self._members)


def _end_tree(members: dict[int, int], grace: float) -> list[str]:
    """Give a stopped replicator's other processes `grace` seconds to exit on their own,
    then SIGKILL the rest; returns the names of those killed.

    A process counts as the same one only with the same pid and start time, so a
    reused pid is never touched.
    """

    def running() -> dict[int, str]:
        alive = {}
        for pid, start in members.items():
            sample = _read_stat(pid)
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


def _machine_busy_seconds() -> float:
    """CPU time the whole machine spent busy since boot (all cores, from /proc/stat)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class OtherLoad:
    """CPU used by processes that are not the benchmark's, so a busy machine shows.

    The machine's busy time minus the CPU time of the benchmark's own process tree
    (itself, the clusters, the replicator, the load producer). A few hundredths of
    a core is the kernel and idle daemons; more means the numbers are disturbed.
    """

    def __init__(self) -> None:
        self._own = TreeSampler(os.getpid(), interval=1.0).start()

    def mark(self) -> tuple[float, float, float]:
        self._own.sample()
        return time.monotonic(), _machine_busy_seconds(), self._own.cpu_seconds()

    def cores_since(self, mark: tuple[float, float, float]) -> float:
        now = self.mark()
        elapsed = now[0] - mark[0]
        other = (now[1] - mark[1]) - (now[2] - mark[2])
        return round(max(0.0, other) / elapsed, 2) if elapsed > 0 else 0.0

    def wait_quiet(self, timeout: float, window: float = 5.0) -> float:
        """Wait until other processes use at most QUIET_CORES for `window` seconds.

        Returns the other processes' load in the last window. At the deadline the
        benchmark goes on regardless: each phase records the load it ran under.
        """
        deadline = time.monotonic() + timeout
        told = False
        while True:
            mark = self.mark()
            time.sleep(window)  # the measuring window itself
            cores = self.cores_since(mark)
            if cores <= QUIET_CORES or time.monotonic() >= deadline:
                if cores > QUIET_CORES:
                    say(f"warning: other processes keep {cores} cores busy; results will suffer")
                return cores
            if not told:
                say(f"waiting for other processes to leave the cores alone ({cores} busy)")
                told = True

    def stop(self) -> None:
        self._own.stop()


@dataclass
class StopReport:
    graceful: bool  # exited by itself after SIGTERM
    seconds: float  # from SIGTERM until the replicator's main process exited
    tree_seconds: float  # ... until every process of its tree was gone
    leftovers_killed: list[str]  # processes still running LEFTOVER_GRACE_S after that


class ReplicatorProcess:
    """One replicator run as a subprocess, its output in a log file, its tree sampled."""

    def __init__(
        self, tool: str, command: list[str], env: dict[str, str], log_path: Path, cwd: Path
    ) -> None:
        self.tool = tool
        self.log_path = log_path
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
        """Raise if the replicator exited on its own (with the end of its log)."""
        if self.popen.poll() is not None:
            raise BenchmarkError(
                f"{TOOL_NAMES[self.tool]} exited with code {self.popen.returncode}; "
                f"end of {self.log_path}:\n{_tail(self.log_path)}"
            )

    def stop(self, timeout: float = 120) -> StopReport:
        """SIGTERM, wait for a graceful exit, then SIGKILL whatever is left of the tree."""
        self.sampler.sample()
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
        leftovers = _end_tree(members, grace=LEFTOVER_GRACE_S)
        if leftovers:
            say(
                f"  killed {', '.join(leftovers)}: still running {LEFTOVER_GRACE_S:.0f}s "
                f"after {TOOL_NAMES[self.tool]} exited"
            )
        tree_seconds = time.monotonic() - began
        self._log.close()
        return StopReport(graceful, round(seconds, 2), round(tree_seconds, 2), leftovers)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


# -- the two replicators ------------------------------------------------------------


def write_replication_config(
    path: Path, clusters, topic: str, tasks_max: int, exactly_once: bool = False
) -> Path:
    """One MM2-format file that both tools read unchanged (Mirrorline warns about and
    ignores the Connect-only keys). Everything else is left at each tool's defaults."""
    lines = [
        f"clusters = {SOURCE}, {TARGET}",
        *(f"{c.alias}.bootstrap.servers = {c.bootstrap_servers}" for c in clusters),
        f"{SOURCE}->{TARGET}.enabled = true",
        f"{SOURCE}->{TARGET}.topics = {topic}",
        f"tasks.max = {tasks_max}",
        "# Single-node clusters: every topic the replicators create has one replica.",
        "replication.factor = 1",
        "offset-syncs.topic.replication.factor = 1",
        "checkpoints.topic.replication.factor = 1",
        "heartbeats.topic.replication.factor = 1",
        "config.storage.replication.factor = 1",
        "offset.storage.replication.factor = 1",
        "status.storage.replication.factor = 1",
    ]
    if exactly_once:
        lines.append("exactly.once.source.support = enabled")
    path.write_text("\n".join(lines) + "\n")
    return path


def start_replicator(tool: str, config: Path, work: Path, log_path: Path) -> ReplicatorProcess:
    env = dict(os.environ)
    if tool == "mirrorline":
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p
        )
        env["PYTHONUNBUFFERED"] = "1"  # status lines reach the log as they are printed
        command = [
            sys.executable,
            "-m",
            "mirrorline",
            "driver",
            "--config",
            str(config),
            "--clusters",
            TARGET,
            "--work-dir",
            str(work / "driver"),
            "--status-every",
            "5",
        ]
    else:
        command = [
            jvm.java_executable(),
            *MM2_JVM_OPTIONS,
            f"-Dlog4j2.configurationFile={BENCH_DIR / 'mm2-log4j2.properties'}",
            "-cp",
            jvm.classpath("mirrormaker"),
            MM2_MAIN,
            str(config),
            "--clusters",
            TARGET,
        ]
    return ReplicatorProcess(tool, command, env, log_path, cwd=work)


# -- Kafka helpers ------------------------------------------------------------------


def source_topic(tool: str, phase: str) -> str:
    """Each tool and phase has its own source topic, so no run sees another's records."""
    name = "bench-ml" if tool == "mirrorline" else "bench-mm2"
    return name if phase == "throughput" else f"{name}-{phase}"


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 60) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout)
    wait_for(
        lambda: (
            (t := admin.list_topics(topic, timeout=5).topics.get(topic)) is not None
            and t.error is None
            and len(t.partitions) == partitions
            and all(p.leader >= 0 for p in t.partitions.values())
        ),
        timeout=timeout,
        what=f"topic {topic} to have leaders on {bootstrap}",
    )


class OffsetWatcher:
    """End offsets of a topic, per partition.

    A topic the replicator has not created yet has none, and a partition whose
    leader is still being elected counts as empty: both pass within moments.
    """

    def __init__(self, bootstrap: str) -> None:
        self._consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "mirrorline-bench-watcher"}
        )

    def end_offsets(self, topic: str) -> dict[int, int]:
        meta = self._consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return {}
        return {p: self._end_offset(topic, p) for p in meta.partitions}

    def _end_offset(self, topic: str, partition: int) -> int:
        try:
            return self._consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=10
            )[1]
        except KafkaException as exc:
            if exc.args[0].code() in _NOT_READY:
                return 0
            raise

    def close(self) -> None:
        self._consumer.close()


def _value_source(seed: int, size: int) -> Callable[[], bytes]:
    """Random, incompressible values; the same seed gives the same values."""
    rng = random.Random(seed)
    return lambda: rng.randbytes(size)


def preload(bootstrap: str, topics: list[str], opts: Options) -> None:
    """Write the same `opts.records` records (key, value, partition) to every topic."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "acks": "all",
        }
    )
    failures: list[str] = []

    def delivered(error, _msg) -> None:
        if error is not None:
            failures.append(error.str())

    next_value = _value_source(seed=1, size=opts.record_size)
    step = max(1, opts.records // 10)
    for i in range(opts.records):
        key = _key(i)
        value = next_value()
        for topic in topics:
            while True:
                try:
                    producer.produce(
                        topic, value, key, partition=i % opts.partitions, on_delivery=delivered
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
        if (i + 1) % step == 0:
            say(f"  pre-loaded {i + 1:,} / {opts.records:,}")
    remaining = producer.flush(300)
    if remaining or failures:
        raise BenchmarkError(
            f"pre-loading {', '.join(topics)} failed: {remaining} unacknowledged, "
            f"errors: {failures[:3]}"
        )


# -- phase 1: throughput ----------------------------------------------------------------


def measure_throughput(tool: str, clusters, work: Path, opts: Options, load: OtherLoad) -> dict:
    """Replicate the pre-loaded topic; time startup and transfer separately."""
    topic = source_topic(tool, "throughput")
    remote = f"{SOURCE}.{topic}"
    source, target = clusters
    source_watch, target_watch = (
        OffsetWatcher(source.bootstrap_servers),
        OffsetWatcher(target.bootstrap_servers),
    )
    try:
        expected = source_watch.end_offsets(topic)
        if sum(expected.values()) != opts.records:
            raise BenchmarkError(
                f"{topic} holds {sum(expected.values())} records, not {opts.records}"
            )
        config = write_replication_config(
            work / f"{tool}-throughput.properties",
            clusters,
            topic,
            opts.tasks_max,
            opts.exactly_once,
        )
        say(f"{TOOL_NAMES[tool]}: replicating {opts.records:,} records of {topic}")
        proc = start_replicator(tool, config, work, work / "logs" / f"{tool}-throughput.log")
        began = load.mark()
        first = None
        last_report = proc.started
        try:
            while True:
                now = time.monotonic()
                arrived = target_watch.end_offsets(remote)
                total = sum(arrived.values())
                if first is None and total > 0:
                    first = now
                    say(f"  first records on {TARGET} after {first - proc.started:.1f}s")
                if arrived and all(arrived.get(p, 0) >= n for p, n in expected.items()):
                    done = now
                    break
                proc.check()
                if now - proc.started > opts.timeout:
                    raise BenchmarkError(
                        f"{TOOL_NAMES[tool]} replicated {total:,} of {opts.records:,} records "
                        f"in {opts.timeout:.0f}s; see {proc.log_path}"
                    )
                if now - last_report >= 10:
                    last_report = now
                    say(f"  {total:,} / {opts.records:,} on {TARGET}")
                time.sleep(POLL_S)
            cpu = proc.sampler.cpu_seconds()
            cpu_by_role = proc.sampler.cpu_seconds_by_role()
            other_cores = load.cores_since(began)
        finally:
            stopped = proc.stop()
        transfer = max(done - first, POLL_S)  # no finer than the polling
        total_s = done - proc.started
        payload = opts.records * opts.record_size + _key_bytes(opts.records)
        result = {
            "records": opts.records,
            "payload_bytes": payload,
            "startup_s": round(first - proc.started, 2),
            "transfer_s": round(transfer, 2),
            "total_s": round(total_s, 2),
            "records_per_s": round(opts.records / transfer, 1),
            "mib_per_s": round(payload / MIB / transfer, 2),
            "records_per_s_with_startup": round(opts.records / total_s, 1),
            "cpu_s": round(cpu, 1),
            "cpu_s_by_process": cpu_by_role,
            "peak_rss_mib": round(proc.sampler.peak_rss_kib / 1024, 1),
            "peak_pss_mib": round(proc.sampler.peak_pss_kib / 1024, 1),
            "peak_processes": proc.sampler.peak_processes,
            "other_cpu_cores": other_cores,
            "stop": asdict(stopped),
        }
        say(
            f"  done: {result['records_per_s']:,.0f} records/s, {result['mib_per_s']} MiB/s "
            f"(startup {result['startup_s']}s, transfer {result['transfer_s']}s), "
            f"peak RSS {result['peak_rss_mib']} MiB"
        )
        return result
    finally:
        source_watch.close()
        target_watch.close()


def _key(i: int) -> bytes:
    """Small keys, 10,000 distinct ones, as many applications have."""
    return b"k%d" % (i % 10_000)


def _key_bytes(records: int) -> int:
    """The exact number of key bytes `preload` wrote."""
    return sum(len(_key(i)) for i in range(records))


# -- phase 2: latency ---------------------------------------------------------------


def _paced_producer(bootstrap, topic, partitions, size, rate, go, stop, results) -> None:
    """Child process: PROBE_RATE records/s until `go`, then `rate` records/s until `stop`.

    A separate process, so producing never competes with the measuring consumer
    for the benchmark's interpreter lock. Each record's timestamp is its produce time.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    errors: list[str] = []

    def delivered(error, _msg) -> None:
        if error is not None:
            errors.append(error.str())

    produced = 0
    phase_start, phase_sent, phase_rate = time.monotonic(), 0, PROBE_RATE
    while not stop.is_set():
        if phase_rate != rate and go.is_set():
            phase_start, phase_sent, phase_rate = time.monotonic(), 0, rate
        due = int((time.monotonic() - phase_start) * phase_rate) - phase_sent
        for _ in range(max(0, due)):
            while True:
                try:
                    producer.produce(
                        topic,
                        os.urandom(size),
                        _key(produced),
                        partition=produced % partitions,
                        timestamp=int(time.time() * 1000),
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    producer.poll(0.01)
            produced += 1
            phase_sent += 1
        producer.poll(0)
        time.sleep(0.002)  # pacing granularity, not synchronisation
    remaining = producer.flush(60)
    results.put({"produced": produced, "unacknowledged": remaining, "errors": errors[:3]})


def _percentile(ordered: list[int], p: float) -> int:
    """Nearest-rank percentile of an ascending list."""
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def measure_latency(tool: str, clusters, work: Path, opts: Options, load: OtherLoad) -> dict:
    """Record age at the target under a steady load, after a warm-up."""
    topic = source_topic(tool, "latency")
    remote = f"{SOURCE}.{topic}"
    source, target = clusters
    create_topic(source.bootstrap_servers, topic, opts.partitions)
    config = write_replication_config(
        work / f"{tool}-latency.properties", clusters, topic, opts.tasks_max, opts.exactly_once
    )
    say(
        f"{TOOL_NAMES[tool]}: {opts.rate:,} records/s into {topic} for "
        f"{opts.warmup_seconds:.0f}s warm-up + {opts.latency_seconds:.0f}s measured"
    )
    spawn = multiprocessing.get_context("spawn")
    go, stop, results = spawn.Event(), spawn.Event(), spawn.Queue()
    producer = spawn.Process(
        target=_paced_producer,
        args=(source.bootstrap_servers, topic, opts.partitions, opts.record_size, opts.rate)
        + (go, stop, results),
        daemon=True,
    )
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "group.id": "mirrorline-bench-latency",
            "enable.auto.commit": False,
            # Exactly-once copies count once committed, as a read_committed reader sees them.
            "isolation.level": "read_committed" if opts.exactly_once else "read_uncommitted",
            "enable.partition.eof": False,
        }
    )
    proc = start_replicator(tool, config, work, work / "logs" / f"{tool}-latency.log")
    began = load.mark()
    producer.start()
    ages: list[int] = []
    consumed = 0
    try:
        meta = wait_for(
            lambda: (
                (t := consumer.list_topics(remote, timeout=5).topics.get(remote)) is not None
                and t.error is None
                and len(t.partitions) == opts.partitions
                and t
            ),
            timeout=opts.timeout,
            what=f"{TOOL_NAMES[tool]} to create {remote} on {TARGET}",
            check=proc.check,
            interval=0.5,
        )
        consumer.assign([TopicPartition(remote, p, 0) for p in meta.partitions])

        def read(timeout: float) -> None:
            nonlocal consumed
            for msg in consumer.consume(num_messages=1000, timeout=timeout):
                arrival = int(time.time() * 1000)
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise BenchmarkError(f"reading {remote}: {msg.error().str()}")
                consumed += 1
                produced_at = msg.timestamp()[1]
                if window_start <= produced_at < window_end:
                    ages.append(arrival - produced_at)

        window_start = window_end = math.inf
        wait_for(
            lambda: read(POLL_S) or consumed > 0,
            timeout=opts.timeout,
            what=f"the first record replicated by {TOOL_NAMES[tool]}",
            check=proc.check,
            interval=0,
        )
        startup = time.monotonic() - proc.started
        go.set()
        go_ms = int(time.time() * 1000)
        window_start = go_ms + int(opts.warmup_seconds * 1000)
        window_end = window_start + int(opts.latency_seconds * 1000)
        say(f"  replicating after {startup:.1f}s; steady load started")
        cpu_at_start = None
        while time.time() * 1000 < window_end:
            read(POLL_S)
            if cpu_at_start is None and time.time() * 1000 >= window_start:
                cpu_at_start = proc.sampler.cpu_seconds()
            proc.check()
        cpu_at_end = proc.sampler.cpu_seconds()
        cpu_by_role = proc.sampler.cpu_seconds_by_role()
        stop.set()
        try:
            produced = results.get(timeout=120)
        except queue.Empty:
            raise BenchmarkError(
                f"the load producer (pid {producer.pid}) reported nothing within 120s"
            ) from None
        if produced["unacknowledged"] or produced["errors"]:
            raise BenchmarkError(f"the load producer failed: {produced}")
        wait_for(
            lambda: read(POLL_S) or consumed >= produced["produced"],
            timeout=max(120, opts.timeout / 4),
            what=f"all {produced['produced']:,} records on {TARGET} "
            f"({TOOL_NAMES[tool]}: read {consumed:,} so far)",
            check=proc.check,
            interval=0,
        )
        other_cores = load.cores_since(began)
    finally:
        stop.set()
        stopped = proc.stop()
        producer.join(30)
        if producer.is_alive():
            producer.kill()
        consumer.close()
    if not ages:
        raise BenchmarkError(f"no record of the measured window reached {remote}")
    ages.sort()
    result = {
        "rate": opts.rate,
        "warmup_s": opts.warmup_seconds,
        "measured_s": opts.latency_seconds,
        "startup_s": round(startup, 2),
        "produced": produced["produced"],
        "consumed": consumed,
        "measured_records": len(ages),
        "p50_ms": _percentile(ages, 50),
        "p90_ms": _percentile(ages, 90),
        "p99_ms": _percentile(ages, 99),
        "max_ms": ages[-1],
        "mean_ms": round(sum(ages) / len(ages), 1),
        "cpu_cores_used": round((cpu_at_end - (cpu_at_start or 0)) / opts.latency_seconds, 2),
        "cpu_s_by_process": cpu_by_role,
        "peak_rss_mib": round(proc.sampler.peak_rss_kib / 1024, 1),
        "peak_pss_mib": round(proc.sampler.peak_pss_kib / 1024, 1),
        "other_cpu_cores": other_cores,
        "stop": asdict(stopped),
    }
    say(
        f"  record age p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, "
        f"max {result['max_ms']} ms over {len(ages):,} records; "
        f"{result['cpu_cores_used']} cores busy"
    )
    return result


# -- report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    label: str
    phase: str
    key: str
    better: str  # "higher" or "lower"
    fmt: str = "{:,.0f}"


METRICS = (
    Metric("throughput, records/s (first record to last)", "throughput", "records_per_s", "higher"),
    Metric("throughput, MiB/s (keys + values)", "throughput", "mib_per_s", "higher", "{:,.1f}"),
    Metric(
        "throughput incl. startup, records/s",
        "throughput",
        "records_per_s_with_startup",
        "higher",
    ),
    Metric("startup until first record, s", "throughput", "startup_s", "lower", "{:,.1f}"),
    Metric("CPU time for the whole topic, s", "throughput", "cpu_s", "lower", "{:,.1f}"),
    Metric("peak RSS, MiB (throughput)", "throughput", "peak_rss_mib", "lower"),
    Metric("peak PSS, MiB (throughput)", "throughput", "peak_pss_mib", "lower"),
    Metric("record age p50, ms", "latency", "p50_ms", "lower"),
    Metric("record age p99, ms", "latency", "p99_ms", "lower"),
    Metric("record age max, ms", "latency", "max_ms", "lower"),
    Metric("CPU cores busy at the steady rate", "latency", "cpu_cores_used", "lower", "{:,.2f}"),
    Metric("peak RSS, MiB (latency)", "latency", "peak_rss_mib", "lower"),
)


def ratios(results: dict) -> dict[str, float]:
    if not all(tool in results for tool in TOOLS):
        return {}
    out = {}
    for m in METRICS:
        ml, mm2 = results["mirrorline"][m.phase][m.key], results["mm2"][m.phase][m.key]
        if mm2:
            out[f"{m.phase}.{m.key}"] = round(ml / mm2, 3)
    return out


def markdown_table(results: dict, ratio: dict[str, float]) -> str:
    tools = [t for t in TOOLS if t in results]
    header = ["metric", *(TOOL_NAMES[t] for t in tools)]
    if ratio:
        header += ["Mirrorline / MM2", "better"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for m in METRICS:
        row = [m.label] + [m.fmt.format(results[t][m.phase][m.key]) for t in tools]
        if ratio:
            r = ratio.get(f"{m.phase}.{m.key}")
            row += [f"{r:.2f}" if r is not None else "n/a", m.better]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def conditions_text(results: dict) -> str:
    """How busy the rest of the machine was: the reader's test of the numbers above."""
    parts = [
        f"{TOOL_NAMES[tool]} {phase} {results[tool][phase]['other_cpu_cores']:.2f}"
        for tool in TOOLS
        if tool in results
        for phase in ("throughput", "latency")
    ]
    return "CPU cores used by other processes during each phase: " + ", ".join(parts) + "."


def _java_version() -> str:
    out = subprocess.run([jvm.java_executable(), "-version"], capture_output=True, text=True)
    return (out.stderr or out.stdout).splitlines()[0].strip()


def _jar_version(jar_set: str, artifact: str) -> str:
    for jar in jvm.jars(jar_set):
        match = re.fullmatch(rf"{re.escape(artifact)}-(\d[\w.]*)\.jar", jar.name)
        if match:
            return match.group(1)
    return "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 1024 / 1024, 1)
    return 0.0


def _git_commit() -> str:
    """The commit that last changed the engine (src/), which is what is measured."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return out.stdout.strip()

    commit = git("log", "-1", "--format=%h", "--", "src") or "unknown"
    dirty = git("status", "--porcelain", "--", "src")
    return commit + ("+uncommitted changes in src" if dirty else "")


def environment() -> dict:
    import confluent_kafka
    import pyspark

    return {
        "machine": {
            "cpu_cores": os.cpu_count(),
            "cpu_model": _cpu_model(),
            "memory_gib": _memory_gib(),
            "os": f"{platform.system()} {platform.release()}",
        },
        "versions": {
            "mirrorline_commit": _git_commit(),
            "kafka_broker": _jar_version("kafka", "kafka_2.13"),
            "mirrormaker2": _jar_version("mirrormaker", "connect-mirror"),
            "spark": pyspark.__version__,
            "python": platform.python_version(),
            "java": _java_version(),
            "confluent_kafka": confluent_kafka.__version__,
            "librdkafka": confluent_kafka.libversion()[0],
        },
    }


def settings_text(opts: Options) -> str:
    return (
        f"{opts.records:,} records of {opts.record_size:,} B values (keys of 2-5 B) over "
        f"{opts.partitions} partitions; latency at {opts.rate:,} records/s for "
        f"{opts.latency_seconds:.0f} s after a {opts.warmup_seconds:.0f} s warm-up; "
        f"`tasks.max = {opts.tasks_max}` for both tools; single-node KRaft clusters "
        f"`{SOURCE}` -> `{TARGET}` on loopback; tools run one after the other."
    )


def render_results_section(report: dict, table: str) -> str:
    env, versions = report["machine"], report["versions"]
    return "\n".join(
        [
            f"Run on {report['date']} with:",
            "",
            "```sh",
            report["command"],
            "```",
            "",
            report["settings_text"],
            "",
            table,
            "",
            conditions_text(report["results"]),
            "",
            f"Machine: {env['cpu_cores']} cores ({env['cpu_model']}), {env['memory_gib']} GiB "
            f"memory, {env['os']}. Apache Kafka {versions['kafka_broker']} (brokers and "
            f"MirrorMaker 2 {versions['mirrormaker2']}), Spark {versions['spark']}, "
            f"Python {versions['python']}, {versions['java']}, confluent-kafka "
            f"{versions['confluent_kafka']} (librdkafka {versions['librdkafka']}), Mirrorline "
            f"engine (src/) at commit {versions['mirrorline_commit']}.",
            "",
            f"Raw numbers: `benchmarks/results/{report['file']}`.",
        ]
    )


START, END = "<!-- benchmark:start -->", "<!-- benchmark:end -->"


def update_results_md(path: Path, section: str) -> None:
    """Replace the generated block of RESULTS.md; text outside the markers stays."""
    block = f"{START}\n{section}\n{END}"
    text = path.read_text() if path.exists() else f"# Benchmark results\n\n{START}\n{END}\n"
    if START not in text or END not in text:
        raise BenchmarkError(f"{path} lacks the markers {START} and {END}; add them back")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    path.write_text(before + block + after)


# -- main --------------------------------------------------------------------------------


@contextmanager
def clusters_running(work: Path) -> Iterator[list]:
    clusters = DevClusters(work / "clusters")
    try:
        started = clusters.up([SOURCE, TARGET], die_with_parent=True, progress=say)
        yield sorted(started, key=lambda c: c.alias != SOURCE)
    finally:
        clusters.down(progress=say)


def run(opts: Options, command: str) -> dict:
    work = opts.work_dir or Path(tempfile.mkdtemp(prefix="mirrorline-bench-"))
    (work / "logs").mkdir(parents=True, exist_ok=True)
    say(f"work directory (clusters, logs): {work}")
    results: dict = {}
    failed = True
    load = OtherLoad()
    try:
        load.wait_quiet(opts.quiet_timeout)
        with clusters_running(work) as clusters:
            source = clusters[0]
            topics = [source_topic(t, "throughput") for t in opts.tools]
            for topic in topics:
                create_topic(source.bootstrap_servers, topic, opts.partitions)
            say(f"pre-loading {opts.records:,} records into {', '.join(topics)} on {SOURCE}")
            preload(source.bootstrap_servers, topics, opts)
            for tool in opts.tools:
                load.wait_quiet(opts.quiet_timeout)
                results[tool] = {"throughput": measure_throughput(tool, clusters, work, opts, load)}
            for tool in opts.tools:
                load.wait_quiet(opts.quiet_timeout)
                results[tool]["latency"] = measure_latency(tool, clusters, work, opts, load)
        failed = False
    finally:
        load.stop()
        if failed or opts.keep_work_dir:
            say(f"kept {work} (logs in {work / 'logs'})")
        elif opts.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    now = dt.datetime.now()
    ratio = ratios(results)
    return {
        "date": now.strftime("%Y-%m-%d %H:%M"),
        "file": f"{now:%Y-%m-%d}.json",
        "command": command,
        "settings": {k: v for k, v in asdict(opts).items() if k in SETTING_KEYS},
        "settings_text": settings_text(opts),
        **environment(),
        "results": results,
        "ratios": ratio,
    }


SETTING_KEYS = {
    "records",
    "record_size",
    "partitions",
    "rate",
    "latency_seconds",
    "warmup_seconds",
    "tools",
    "tasks_max",
}


def main(argv: list[str]) -> int:
    opts = parse_options(argv)
    command = shlex.join(["python", "benchmarks/replication_benchmark.py", *argv])

    def terminate(signum, _frame) -> None:
        raise SystemExit(f"stopped by {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, terminate)
    try:
        report = run(opts, command)
    except BenchmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    table = markdown_table(report["results"], report["ratios"])
    print()
    print(settings_text(opts))
    print()
    print(table)
    print()
    print(conditions_text(report["results"]))
    if opts.save:
        results_dir = BENCH_DIR / "results"
        results_dir.mkdir(exist_ok=True)
        (results_dir / report["file"]).write_text(json.dumps(report, indent=2) + "\n")
        update_results_md(BENCH_DIR / "RESULTS.md", render_results_section(report, table))
        print(f"\nwrote benchmarks/results/{report['file']} and benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
