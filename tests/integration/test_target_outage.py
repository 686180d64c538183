"""The target broker stops for a minute mid-stream: the status says so (the driver's, the
service's REST API, `mirrorline status` and the web UI), replication resumes by itself soon
after the broker's return, and every source record reaches the target."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from playwright.sync_api import expect

from mirrorline.devcluster import DevClusters
from support.browser import chromium
from support.driving import running_driver, write_config
from support.kafka_io import consume, create_topic, end_offsets, unique_name
from support.service import get_ok, running_service
from support.wait import assert_stays, wait_until

PARTITIONS = 4
RATE = 1_000  # records per second, spread over the partitions
OUTAGE_S = 60.0
RESUME_WITHIN_S = 15.0


@pytest.fixture
def own_clusters(tmp_path):
    """Clusters of this test alone: it stops one of them."""
    dev = DevClusters(tmp_path / "clusters")
    east, west = dev.up(["east", "west"], die_with_parent=True)
    yield dev, east, west
    dev.down()


class SteadyProducer(threading.Thread):
    """Produces `RATE` records per second round-robin over the partitions until stopped.

    Each value is `<partition>:<sequence>`, numbered per partition, so the
    target's copy can be checked for order and completeness.
    """

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="steady-producer", daemon=True)
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
        )
        self._topic = topic
        self._halt = threading.Event()
        self.failures: list[str] = []
        self.produced = 0

    def run(self) -> None:
        tick = 0.1
        per_tick = int(RATE * tick)
        sequence = [0] * PARTITIONS
        due = time.monotonic()
        while not self._halt.is_set():
            for _ in range(per_tick):
                partition = self.produced % PARTITIONS
                self._producer.produce(
                    self._topic,
                    value=f"{partition}:{sequence[partition]}".encode(),
                    partition=partition,
                    on_delivery=self._delivered,
                )
                sequence[partition] += 1
                self.produced += 1
            self._producer.poll(0)
            due += tick
            self._halt.wait(max(0.0, due - time.monotonic()))  # pacing, not synchronisation
        remaining = self._producer.flush(60)
        if remaining:
            self.failures.append(f"{remaining} records not acknowledged by the source")

    def _delivered(self, error, _msg) -> None:
        if error is not None:
            self.failures.append(error.str())

    def finish(self) -> None:
        """Stop producing and wait until every record is acknowledged by the source."""
        self._halt.set()
        self.join(90)
        assert not self.is_alive(), "the source producer did not finish"
        assert self.failures == [], self.failures[:3]


def _served_state(url: str) -> tuple[str, str]:
    """The flow's state and reason as the service reports them."""
    doc = get_ok(url)
    return doc["state"], doc["reason"]


