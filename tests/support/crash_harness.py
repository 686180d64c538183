"""Crash a running driver again and again; then prove that the replica lost nothing.

One scenario: a fresh source topic receives a steady stream of numbered records
while `mirrorline driver` replicates it as a child process. Each time the driver
has written something since its last start, it is SIGKILLed (with everything it
started: Spark's JVM, the Python workers) after a random delay, and started
again. Chosen starts end instead with SIGTERM to the driver's whole process group,
as a service manager or a container runtime stops a service: the driver must stop
between batches by itself, with exit code 0 and no traceback. After the last
start the driver catches up and is stopped, both topics are read back and every
partition of the replica is audited against the source (`replica_audit`).

Shared by `tests/integration/test_crash_safety.py` (small, both modes) and
`benchmarks/chaos.py` (the long soak).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from mirrorline.devcluster import DevCluster
from mirrorline.engine.batch_commit import REPLAYED_BATCHES
from support.chaos_streams import NumberedStream
from support.driver_process import DriverProcess
from support.driving import write_config
from support.kafka_io import create_topic, unique_name
from support.replica_audit import RecordLog, audit_partition, content_digest, sequence_of
from support.wait import wait_until

Say = Callable[[str], None]


@dataclass(frozen=True)
class Mode:
    """A delivery guarantee: the flow settings that ask for it, and how to read the replica."""

    name: str
    settings: str  # properties lines added to the flow's configuration
    isolation_level: str  # of the consumer that reads the replica back
    exactly_once: bool


AT_LEAST_ONCE = Mode("at-least-once", "", "read_uncommitted", exactly_once=False)
EXACTLY_ONCE = Mode(
    "exactly-once",
    "exactly.once.source.support = enabled\nconsumer.isolation.level = read_committed\n",
    "read_committed",
    exactly_once=True,
)
MODES = {m.name: m for m in (AT_LEAST_ONCE, EXACTLY_ONCE)}


@dataclass(frozen=True)
class Scenario:
    records: int
    partitions: int
    kills: int
    rate: int  # records/s into the source topic
    batch_records: int  # micro-batch.max.records: bounds the re-reads of one crash
    seed: int
    max_kill_delay_s: float = 3.0  # longest wait, once the driver writes, before killing it
    # The starts (1-based) that end with SIGTERM to the driver's process group, not SIGKILL.
    terminations: tuple[int, ...] = ()
    start_timeout_s: float = 180.0  # for a started driver to write its first record
    catch_up_timeout_s: float = 300.0

    @property
    def replay_bound(self) -> int:
        """The most records one kill may have written again: the batches written and
        not saved yet (the driver saves one while it writes the next)."""
        return self.batch_records * REPLAYED_BATCHES


@dataclass(frozen=True)
class Kill:
    start: int  # which start of the driver was killed (1-based)
    delay_s: float  # how long after its first new record on the target
    target_records: int  # target end offsets (summed) when it was killed
    source_records: int  # records acknowledged by the source by then
    # A SIGTERM to the process group instead of SIGKILL: the driver's exit code and
    # whether its output holds a Python traceback.
    terminated: bool = False
    exit_code: int | None = None
    traceback: bool = False


@dataclass
class CrashReport:
    mode: str
    seed: int
    records: int
    partitions: int
    batch_records: int
    replay_bound: int  # records one kill may have written again (see `Scenario`)
    kills: list[Kill]
    replicated: int  # records read from the replica, duplicates included
    duplicates: int
    # Per kill: records the killed start wrote that a later start wrote again.
    duplicates_per_kill: list[int]
    lost: int
    seconds: float
    graceful_stop: bool
    problems: list[str] = field(default_factory=list)

    def violations(self) -> list[str]:
        """Every way this run broke the guarantees of its mode (empty: it kept them)."""
        found = list(self.problems)
        if self.lost:
            found.append(f"{self.lost} source records have no copy on the target")
        if self.mode == EXACTLY_ONCE.name and self.duplicates:
            found.append(f"{self.duplicates} records written more than once in exactly-once mode")
        for kill, count in zip(self.kills, self.duplicates_per_kill, strict=True):
            if count > self.replay_bound:
                found.append(
                    f"kill {kill.start}: {count} records written again, more than "
                    f"{REPLAYED_BATCHES} micro-batches ({self.replay_bound} records)"
                )
            if not kill.terminated:
                continue
            if kill.exit_code != 0:
                found.append(f"start {kill.start} exited with {kill.exit_code} on SIGTERM")
            if kill.traceback:
                found.append(f"start {kill.start} printed a traceback on SIGTERM")
            if count > self.batch_records:
                found.append(
                    f"start {kill.start}, stopped by SIGTERM: {count} records written again, "
                    f"more than the batch in flight ({self.batch_records} records)"
                )
        return found

    def summary(self) -> str:
        per_kill = ", ".join(str(n) for n in self.duplicates_per_kill) or "none"
        return (
            f"{self.mode}: {self.records:,} records, {len(self.kills)} kills, "
            f"{self.duplicates:,} duplicates (per kill: {per_kill}; bound "
            f"{self.replay_bound:,}), {self.lost:,} lost, {self.seconds:.0f}s, seed {self.seed}"
        )


def numbered_record(seq: int, partitions: int, rng: random.Random):
    """(partition, key, value, headers) of the record with sequence number `seq`."""
    value = b"%d:%s" % (seq, rng.randbytes(rng.randrange(12)).hex().encode())
    headers = [("trace", b"%d" % seq), ("app", b"crash-test")] if seq % 4 == 0 else None
    return seq % partitions, b"k%d" % (seq % 1000), value, headers


class SteadyProducer(NumberedStream):
    """Streams numbered records round-robin over the partitions, so that it lasts through the kills.

    The stream is cut into `kills + 2` equal slices: the first is released at
    once, one more each time a start of the driver begins writing. Within the
    released records the producer keeps to `rate` records per second, and waits
    when it has produced them all. So new records arrive around every kill and
    after the last start, whether the driver takes ten seconds to start or a
    minute on a busy machine. Idempotent: the source log holds each record once,
    in produce order.
    """

    def __init__(self, bootstrap: str, topic: str, scenario: Scenario, seed: int) -> None:
        rng = random.Random(seed)
        super().__init__(
            {"bootstrap.servers": bootstrap},
            topic,
            scenario.rate,
            lambda seq: numbered_record(seq, scenario.partitions, rng),
            limit=scenario.records,
        )
        self._slices = scenario.kills + 2
        self._released = 1

    def release_slice(self) -> None:
        self._released = min(self._slices, self._released + 1)

    def released(self) -> float:
        return self.limit * self._released // self._slices if self.limit else 0


class EndOffsets:
    """Each partition's end offset (high watermark) of a topic; 0 where there is none yet."""

    def __init__(self, bootstrap: str) -> None:
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": unique_name("ends"),
                "isolation.level": "read_uncommitted",
            }
        )

    def __call__(self, topic: str, partitions: int) -> dict[int, int]:
        ends = {}
        for p in range(partitions):
            try:
                ends[p] = self._consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=10
                )[1]
            except KafkaException:  # no such topic or partition yet, or no leader yet
                ends[p] = 0
        return ends

    def close(self) -> None:
        self._consumer.close()


