"""Automatic group offset sync leaves the target's own consumers alone.

A group with an active member on the target is never written to; a group whose
offset on the target is ahead of its checkpoint (its consumers there went on
after a failover) is never moved back. Checkpoint latency is measured on a
group that keeps committing. A consumer that joins the group between the
sync's read of the group's offsets and its commit is not overwritten either:
the broker refuses the commit, under both group protocols.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future

import pytest
from confluent_kafka import Consumer, TopicPartition

from mirrorline.group_offsets import ActiveGroupError, OffsetAndMetadata, OutsideMember, plan_moves
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    checkpoints_of,
    commit_offsets,
    committed_offsets,
    create_topic,
    produce,
    unique_name,
)
from support.wait import wait_until

# Changes of the committing group: each one must be checkpointed on its own.
CHANGES = 12


def test_sync_never_overwrites_an_active_group_nor_moves_one_back(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic = unique_name("payments")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, 2)
    produce(
        east.bootstrap_servers,
        topic,
        [Record(None, f"v{i}".encode(), partition=i % 2) for i in range(2_000)],
    )
    active, ahead, busy = unique_name("active"), unique_name("ahead"), unique_name("busy")
    commit_offsets(east.bootstrap_servers, active, topic, {0: 500, 1: 700})
    commit_offsets(east.bootstrap_servers, ahead, topic, {0: 300})
    # The group's consumers went on on west after a failover: it is ahead there.
    create_topic(west.bootstrap_servers, remote, 2)
    commit_offsets(west.bootstrap_servers, ahead, remote, {0: 900})
    config = write_config(
        tmp_path / "sync.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "emit.checkpoints.interval.seconds = 1\nrefresh.groups.interval.seconds = 1\n"
        "sync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 1\n",
    )
    member = _ActiveMember(west.bootstrap_servers, active, remote)
    try:
        wait_until(member.joined, timeout=60, what=f"a member of {active} on west")
        with running_driver(config, spark, tmp_path / "work") as driver:
            wait_until(
                lambda: _checkpointed(west, active, remote) == {0: 500, 1: 700},
                timeout=120,
                what=f"checkpoints of {active}",
            )
            skipped = driver.statuses()[0].checkpoints.groups_skipped_active
            wait_until(
                lambda: driver.statuses()[0].checkpoints.groups_skipped_active >= skipped + 2,
                timeout=30,
                what="two more sync rounds that skip the active group",
            )
            assert committed_offsets(west.bootstrap_servers, active, remote, 2) == {}
            assert member.failures == []

            wait_until(
                lambda: _checkpointed(west, ahead, remote) == {0: 300},
                timeout=30,
                what=f"checkpoint of {ahead}",
            )
            wait_until(
                lambda: driver.statuses()[0].checkpoints.offsets_held_back >= 2,
                timeout=30,
                what="two sync rounds holding the group that is ahead",
            )
            assert committed_offsets(west.bootstrap_servers, ahead, remote, 2) == {0: 900}

            member.close()  # its consumers stopped: now the sync may move it
            wait_until(
                lambda: (
                    committed_offsets(west.bootstrap_servers, active, remote, 2) == {0: 500, 1: 700}
                ),
                timeout=30,
                what=f"{active} synced once it has no member",
            )

            # A group that keeps committing: one checkpoint per change, latency measured.
            for step in range(1, CHANGES + 1):
                commit_offsets(east.bootstrap_servers, busy, topic, {0: step * 20, 1: step * 20})
                wait_until(
                    lambda step=step: (
                        _checkpointed(west, busy, remote) == {0: step * 20, 1: step * 20}
                    ),
                    timeout=30,
                    what=f"checkpoint {step} of {busy}",
                    interval=0.05,
                )
            stats = driver.statuses()[0].checkpoints
            print(
                f"checkpoint latency over {stats.checkpoints_emitted} checkpoints: "
                f"p50 {stats.latency_p50_ms:.0f} ms, p99 {stats.latency_p99_ms:.0f} ms"
            )
    finally:
        member.close()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_that_joins_while_a_sync_runs_is_never_overwritten(two_clusters, protocol):
    """The sync's steps in its order (`Checkpointer.sync_group_offsets`): read the
    group's offsets, plan, commit; here a consumer joins and commits between the
    read and the commit, the sync's plan is stale, and nothing of it is written."""
    _, west = two_clusters
    remote = unique_name("east.joined")
    group = unique_name("joining")
    create_topic(west.bootstrap_servers, remote, 2)
    commit_offsets(west.bootstrap_servers, group, remote, {0: 100, 1: 100})
    checkpointed = {(remote, p): OffsetAndMetadata(400, "from east") for p in (0, 1)}
    with OutsideMember({"bootstrap.servers": west.bootstrap_servers}, group, 30) as sync:
        plan = plan_moves(sync.committed(checkpointed), checkpointed)
        assert set(plan.moves) == set(checkpointed)  # the group was behind: a move

        member = _ActiveMember(west.bootstrap_servers, group, remote, protocol=protocol)
        try:
            wait_until(member.joined, timeout=60, what=f"a member of {group} on west")
            member.commit({0: 900, 1: 950})  # its own consumers went on meanwhile
            with pytest.raises(ActiveGroupError, match="has active members"):
                sync.commit(plan.moves)
            assert committed_offsets(west.bootstrap_servers, group, remote, 2) == {0: 900, 1: 950}

            # The next round reads the member's offsets: ahead, held back, nothing to move.
            again = plan_moves(sync.committed(checkpointed), checkpointed)
            assert again.moves == {}
            assert again.held_back == {(remote, 0): (900, 400), (remote, 1): (950, 400)}
            assert member.failures == []
        finally:
            member.close()
    assert committed_offsets(west.bootstrap_servers, group, remote, 2) == {0: 900, 1: 950}


class _ActiveMember:
    """A consumer of the group on west that stays a member while it polls.

    One thread owns the consumer: it polls, and it makes the commits asked of it,
    so no librdkafka call of this consumer ever runs beside another.
    """

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str = "classic") -> None:
        self._topic = topic
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": protocol,
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",
            }
        )
        self._consumer.subscribe([topic])
        self._stop = threading.Event()
        self._assigned = threading.Event()
        self._commits: queue.Queue[tuple[dict[int, int], Future[None]]] = queue.Queue()
        self.failures: list[str] = []
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def joined(self) -> bool:
        return self._assigned.is_set()

    def _poll(self) -> None:
        while not self._stop.is_set():
            msg = self._consumer.poll(0.2)
            if msg is not None and msg.error():
                self.failures.append(str(msg.error()))
            if self._consumer.assignment():
                self._assigned.set()
            self._serve_commits()
        self._consumer.close()

    def _serve_commits(self) -> None:
        while not self._commits.empty():
            offsets, done = self._commits.get()
            try:
                self._consumer.commit(
                    offsets=[TopicPartition(self._topic, p, o) for p, o in offsets.items()],
                    asynchronous=False,
                )
                done.set_result(None)
            except Exception as err:  # handed to the test's thread, which raises it
                done.set_exception(err)

    def commit(self, offsets: dict[int, int]) -> None:
        """Commit as the member it is (its generation), as its application would."""
        done: Future[None] = Future()
        self._commits.put((offsets, done))
        done.result(timeout=60)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


def _checkpointed(cluster, group: str, remote: str) -> dict[int, int]:
    found = checkpoints_of(cluster.bootstrap_servers, "east", group, remote)
    return {p: c.upstream_offset for p, c in found.items()}
