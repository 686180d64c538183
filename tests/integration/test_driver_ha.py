"""Two drivers on one configuration: one replicates, the other stands by and takes over."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from mirrorline.admin_client import AdminClient
from mirrorline.engine.leadership import group_id
from mirrorline.engine.leadership_holder import LEADERSHIP_TOPIC
from support.driver_process import DriverProcess
from support.driving import write_config
from support.kafka_io import consume, consume_to_end, create_topic, end_offsets, unique_name
from support.wait import wait_until

PARTITIONS = 4
RECORDS = 60_000  # at least; the stream goes on until the takeover is over
RATE = 2_000  # records per second
BATCH_RECORDS = 8_000  # micro-batch.max.records: bounds the duplicates of a takeover
FLOW = "east->west"
STARTUP_S = 240  # two JVMs and Spark sessions starting side by side on a small machine
TAKEOVER_S = 30
# A flow's status line starts with its name, and its mode when exactly once.
_FLOW_LINE = rf"{re.escape(FLOW)}(?: \(exactly once\))?: "


class _DriverProcess:
    """A named `mirrorline driver` child process (see `support.driver_process`)."""

    def __init__(self, name: str, config: Path, directory: Path) -> None:
        self.name = name
        self.driver = DriverProcess(
            config, directory / f"work-{name}", directory / f"driver-{name}.log", status_every=1
        )
        self.process = self.driver.popen
        self.log = self.driver.log_path
        self.children: list[int] = []

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def status(self) -> str:
        """The flow's latest status line, without the flow's name ("" before the first)."""
        found = re.findall(rf"^{_FLOW_LINE}(\w.*)$", self.output(), re.MULTILINE)
        return found[-1] if found else ""

    def state(self) -> str:
        return self.status().split(" ", 1)[0].rstrip(",")

    def replicated(self) -> int:
        """Records this driver reports having replicated (its latest running status)."""
        counts = re.findall(
            rf"^{_FLOW_LINE}running, .* (\d+) records \(", self.output(), re.MULTILINE
        )
        return int(counts[-1]) if counts else 0

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise AssertionError(
                f"driver {self.name} exited with {self.process.returncode}: {self.output()[-3000:]}"
            )

    def crash(self) -> list[int]:
        """SIGKILL the driver alone, as a crash would; the pids it had started."""
        self.children = _descendants(self.pid)
        self.process.kill()
        self.process.wait(30)
        return self.children

    def kill_everything(self) -> None:
        """SIGKILL the driver and every process it started (its Spark JVM), if alive."""
        self.driver.crash()  # its whole session, while it runs
        for pid in self.children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    """Live processes below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat[0] != "Z":
            children.setdefault(int(stat[1]), []).append(int(proc.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _leader_pid(admin: AdminClient) -> int | None:
    """The pid in the client id of the member holding the flow's leadership partition."""
    group = group_id(FLOW)
    try:
        description = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
    except KafkaException:
        return None
    for member in description.members:
        partitions = member.assignment.topic_partitions if member.assignment else []
        if any(tp.topic == LEADERSHIP_TOPIC and tp.partition == 0 for tp in partitions):
            return int(member.client_id.rsplit(":", 1)[1])
    return None


class _SteadyProducer(threading.Thread):
    """Writes RATE records per second, round-robin over the partitions.

    It stops once it wrote RECORDS and `finish` is set, so that the stream lasts
    through the takeover however slow the machine is; `stop` ends it at once.
    """

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="steady-producer", daemon=True)
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self._topic = topic
        self.finish = threading.Event()
        self.stop = threading.Event()
        self.sent = 0
        self.errors: list[str] = []

    def run(self) -> None:
        started = time.monotonic()
        while not self.stop.is_set() and not (self.sent >= RECORDS and self.finish.is_set()):
            due = int((time.monotonic() - started) * RATE)
            for i in range(self.sent, due):
                self._producer.produce(
                    self._topic,
                    key=f"k{i % 97}".encode(),
                    value=f"record-{i}".encode(),
                    partition=i % PARTITIONS,
                    on_delivery=self._delivered,
                )
            self.sent = due
            self._producer.poll(0.02)
        if self._producer.flush(60):
            self.errors.append("records left unacknowledged")

    def _delivered(self, error, _msg) -> None:
        if error is not None:
            self.errors.append(str(error))


def _last_values(bootstrap: str, topic: str) -> dict[int, bytes]:
    """The value of the last committed record of each partition of `topic` that has one.

    Read from a little before the end: in exactly-once mode the last offsets are
    transaction markers, not records.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_name("last"),
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        values = {}
        for partition, end in end_offsets(bootstrap, topic).items():
            if end <= 0:
                continue
            consumer.assign([TopicPartition(topic, partition, max(0, end - 50))])
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                msg = consumer.poll(1)
                if msg is None:
                    continue
                if msg.error() is not None:
                    break  # end of the committed records
                values[partition] = msg.value()
        return values
    finally:
        consumer.close()


def _duplicates_and_reruns(source: list, target: list) -> tuple[int, int]:
    """(duplicates, re-read runs) of `target` as an at-least-once copy of `source`.

    Each target record must be the source record after the previous one, or start
    a re-read run at an earlier source record (a replay after a takeover), which
    then goes on in source order. A record out of order or missing fails.
    """
    index_of = {record: i for i, record in enumerate(source)}
    assert len(index_of) == len(source), "source records must be distinct"
    previous, reruns = -1, 0
    for position, record in enumerate(target):
        i = index_of.get(record)
        assert i is not None, f"target record {position} is not a source record: {record}"
        if i <= previous:
            reruns += 1
        else:
            assert i == previous + 1, (
                f"target record {position} skips source records {previous + 1} to {i - 1}"
            )
        previous = i
    assert previous == len(source) - 1, f"copied up to source record {previous} of {len(source)}"
    return len(target) - len(source), reruns


@pytest.mark.parametrize("mode", ["at_least_once", "exactly_once"])
def test_one_driver_replicates_and_the_standby_takes_over_when_it_is_killed(
    two_clusters, tmp_path, mode
):
    east, west = two_clusters
    exactly_once = mode == "exactly_once"
    topic = unique_name("ha")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\n"
        f"micro-batch.max.records = {BATCH_RECORDS}\n"
        + ("exactly.once.source.support = enabled\n" if exactly_once else ""),
    )
    admin = AdminClient({"bootstrap.servers": west.bootstrap_servers})
    producer = _SteadyProducer(east.bootstrap_servers, topic)
    drivers: list[_DriverProcess] = []
    try:
        started = time.monotonic()
        drivers = [_DriverProcess(name, config, tmp_path) for name in ("a", "b")]
        by_pid = {d.pid: d for d in drivers}

        def one_leads_one_stands_by():
            """The driver holding the leadership partition runs; the other names it."""
            for d in drivers:
                d.check_alive()
            leader = by_pid.get(_leader_pid(admin))
            if leader is None or leader.state() != "running":
                return None
            other = next(d for d in drivers if d is not leader)
            standing_by = re.fullmatch(
                rf"standby — active driver: mirrorline-driver@\S+:{leader.pid} "
                r"\(leading since [0-9-]+ [0-9:]+ UTC\)",
                other.status(),
            )
            return leader if standing_by else None

        active = wait_until(one_leads_one_stands_by, timeout=STARTUP_S, what="a leader")
        standby = next(d for d in drivers if d is not active)
        print(f"driver {active.name} leads {time.monotonic() - started:.1f}s after both started")

        producer.start()

        def active_writes_a_batch():
            # Kill it mid-batch: records on the target beyond what it reported done.
            active.check_alive()
            done = active.replicated()
            on_target = sum(end_offsets(west.bootstrap_servers, remote).values())
            return done >= RATE and on_target > done + RATE // 4

        wait_until(
            active_writes_a_batch, timeout=180, what=f"driver {active.name} to write a batch"
        )
        standby.check_alive()
        assert standby.state() == "standby", standby.status()
        assert "replicating" not in standby.output(), "the standby started a query"

        started_by_active = active.crash()
        killed_at = time.monotonic()
        print(f"killed driver {active.name} (pid {active.pid}) after {producer.sent} records")

        def survivor(condition):
            def check():
                standby.check_alive()
                return condition()

            return check

        wait_until(
            survivor(lambda: _leader_pid(admin) == standby.pid),
            timeout=TAKEOVER_S,
            what=f"driver {standby.name} to lead",
        )
        leads_after = time.monotonic() - killed_at
        wait_until(
            survivor(lambda: "replicating" in standby.output()),
            timeout=TAKEOVER_S - leads_after,
            what=f"driver {standby.name} to start its query",
        )
        query_after = time.monotonic() - killed_at
        # Its first micro-batch in a cold Spark session takes long on a busy machine:
        # measured, not bounded.
        wait_until(
            survivor(lambda: standby.replicated() > 0),
            timeout=180,
            what=f"driver {standby.name} to replicate",
        )
        replicates_after = time.monotonic() - killed_at
        print(
            f"driver {standby.name} leads {leads_after:.1f}s after the kill, starts its query "
            f"after {query_after:.1f}s and has replicated a batch after {replicates_after:.1f}s"
        )
        # Its Spark JVM notices that the driver is gone and exits too.
        wait_until(
            lambda: not [p for p in started_by_active if _alive(p)],
            timeout=30,
            what=f"the processes driver {active.name} started to exit",
        )

        producer.finish.set()
        producer.join(120)
        assert not producer.is_alive() and not producer.errors, producer.errors
        source = consume(east.bootstrap_servers, topic, expected=producer.sent, timeout=120)
        assert len(source) == producer.sent

        # Duplicates make counts useless here: caught up means every partition's
        # last source record has been copied last.
        last = {r.partition: r.value for r in sorted(source, key=lambda r: r.offset)}

        def caught_up():
            standby.check_alive()
            return _last_values(west.bootstrap_servers, remote) == last

        wait_until(caught_up, timeout=300, what=f"the last records of {topic} in {remote}")
        copies = end_offsets(west.bootstrap_servers, remote)
        # Read committed; in exactly-once mode transaction markers take offsets too.
        target = consume_to_end(west.bootstrap_servers, remote)
        if not exactly_once:
            assert len(target) == sum(copies.values())

        total_duplicates = 0
        for partition in range(PARTITIONS):
            original = [
                (r.key, r.value, r.timestamp, r.headers)
                for r in sorted(source, key=lambda r: r.offset)
                if r.partition == partition
            ]
            copy = [
                (r.key, r.value, r.timestamp, r.headers)
                for r in sorted(target, key=lambda r: r.offset)
                if r.partition == partition
            ]
            duplicates, reruns = _duplicates_and_reruns(original, copy)
            print(f"partition {partition}: {duplicates} duplicates in {reruns} re-read runs")
            assert reruns <= 1, f"partition {partition} was re-read {reruns} times"
            total_duplicates += duplicates
        print(f"{total_duplicates} duplicates in total for {len(source)} records")
        if exactly_once:  # the new leader's transactions fenced the killed driver's
            assert total_duplicates == 0
        # One takeover re-reads at most the batch the killed driver was writing.
        assert total_duplicates <= BATCH_RECORDS

        # A clean stop ends the driver and everything it started.
        started_by_standby = _descendants(standby.pid)
        standby.process.send_signal(signal.SIGTERM)
        assert standby.process.wait(90) == 0, standby.output()[-3000:]
        wait_until(
            lambda: not [p for p in started_by_standby if _alive(p)],
            timeout=30,
            what=f"the processes driver {standby.name} started to exit",
        )
    finally:
        producer.stop.set()
        for d in drivers:
            d.kill_everything()
