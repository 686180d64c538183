"""Reading and moving a consumer group's committed offsets, safely.

Both the automatic group offset sync and `mirrorline offsets apply` move a
group's offsets on a target cluster. Two rules protect the group's consumers:

- Offsets are written only to a group with no active members. The broker
  refuses commits from outside a live group as well; checking first gives a
  clear reason instead of a broker error.
- A partition is never moved backwards from the group's committed offset
  (`plan_moves`): offsets ahead of the translation were committed by the
  group's own consumers on this cluster, after a failover, and moving them back
  would make those consumers read records again. The one exception is an
  operator's explicit `--allow-backwards`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaException,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from mirrorline.kafka import KafkaOperationError

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    metadata: str = ""


@dataclass(frozen=True)
class GroupOnCluster:
    """A group as one cluster sees it: its state, its members and its committed offsets."""

    group: str
    state: str  # the broker's name for it: Empty, Stable, Dead, ...
    members: int
    offsets: Mapping[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.members > 0


@dataclass(frozen=True)
class MovePlan:
    """What writing `wanted` offsets to a group would do, partition by partition."""

    moves: dict[TopicPartition, OffsetAndMetadata]  # offsets to write
    unchanged: tuple[TopicPartition, ...]  # already at the wanted offset
    held_back: dict[TopicPartition, tuple[int, int]]  # (committed, wanted): would move back


class ActiveGroupError(KafkaOperationError):
    """The group has active members on the cluster; its offsets are theirs to commit."""


def describe_group(
    admin: AdminClient,
    group: str,
    *,
    consumer_settings: Mapping[str, object],
    partitions: Iterable[TopicPartition],
    timeout: float = 30.0,
) -> GroupOnCluster:
    """The group's state, member count and committed offsets of `partitions`."""
    state, members = group_state(admin, group, timeout)
    offsets = committed_offsets(consumer_settings, group, partitions, timeout)
    return GroupOnCluster(group, state, members, offsets)


def group_state(admin: AdminClient, group: str, timeout: float = 30.0) -> tuple[str, int]:
    """The group's state as the broker names it (Empty, Stable, Dead...) and its member count."""
    try:
        description = admin.describe_consumer_groups([group], request_timeout=timeout)[
            group
        ].result(timeout)
    except KafkaException as exc:
        if exc.args[0].name() == "GROUP_ID_NOT_FOUND":  # never used on this cluster
            return "Dead", 0
        raise KafkaOperationError(
            f"cannot describe consumer group {group}: {exc.args[0].str()}"
        ) from None
    state = description.state
    name = state.name.title() if isinstance(state, ConsumerGroupState) else str(state)
    return name, len(description.members or ())


def committed_offsets(
    consumer_settings: Mapping[str, object],
    group: str,
    partitions: Iterable[TopicPartition],
    timeout: float = 30.0,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """The group's committed offsets of `partitions` (those without one left out).

    Asked by a consumer that never joins the group (an OffsetFetch, as a
    consumer does before it starts reading). Not by the admin client: with
    librdkafka 2.16, its ListConsumerGroupOffsets crashes the process when the
    group coordinator is still loading, as on a cluster that just started.
    """
    wanted = [KafkaTopicPartition(t, p) for t, p in sorted(set(partitions))]
    if not wanted:
        return {}
    consumer = Consumer({**consumer_settings, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                found = consumer.committed(wanted, timeout=max(1.0, deadline - time.monotonic()))
                break
            except KafkaException as exc:
                if not exc.args[0].retriable() or time.monotonic() > deadline:
                    raise KafkaOperationError(
                        f"cannot read the committed offsets of consumer group {group}: "
                        f"{exc.args[0].str()}"
                    ) from None
                time.sleep(0.2)  # the coordinator is loading or moving: ask again
    finally:
        consumer.close()
    return {
        (tp.topic, tp.partition): OffsetAndMetadata(tp.offset, tp.metadata or "")
        for tp in found
        if tp.offset >= 0 and tp.error is None
    }


def plan_moves(
    committed: Mapping[TopicPartition, OffsetAndMetadata],
    wanted: Mapping[TopicPartition, OffsetAndMetadata],
    *,
    allow_backwards: bool = False,
) -> MovePlan:
    """Which partitions to move to their wanted offset, keeping the never-backwards rule."""
    moves: dict[TopicPartition, OffsetAndMetadata] = {}
    unchanged: list[TopicPartition] = []
    held_back: dict[TopicPartition, tuple[int, int]] = {}
    for tp, target in sorted(wanted.items()):
        current = committed.get(tp)
        if current is not None and current.offset == target.offset:
            unchanged.append(tp)
        elif current is not None and current.offset > target.offset and not allow_backwards:
            held_back[tp] = (current.offset, target.offset)
        else:
            moves[tp] = target
    return MovePlan(moves, tuple(unchanged), held_back)


def commit_offsets(
    admin: AdminClient,
    group: str,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
    timeout: float = 30.0,
) -> None:
    """Commit `offsets` for `group`, which must have no active members.

    Raises `ActiveGroupError` when it has some, checked just before the commit
    (the broker also refuses a commit to a group that became active since).
    """
    if not offsets:
        return
    if group_state(admin, group, timeout)[1]:
        raise ActiveGroupError(_active_message(group))
    request = ConsumerGroupTopicPartitions(
        group,
        [KafkaTopicPartition(t, p, o.offset, o.metadata) for (t, p), o in sorted(offsets.items())],
    )
    try:
        result = admin.alter_consumer_group_offsets([request], request_timeout=timeout)[
            group
        ].result(timeout)
    except KafkaException as exc:
        error = exc.args[0]
        if error.name() in {"UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION"}:
            raise ActiveGroupError(_active_message(group)) from None
        raise KafkaOperationError(
            f"cannot commit offsets of consumer group {group}: {error.str()}"
        ) from None
    failed = [tp for tp in result.topic_partitions or () if tp.error is not None]
    if failed:
        tp = failed[0]
        raise KafkaOperationError(
            f"cannot commit offset {tp.offset} of consumer group {group} "
            f"on {tp.topic} partition {tp.partition}: {tp.error.str()}"
        )


def _active_message(group: str) -> str:
    return (
        f"consumer group {group} has active members on this cluster: "
        "stop its consumers first (its offsets are theirs to commit)"
    )
