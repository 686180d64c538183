"""Taking flows over from a real MirrorMaker 2 on the same file, without copying twice.

MM2 replicates a live stream and is stopped (cleanly, or with SIGKILL, when
it has written records past its last committed offset); `mirrorline driver`
then runs the very same file. Every source record must be on the target
exactly once, in order, and a consumer group MM2 checkpointed keeps
translating exactly. While MM2 still runs, the takeover is refused.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from pathlib import Path

from mirrorline.config import load_config
from mirrorline.kafka import ClusterClients, KafkaOperationError
from mirrorline.operations.positions import saved_progress
from mirrorline.predecessor import mm2_state
from support.control import reset_control
from support.driver_process import run_mirrorline
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    by_partition,
    checkpoints_of,
    cluster_clients,
    commit_offsets,
    committed_offsets,
    consume,
    create_topic,
    end_offsets,
    produce,
    topic_names,
    unique_name,
)
from support.mm2_process import SINGLE_BROKER_LINES, Mm2Process
from support.wait import wait_until

PARTITIONS = 4
TOTAL = 40_000
RATE = 2_000  # records per second


class SteadyStream:
    """Produces TOTAL numbered records at RATE per second on a thread of its own."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.produced: list[Record] = []
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="steady stream", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            started = time.monotonic()
            chunk = RATE // 10
            for first in range(0, TOTAL, chunk):
                records = [
                    Record(
                        f"k{i % 977}".encode(),
                        f"value-{i}".encode(),
                        (("seq", str(i).encode()),) if i % 3 else (),
                        None,
                        i % PARTITIONS,
                    )
                    for i in range(first, first + chunk)
                ]
                self.produced += produce(self.bootstrap, self.topic, records)
                ahead = started + (first + chunk) / RATE - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)  # pacing the stream, not synchronising the test
        except BaseException as exc:  # noqa: BLE001 - surfaced by `finished`
            self.failure = exc

    def finished(self) -> bool:
        if self.failure is not None:
            raise self.failure
        return not self._thread.is_alive()


def _remote_count(west, topic: str) -> int:
    if topic not in topic_names(west.bootstrap_servers):
        return 0
    return sum(end_offsets(west.bootstrap_servers, topic).values())


def _config(tmp_path: Path, east, west, topic: str, group: str, extra: str = "") -> Path:
    """One file for both tools: MM2's Connect topics and group named for this test."""
    body = "\n".join(
        [
            *SINGLE_BROKER_LINES,
            "east->west.enabled = true",
            f"east->west.topics = {topic}",
            f"groups = {group}",
            f"offset.storage.topic = {topic}.offsets",
            f"config.storage.topic = {topic}.configs",
            f"status.storage.topic = {topic}.status",
            "emit.checkpoints.interval.seconds = 1",
            "refresh.groups.interval.seconds = 1",
            "west.offset.flush.interval.ms = 5000",  # MM2 reads it per target cluster
            extra,
        ]
    )
    return write_config(tmp_path / "mm2.properties", [east, west], body + "\n")


def _mm2_committed(west, topic: str) -> dict:
    """MM2's committed offsets for the test's flow (none while its topic is not ready)."""
    try:
        return mm2_state.committed_offsets(
            {"bootstrap.servers": west.bootstrap_servers}, f"{topic}.offsets", "east"
        )
    except KafkaOperationError:
        return {}


def _wait_for_checkpoints(west, group: str, remote: str, offset: int) -> None:
    """Until every partition's checkpoint says `offset` on the source is `offset` on west."""

    def exact() -> bool:
        found = checkpoints_of(west.bootstrap_servers, "east", group, remote)
        return len(found) == PARTITIONS and all(
            (c.upstream_offset, c.downstream_offset) == (offset, offset) for c in found.values()
        )

    wait_until(exact, timeout=90, what=f"checkpoints of {group} at {offset}")


def _assert_copied_once(east, west, topic: str, stream: SteadyStream) -> None:
    remote = f"east.{topic}"
    copies = consume(west.bootstrap_servers, remote, expected=TOTAL, timeout=120)
    originals = consume(east.bootstrap_servers, topic, expected=TOTAL, timeout=120)
    assert len(originals) == len(stream.produced) == TOTAL
    assert len(copies) == TOTAL, f"{len(copies)} copies of {TOTAL} records"
    assert by_partition(copies) == by_partition(originals)


