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

import pytest

from mirrorline.config import load_config
from mirrorline.kafka import ClusterClients, KafkaOperationError
from mirrorline.operations.positions import saved_progress
from mirrorline.predecessor import mm2_state
from mirrorline.predecessor.handover import preview
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
TOTAL = 30_000
RATE = 3_000  # records per second
LATER = PARTITIONS * 100  # records produced after a takeover
LATE = TOTAL // PARTITIONS + 50  # a source offset among them
MODES = {"at_least_once": "disabled", "exactly_once": "enabled"}


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


def _later(i: int) -> Record:
    return Record(f"later{i}".encode(), b"after the takeover", (), None, i % PARTITIONS)


def _remote_count(west, topic: str) -> int:
    if topic not in topic_names(west.bootstrap_servers):
        return 0
    return sum(end_offsets(west.bootstrap_servers, topic).values())


def _config(
    tmp_path: Path, east, west, topic: str, group: str, mode: str, flush_ms: int = 5_000
) -> Path:
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
            f"west.offset.flush.interval.ms = {flush_ms}",  # MM2 reads it per target cluster
            # A flow-level key MM2's workers do not read: it sets Mirrorline's mode only.
            f"east->west.exactly.once.source.support = {MODES[mode]}",
        ]
    )
    return write_config(tmp_path / "mm2.properties", [east, west], body + "\n")


def _mm2_committed(west, topic: str) -> dict:
    """MM2's committed offsets for the test's topic (none while its offsets topic is not
    ready); MM2 also copies, and commits, any heartbeats topic east has."""
    try:
        found = mm2_state.committed_offsets(
            {"bootstrap.servers": west.bootstrap_servers}, f"{topic}.offsets", "east"
        )
    except KafkaOperationError:
        return {}
    return {tp: offset for tp, offset in (found or {}).items() if tp[0] == topic}


def _stream_through(east, west, topic: str) -> SteadyStream:
    """The steady stream, started once MM2 replicates the topic."""
    remote = f"east.{topic}"
    wait_until(lambda: remote in topic_names(west.bootstrap_servers), timeout=120, what="MM2")
    return SteadyStream(east.bootstrap_servers, topic)


def _wait_for_commits(west, topic: str) -> None:
    wait_until(
        lambda: len(_mm2_committed(west, topic)) == PARTITIONS,
        timeout=60,
        what="MM2's committed offsets",
    )


def _wait_for_checkpoints(west, group: str, remote: str, expected: dict[int, int]) -> None:
    """Until each partition's checkpoint translates its source offset in `expected`
    (partition: source offset) to the same offset on west."""
    _wait_for_translation(west, group, remote, {p: (o, o) for p, o in expected.items()})


def _wait_for_translation(west, group: str, remote: str, expected: dict) -> None:
    """Until the checkpoints of `group` are `expected` (partition: (source, target))."""
    seen: dict = {}

    def exact() -> bool:
        found = checkpoints_of(west.bootstrap_servers, "east", group, remote)
        seen.update({p: (c.upstream_offset, c.downstream_offset) for p, c in found.items()})
        return seen == expected

    try:
        wait_until(exact, timeout=90, what=f"checkpoints of {group}: {expected}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the last ones: {seen}") from None