class TopicReader:
    """Reads a topic from its beginning as it grows, into one `RecordLog` per partition."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, isolation_level: str) -> None:
        self.topic = topic
        self.partitions = partitions
        self.logs = {p: RecordLog() for p in range(partitions)}
        self._reached = dict.fromkeys(range(partitions), 0)  # next offset to look at
        self._seen = bytearray()  # by sequence number: read at least once
        self.distinct = 0  # sequence numbers read at least once
        self._assigned = False
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": unique_name("replica-reader"),
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": isolation_level,
            }
        )
        self._ends = EndOffsets(bootstrap)

    def poll(self, timeout: float = 0.5) -> int:
        """Read what is there (waiting up to `timeout`); returns the number of records read."""
        if not self._assigned:
            meta = self._consumer.list_topics(self.topic, timeout=10).topics.get(self.topic)
            if meta is None or meta.error is not None or len(meta.partitions) < self.partitions:
                time.sleep(timeout)
                return 0
            self._consumer.assign(
                [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)]
            )
            self._assigned = True
        read = 0
        for msg in self._consumer.consume(10_000, timeout=timeout):
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    p = msg.partition()
                    self._reached[p] = max(self._reached[p], msg.offset())
                    continue
                raise KafkaException(error)
            p, offset = msg.partition(), msg.offset()
            seq = sequence_of(msg.value())
            self.logs[p].append(
                offset,
                seq,
                content_digest(msg.key(), msg.value(), msg.headers(), msg.timestamp()[1]),
            )
            self._reached[p] = offset + 1
            if seq >= 0:
                if seq >= len(self._seen):
                    self._seen.extend(bytes(seq + 1 - len(self._seen) + 100_000))
                if not self._seen[seq]:
                    self._seen[seq] = 1
                    self.distinct += 1
            read += 1
        return read

    def drain(self, timeout: float = 180.0) -> None:
        """Read up to the end offsets the topic has now."""
        ends = self._ends(self.topic, self.partitions)

        def at_ends() -> bool:
            self.poll()
            return all(self._reached[p] >= n for p, n in ends.items())

        wait_until(
            at_ends,
            timeout=timeout,
            what=f"reading {self.topic} up to its end offsets {ends} "
            f"(reached {self._reached}; an open transaction holds read_committed readers back)",
            interval=0,
        )

    def holds_records_from(self, ends: dict[int, int]) -> bool:
        """Whether a record at or after `ends[p]` of some partition p has been read.

        Records as this reader sees them: with read_committed, records of
        transactions not committed yet (and transaction markers) do not count.
        """
        return any(log.offsets and log.offsets[-1] >= ends[p] for p, log in self.logs.items())

    @property
    def records(self) -> int:
        return sum(len(log) for log in self.logs.values())

    def close(self) -> None:
        self._consumer.close()
        self._ends.close()


def run_crash_scenario(
    source: DevCluster,
    target: DevCluster,
    work_dir: Path,
    mode: Mode,
    scenario: Scenario,
    say: Say = print,
) -> CrashReport:
    """Replicate a stream while crashing the driver `scenario.kills` times; audit the result."""
    began = time.monotonic()
    work_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(scenario.seed)
    topic = unique_name("crash")
    create_topic(source.bootstrap_servers, topic, partitions=scenario.partitions)
    flow = f"{source.alias}->{target.alias}"
    config = write_config(
        work_dir / f"{mode.name}.properties",
        [source, target],
        f"{flow}.enabled = true\n{flow}.topics = {topic}\n"
        f"micro-batch.max.records = {scenario.batch_records}\n{mode.settings}",
    )
    say(
        f"{mode.name}: {scenario.records:,} records into {source.alias}/{topic} "
        f"({scenario.partitions} partitions) at {scenario.rate:,}/s, {scenario.kills} kills, "
        f"seed {scenario.seed}"
    )
    run = _CrashRun(source, target, topic, config, work_dir, mode, scenario, rng, say)
    try:
        run.producer.start()
        for start in range(1, scenario.kills + 1):
            run.start_and_kill(start)
        run.start_and_catch_up(scenario.kills + 1)
        run.producer.stop()
        run.producer.check()
        run.replica.drain()
        report = run.audit()
    finally:
        run.close()
    report.seconds = round(time.monotonic() - began, 1)
    say(f"  {report.summary()}")
    return report


class _CrashRun:
    """The moving parts of one scenario: the stream, the replica's reader, each driver start."""

    def __init__(
        self,
        source: DevCluster,
        target: DevCluster,
        topic: str,
        config: Path,
        work_dir: Path,
        mode: Mode,
        scenario: Scenario,
        rng: random.Random,
        say: Say,
    ) -> None:
        self.source = source
        self.topic = topic
        self.remote = f"{source.alias}.{topic}"
        self.config = config
        self.work_dir = work_dir
        self.mode = mode
        self.scenario = scenario
        self.rng = rng
        self.say = say
        self.producer = SteadyProducer(
            source.bootstrap_servers, topic, scenario, rng.randrange(2**32)
        )
        self.target_ends = EndOffsets(target.bootstrap_servers)
        self.replica = TopicReader(
            target.bootstrap_servers, self.remote, scenario.partitions, mode.isolation_level
        )
        self.restarts: list[dict[int, int]] = []  # target end offsets before starts 2, 3, ...
        self.kills: list[Kill] = []
        self.problems: list[str] = []
        self.graceful_stop = False

    def _start(self, start: int) -> DriverProcess:
        """Start the driver and return once it replicated a record (the stream goes on)."""
        before = self.target_ends(self.remote, self.scenario.partitions)
        if start > 1:
            self.restarts.append(before)
        log = self.work_dir / "logs" / f"{self.mode.name}-driver-{start}.log"
        driver = DriverProcess(self.config, self.work_dir / "driver", log)
        try:

            def replicated_since_start() -> bool:
                driver.check()
                self.producer.check()
                self.replica.poll(0.1)
                return self.replica.holds_records_from(before)

            wait_until(
                replicated_since_start,
                timeout=self.scenario.start_timeout_s,
                what=f"start {start} of the driver to replicate a record to {self.remote} "
                f"(log: {log})",
                interval=0,
            )
        except BaseException:
            driver.crash()
            raise
        self.producer.release_slice()
        return driver

    def start_and_kill(self, start: int) -> None:
        terminated = start in self.scenario.terminations
        with self._start(start) as driver:
            up = time.monotonic() - driver.started
            delay = self.rng.uniform(0, self.scenario.max_kill_delay_s)
            time.sleep(delay)  # the random moment itself, not a synchronisation
            driver.check()
            if terminated:
                driver.stop(group=True)
            else:
                driver.crash()
        kill = Kill(
            start,
            round(delay, 2),
            sum(self.target_ends(self.remote, self.scenario.partitions).values()),
            self.producer.acknowledged,
            terminated=terminated,
            exit_code=driver.popen.returncode if terminated else None,
            traceback=terminated and "Traceback" in driver.log_path.read_text(errors="replace"),
        )
        self.kills.append(kill)
        how = f"SIGTERM to the group (exit code {kill.exit_code})" if terminated else "kill"
        self.say(
            f"  {how} {start}/{self.scenario.kills}: {delay:.2f}s after start {start} "
            f"replicated (up after {up:.1f}s); target {kill.target_records:,}, "
            f"source {kill.source_records:,} records"
        )

    def start_and_catch_up(self, start: int) -> None:
        with self._start(start) as driver:
            up = time.monotonic() - driver.started
            self.say(f"  start {start}: up after {up:.1f}s; catching up")
            if not self._catch_up(driver):
                self.problems.append(
                    f"the target did not receive every source record within "
                    f"{self.scenario.catch_up_timeout_s:.0f}s after the last start"
                )
            self.graceful_stop = driver.stop()

    def _catch_up(self, driver: DriverProcess) -> bool:
        """Read the replica until it holds every record of the finished stream; False on timeout."""
        deadline = time.monotonic() + self.scenario.catch_up_timeout_s
        next_report = time.monotonic() + 10
        while not (self.producer.finished and self.replica.distinct >= self.scenario.records):
            driver.check()
            self.producer.check()
            self.replica.poll()
            now = time.monotonic()
            if now > deadline:
                return False
            if now >= next_report:
                next_report = now + 10
                self.say(
                    f"  catching up: {self.replica.distinct:,} of "
                    f"{self.producer.acknowledged:,} source records on the target"
                )
        return True

    def audit(self) -> CrashReport:
        """Read the source back and audit every partition of the replica against it."""
        scenario = self.scenario
        self.say(f"  reading {self.source.alias}/{self.topic} back")
        original = TopicReader(
            self.source.bootstrap_servers, self.topic, scenario.partitions, "read_uncommitted"
        )
        try:
            original.drain()
        finally:
            original.close()
        audits = [
            audit_partition(
                p, original.logs[p], self.replica.logs[p], [ends[p] for ends in self.restarts]
            )
            for p in range(scenario.partitions)
        ]
        problems = list(self.problems)
        if original.records != scenario.records:
            problems.append(f"the source holds {original.records} records, not {scenario.records}")
        problems += [p for a in audits for p in a.problems]
        problems += [
            f"partition {a.partition}: {a.lost} records lost, the first at source offset "
            f"{a.first_lost}"
            for a in audits
            if a.lost
        ]
        return CrashReport(
            mode=self.mode.name,
            seed=scenario.seed,
            records=original.records,
            partitions=scenario.partitions,
            batch_records=scenario.batch_records,
            replay_bound=scenario.replay_bound,
            kills=self.kills,
            replicated=sum(a.replicated for a in audits),
            duplicates=sum(sum(a.duplicates) for a in audits),
            duplicates_per_kill=[
                sum(a.duplicates[k] for a in audits) for k in range(scenario.kills)
            ],
            lost=sum(a.lost for a in audits),
            seconds=0.0,
            graceful_stop=self.graceful_stop,
            problems=problems,
        )

    def close(self) -> None:
        self.producer.stop()
        self.replica.close()
        self.target_ends.close()