def test_a_stopped_mm2_is_taken_over_and_its_group_fails_over(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic, group = unique_name("handover"), unique_name("readers")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, PARTITIONS)
    config = _config(tmp_path, east, west, topic, group)
    # A group that will have read the first 1,000 records of each partition.
    commit_offsets(east.bootstrap_servers, group, topic, dict.fromkeys(range(PARTITIONS), 1000))
    mm2 = Mm2Process(config, "west", tmp_path / "mm2.log")
    try:
        wait_until(lambda: remote in topic_names(west.bootstrap_servers), timeout=120, what="MM2")
        stream = SteadyStream(east.bootstrap_servers, topic)
        wait_until(
            lambda: len(_mm2_committed(west, topic)) == PARTITIONS,
            timeout=60,
            what="MM2's committed offsets",
        )
        wait_until(
            lambda: (
                len(checkpoints_of(west.bootstrap_servers, "east", group, remote)) == PARTITIONS
            ),
            timeout=120,
            what="MM2's checkpoints of the group",
        )
        check = run_mirrorline("config", "check", config)
        assert check.returncode == 0, check.stderr
        assert "waits for MirrorMaker 2 to stop: its group east-mm2" in check.stdout
        with running_driver(config, spark, tmp_path / "work") as driver:
            # MM2 still runs the flow: refused, and nothing written.
            refused = wait_until(
                lambda: (
                    "still replicates" in driver.statuses()[0].reason
                    and driver.statuses()[0].reason
                ),
                timeout=90,
                what="the takeover refused",
            )
            assert "group east-mm2 on west" in refused and "Nothing was written" in refused
            target = ClusterClients.of("west", {"bootstrap.servers": west.bootstrap_servers})
            saved = saved_progress(load_config(config).flow("east", "west"), target, 30)
            assert [tp for tp in saved if tp[0] == topic] == []
            mm2.stop()
            wait_until(stream.finished, timeout=120, what="the stream to end")
            wait_until(
                lambda: _remote_count(west, remote) >= TOTAL, timeout=180, what="every record"
            )
            _assert_copied_once(east, west, topic, stream)
            # The group's offset in MM2's range translates exactly (MM2's own checkpoint
            # was an offset sync's, up to offset.lag.max before it), then one in Mirrorline's.
            _wait_for_checkpoints(west, group, remote, 1000)
            commit_offsets(east.bootstrap_servers, group, topic, dict.fromkeys(range(4), 9_990))
            _wait_for_checkpoints(west, group, remote, 9_990)
            done = run_mirrorline(
                "failover",
                "-c",
                config,
                "--from",
                "east",
                "--to",
                "west",
                "--planned",
                "--state-file",
                tmp_path / "failover.json",
                "--timeout",
                "120",
                "--json",
            )
            assert done.returncode == 0, done.stdout + done.stderr
            [moved] = json.loads(done.stdout)["groups"]
            assert moved["group"] == group and moved["status"] == "moved", moved
        # On west the group goes on at the copy of the first record it had not read.
        assert committed_offsets(west.bootstrap_servers, group, remote, 4) == dict.fromkeys(
            range(4), 9_990
        )
    finally:
        if mm2.running():
            mm2.kill()
        reset_control(west, "east->west")  # the failover stopped the flow


def test_a_killed_mm2_is_taken_over_exactly_once(two_clusters, spark, tmp_path, caplog):
    """SIGKILL leaves records past MM2's last commit on the target; Mirrorline, in
    exactly-once mode for this flow (a flow-level key MM2's workers do not read),
    copies none of them again."""
    east, west = two_clusters
    topic, group = unique_name("killed"), unique_name("readers")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, PARTITIONS)
    config = _config(
        tmp_path, east, west, topic, group, "east->west.exactly.once.source.support = enabled"
    )
    mm2 = Mm2Process(config, "west", tmp_path / "mm2.log")
    try:
        wait_until(lambda: remote in topic_names(west.bootstrap_servers), timeout=120, what="MM2")
        stream = SteadyStream(east.bootstrap_servers, topic)
        wait_until(
            lambda: len(_mm2_committed(west, topic)) == PARTITIONS,
            timeout=60,
            what="MM2's committed offsets",
        )
        # Killed between two of its offset commits (every 5 s), while the stream goes on.
        wait_until(
            lambda: (
                _remote_count(west, remote)
                > sum(_mm2_committed(west, topic).values()) + PARTITIONS + 1_000
            ),
            timeout=60,
            what="MM2 to copy past its last commit",
        )
        mm2.kill()
        # Its worker stays in the group until its session times out.
        admin = cluster_clients(west).admin
        wait_until(
            lambda: not mm2_state.connect_group(admin, "east-mm2").active,
            timeout=60,
            what="the killed worker to leave MM2's group",
        )
        check = run_mirrorline("config", "check", config)
        assert "takes over from MirrorMaker 2 at" in check.stdout, check.stdout
        caplog.set_level(logging.INFO, logger="mirrorline.engine.takeover")
        with running_driver(config, spark, tmp_path / "work"):
            wait_until(stream.finished, timeout=120, what="the stream to end")
            wait_until(
                lambda: _remote_count(west, remote) >= TOTAL, timeout=240, what="every record"
            )
            _assert_copied_once(east, west, topic, stream)
        [line] = [
            r.getMessage()
            for r in caplog.records
            if "takes over from MirrorMaker" in r.getMessage()
        ]
        past = int(re.search(r"; (\d+) records it wrote after its last commit", line).group(1))
        assert past > 0, line
    finally:
        if mm2.running():
            mm2.kill()