def _status_command(config) -> tuple[str, int]:
    """The flow's state as `mirrorline status --json` prints it, and the exit code."""
    done = subprocess.run(
        [sys.executable, "-m", "mirrorline", "status", "-c", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    [flow] = json.loads(done.stdout)["flows"]
    return flow["state"], done.returncode


def _replicated(driver) -> int:
    return driver.statuses()[0].records


def _values_by_partition(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    total = sum(end_offsets(bootstrap, topic).values())
    records = consume(bootstrap, topic, expected=total, timeout=120)
    assert len(records) == total, f"read {len(records)} of {total} records of {topic}"
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        out[r.partition].append(r.value)
    return out


def _newest_values(bootstrap: str, topic: str) -> dict[int, bytes | None]:
    """The value of each partition's last record (None for an empty partition)."""
    ends = end_offsets(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("newest")})
    try:
        newest: dict[int, bytes | None] = {}
        for partition, end in ends.items():
            newest[partition] = None
            if end == 0:
                continue
            consumer.assign([TopicPartition(topic, partition, end - 1)])
            msg = consumer.poll(10)
            assert msg is not None and not msg.error(), f"{topic}[{partition}]@{end - 1}: {msg}"
            newest[partition] = msg.value()
        return newest
    finally:
        consumer.close()


def _first_occurrences(values: list[bytes]) -> list[bytes]:
    seen: set[bytes] = set()
    return [v for v in values if not (v in seen or seen.add(v))]


def _order_problem(partition: int, target: list[bytes], source: list[bytes]) -> str:
    """What breaks "every source record, in order" on one target partition ("" if nothing).

    At least once allows a replay to repeat records, never to skip or reorder them.
    """
    firsts = _first_occurrences(target)
    if firsts == source:
        return ""
    known, copied = set(source), set(firsts)
    missing = [v for v in source if v not in copied]
    unknown = [v for v in firsts if v not in known]
    at = next((i for i, (t, s) in enumerate(zip(firsts, source, strict=False)) if t != s), None)
    where = ""
    if at is not None:
        where = (
            f"; first difference at index {at}: target {firsts[max(0, at - 2) : at + 3]}"
            f" where the source has {source[max(0, at - 2) : at + 3]}"
        )
    return (
        f"partition {partition}: {len(target)} target records, {len(firsts)} distinct, "
        f"{len(source)} source records; {len(missing)} missing {missing[:5]}, "
        f"{len(unknown)} not from the source {unknown[:5]}{where}"
    )


def test_target_outage_is_reported_and_replication_resumes_without_loss(
    own_clusters, spark, tmp_path
):
    dev, east, west = own_clusters
    topic = unique_name("stream")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "emit.metrics.interval.seconds = 1\n",
        heartbeats=True,  # the clusters are this test's own
    )
    producer = SteadyProducer(east.bootstrap_servers, topic)
    producer.start()
    try:
        with (
            chromium() as browser,
            running_driver(config, spark, tmp_path / "work") as driver,
            running_service(config) as service,
        ):
            flow_url = f"{service.url}/v2/replications/east/west"
            wait_until(
                lambda: _served_state(flow_url)[0] == "running",
                timeout=60,
                what="the service to report the flow running",
            )
            page = browser.new_page()
            page.goto(f"{service.url}/")
            ui_state = page.locator('[data-testid="flow-row"][data-flow="east->west"]')
            expect(ui_state).to_have_attribute("data-state", "running", timeout=30_000)
            wait_until(
                lambda: _replicated(driver) >= 5 * RATE,
                timeout=180,
                what="the flow to replicate its first records",
            )

            dev.stop("west")
            stopped_at = time.monotonic()

            def shows_outage():
                status = driver.statuses()[0]
                if status.state in ("degraded", "failed") and (
                    "target cluster west unreachable: " in status.reason
                ):
                    return status
                return None

            seen = wait_until(shows_outage, timeout=15, what="the status to show the outage")
            print(
                f"outage shown after {time.monotonic() - stopped_at:.1f}s: "
                f"{seen.state}: {seen.reason}"
            )
            served = wait_until(
                lambda: (
                    (s := _served_state(flow_url))[0] == "degraded"
                    and "target cluster west" in s[1]
                    and s
                ),
                timeout=30 - (time.monotonic() - stopped_at),
                what="the service to report the outage within 30 s",
            )
            print(f"service shows the outage after {time.monotonic() - stopped_at:.1f}s: {served}")
            state, code = _status_command(config)
            assert (state, code) == ("degraded", 1), (state, code)
            expect(ui_state).to_have_attribute(
                "data-state",
                "degraded",
                timeout=max(1_000, int((30 - (time.monotonic() - stopped_at)) * 1000)),
            )
            print(f"the web UI shows it after {time.monotonic() - stopped_at:.1f}s")
            assert_stays(
                shows_outage,
                seconds=OUTAGE_S - (time.monotonic() - stopped_at),
                what="the status showing the outage while the broker is down",
            )

            before_return = _replicated(driver)
            dev.start("west", die_with_parent=True)
            returned_at = time.monotonic()

            wait_until(
                lambda: _replicated(driver) > before_return,
                timeout=RESUME_WITHIN_S,
                what=f"replication to resume within {RESUME_WITHIN_S:.0f}s of the broker's return",
            )
            resumed_s = time.monotonic() - returned_at
            wait_until(
                lambda: driver.statuses()[0].state == "running",
                timeout=RESUME_WITHIN_S,
                what="the status to clear",
            )
            cleared_s = time.monotonic() - returned_at
            produced_by_return = producer.produced
            wait_until(
                lambda: _replicated(driver) >= produced_by_return,
                timeout=180,
                what="the flow to catch up with the records produced during the outage",
            )
            caught_up_s = time.monotonic() - returned_at
            print(
                f"broker back: replication resumed after {resumed_s:.1f}s, status cleared "
                f"after {cleared_s:.1f}s, backlog of {produced_by_return} records replicated "
                f"after {caught_up_s:.1f}s"
            )

            producer.finish()
            total = producer.produced
            newest = _newest_values(east.bootstrap_servers, topic)
            # Replays add duplicates, so the target's end offsets can reach the source's
            # count early; the newest source record of every partition arriving cannot.
            wait_until(
                lambda: _newest_values(west.bootstrap_servers, remote) == newest,
                timeout=180,
                what=f"the newest of the {total} records on every target partition",
            )
            status = driver.statuses()[0]
            assert status.state == "running", status
            assert status.reason == ""
            wait_until(
                lambda: _served_state(flow_url) == ("running", ""),
                timeout=30,
                what="the service to report the flow running again",
            )
            assert _status_command(config) == ("running", 0)
            expect(ui_state).to_have_attribute("data-state", "running", timeout=15_000)
            # The service reads the heartbeats topic again once the target is back.
            try:
                wait_until(
                    lambda: (
                        (get_ok(flow_url)["last_heartbeat_ms"] or 0) > time.time() * 1000 - 30_000
                    ),
                    timeout=60,
                    what="the service to serve a heartbeat of the last 30 s",
                )
            except AssertionError as exc:
                # Whether the driver stopped writing heartbeats or the service reading them.
                emitted = driver.heartbeat_statuses()
                raise AssertionError(f"{exc}; the driver's heartbeats: {emitted}") from None
    finally:
        producer.finish()  # a second call is harmless; on failure, never leave it running

    source = _values_by_partition(east.bootstrap_servers, topic)
    target = _values_by_partition(west.bootstrap_servers, remote)
    assert sum(len(v) for v in source.values()) == total
    problems = [_order_problem(p, target[p], source[p]) for p in range(PARTITIONS)]
    assert not any(problems), "\n".join(p for p in problems if p)
    duplicates = sum(len(target[p]) - len(source[p]) for p in range(PARTITIONS))
    print(f"{total} source records, all on the target in order; {duplicates} duplicates")