def _copies_of_later(west, remote: str) -> dict[int, int]:
    """Per partition, the target offset of the copy of source offset LATE."""
    copies = consume(west.bootstrap_servers, remote, expected=TOTAL + LATER, timeout=120)
    assert len(copies) == TOTAL + LATER, f"{len(copies)} copies of {TOTAL + LATER} records"
    at = {c.key: c.offset for c in copies}
    return {p: at[_later(p + PARTITIONS * (LATE - TOTAL // PARTITIONS)).key] for p in range(4)}


def _assert_copied_once(east, west, topic: str, stream: SteadyStream) -> None:
    remote = f"east.{topic}"
    copies = consume(west.bootstrap_servers, remote, expected=TOTAL, timeout=120)
    originals = consume(east.bootstrap_servers, topic, expected=TOTAL, timeout=120)
    assert len(originals) == len(stream.produced) == TOTAL
    assert len(copies) == TOTAL, f"{len(copies)} copies of {TOTAL} records"
    assert by_partition(copies) == by_partition(originals)


@pytest.mark.parametrize("mode", MODES)
def test_a_stopped_mm2_is_taken_over_and_its_group_fails_over(two_clusters, spark, tmp_path, mode):
    east, west = two_clusters
    topic, group = unique_name("handover"), unique_name("readers")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, PARTITIONS)
    config = _config(tmp_path, east, west, topic, group, mode)
    # A group that will have read the first 1,000 records of each partition.
    commit_offsets(east.bootstrap_servers, group, topic, dict.fromkeys(range(PARTITIONS), 1000))
    mm2 = Mm2Process(config, "west", tmp_path / "mm2.log")
    try:
        stream = _stream_through(east, west, topic)
        _wait_for_commits(west, topic)
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
            # was an offset sync's, up to offset.lag.max before it), then one in Mirrorline's
            # copy of records produced after the takeover.
            _wait_for_checkpoints(west, group, remote, dict.fromkeys(range(4), 1000))
            produce(east.bootstrap_servers, topic, [_later(i) for i in range(LATER)])
            late = _copies_of_later(west, remote)  # transaction markers move exactly-once's
            commit_offsets(east.bootstrap_servers, group, topic, dict.fromkeys(range(4), LATE))
            _wait_for_translation(west, group, remote, {p: (LATE, o) for p, o in late.items()})
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
        assert committed_offsets(west.bootstrap_servers, group, remote, 4) == late
    finally:
        if mm2.running():
            mm2.kill()
        reset_control(west, "east->west")  # the failover stopped the flow


@pytest.mark.parametrize(
    "mode, commits",
    [("exactly_once", "between two commits"), ("at_least_once", "before its first commit")],
)
def test_a_killed_mm2_is_taken_over(two_clusters, spark, tmp_path, caplog, mode, commits):
    """SIGKILL leaves records past MM2's last commit on the target (or, killed before
    its first commit, only its offset syncs say what it copied); Mirrorline, in
    exactly-once or at-least-once mode for this flow (flow-level keys MM2's
    workers do not read), copies none of them again."""
    east, west = two_clusters
    topic, group = unique_name("killed"), unique_name("readers")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, PARTITIONS)
    first_commit = commits == "before its first commit"
    config = _config(tmp_path, east, west, topic, group, mode, 600_000 if first_commit else 5_000)
    mm2 = Mm2Process(config, "west", tmp_path / "mm2.log")
    try:
        stream = _stream_through(east, west, topic)
        if first_commit:
            wait_until(
                lambda: _remote_count(west, remote) > TOTAL // 4,
                timeout=60,
                what="MM2 to copy a quarter",
            )
            assert _mm2_committed(west, topic) == {}
        else:
            _wait_for_commits(west, topic)
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
        assert "takes over from MirrorMaker 2 " in check.stdout, check.stdout
        caplog.set_level(logging.INFO, logger="mirrorline.engine.takeover")
        with running_driver(config, spark, tmp_path / "work"):
            wait_until(stream.finished, timeout=120, what="the stream to end")
            wait_until(
                lambda: _remote_count(west, remote) >= TOTAL, timeout=240, what="every record"
            )
            _assert_copied_once(east, west, topic, stream)
            # `mirrorline verify` proves the same through the runs MM2's syncs began.
            verified = run_mirrorline(
                "verify", "-c", config, "-s", "east", "-t", "west", "--topics", topic, "--json"
            )
            report = json.loads(verified.stdout)
            assert verified.returncode == 0, report
            assert report["verdict"] == "identical" and report["totals"]["checked"] > 0
        [line] = [
            r.getMessage()
            for r in caplog.records
            if "takes over from MirrorMaker" in r.getMessage()
        ]
        if first_commit:  # every partition followed from MM2's offset syncs
            notes = [
                r.getMessage() for r in caplog.records if "committed no offset" in r.getMessage()
            ]
            assert len(notes) == PARTITIONS, notes
        else:
            past = re.search(r"; (\d+) records it wrote after its last commit", line)
            assert int(past.group(1)) > 0, line
    finally:
        if mm2.running():
            mm2.kill()


def test_the_preview_of_a_takeover_ignores_copied_heartbeats(two_clusters, tmp_path):
    """MM2 was stopped before its first commit (its offsets topic is empty): the first
    start takes over where MM2's offset syncs end, also when Mirrorline saved progress
    for a heartbeats topic only (copied whatever the topic filter says), and not once
    Mirrorline saved progress for a topic the flow selects."""
    east, west = two_clusters
    topic, offsets = unique_name("preview"), unique_name("mm2-offsets")
    create_topic(west.bootstrap_servers, offsets)  # MM2 makes it when it starts
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        f"offset.storage.topic = {offsets}\n",
    )
    flow, target = load_config(config).flow("east", "west"), cluster_clients(west)
    takes_over = "takes over from MirrorMaker 2 where its offset syncs show its copy ends"
    assert takes_over in (preview(flow, target, {}, 15) or "")
    assert takes_over in (preview(flow, target, {("heartbeats", 0): 3}, 15) or "")
    assert preview(flow, target, {(topic, 0): 3}, 15) is None
