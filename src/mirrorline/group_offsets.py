"""Reading and moving a consumer group's committed offsets, safely.

Both the automatic group offset sync and `mirrorline offsets apply` move a
group's offsets on a target cluster. Two rules protect the group's consumers:

- Offsets are written only to a group with no active members. The broker
  refuses commits from outside a live group. The operator's commands check
  first (`describe_group`), to give a clear reason before anything is written;
  the automatic sync, which runs in the driver, takes the broker's refusal as
  the answer, so that the driver never sends librdkafka's admin coordinator
  requests (see `OutsideMember`). The refusal cannot race with a consumer
  that joins: the broker decides at the commit itself, whatever the sync read
  before (`test_group_offset_sync`, both group protocols). What the broker
  cannot refuse is a consumer that joins, commits and leaves again entirely
  between the sync's read and its commit, a few milliseconds: Kafka has no
  conditional commit.
- A partition is never moved backwards from the group's committed offset
  (`plan_moves`): offsets ahead of the translation were committed by the
  group's own consumers on this cluster, after a failover, and moving them back
  would make those consumers read records again. The one exception is an
  operator's explicit `--allow-backwards`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NoReturn, TypeVar

from confluent_kafka import Consumer, ConsumerGroupState, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from mirrorline.admin_client import AdminClient
from mirrorline.kafka import KafkaOperationError, asked_until_answered

TopicPartition = tuple[str, int]
T = TypeVar("T")

#: Groups asked about at once by `for_each_group`. Each question costs a few round
#: trips (a client's connection, FindCoordinator, OffsetFetch or OffsetCommit), so a
#: round over a thousand groups one at a time takes seconds on loopback and minutes
#: on a far cluster; each of these clients is a librdkafka instance with its threads.
GROUPS_AT_ONCE = 16


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
    try:
        description = admin.describe_consumer_groups([group], request_timeout=timeout)[
            group
        ].result(timeout)
    except KafkaException as exc:
        if exc.args[0].name() == "GROUP_ID_NOT_FOUND":  # never used on this cluster
            return GroupOnCluster(group, "Dead", 0)
        raise KafkaOperationError(
            f"cannot describe consumer group {group}: {exc.args[0].str()}"
        ) from None
    state = description.state
    name = state.name.title() if isinstance(state, ConsumerGroupState) else str(state)
    members = len(description.members or ())
    offsets = committed_offsets(consumer_settings, group, partitions, timeout)
    return GroupOnCluster(group, name, members, offsets)


class OutsideMember:
    """A consumer of one group that never joins it: it reads and commits the group's
    offsets as no member (an OffsetFetch, an OffsetCommit), as a consumer does before it
    starts reading and as the admin client's AlterConsumerGroupOffsets does.

    Not through the admin client: librdkafka 2.16's admin client aborts the whole
    process when a request to a group coordinator cannot be sent
    (confluentinc/librdkafka#4605), as on a cluster that just started. `timeout`
    bounds each question, and the wait for a coordinator before a commit.
    """

    def __init__(
        self, consumer_settings: Mapping[str, object], group: str, timeout: float = 30.0
    ) -> None:
        self.group = group
        self._timeout = timeout
        milliseconds = max(int(timeout * 1000), 1_000)
        self._consumer = Consumer(
            {
                **consumer_settings,
                "group.id": group,
                "enable.auto.commit": False,
                "session.timeout.ms": milliseconds,
                "socket.timeout.ms": milliseconds,
            }
        )

    def __enter__(self) -> OutsideMember:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._consumer.close()

    def committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets of `partitions` (those without one left out)."""
        wanted = [KafkaTopicPartition(t, p) for t, p in sorted(set(partitions))]
        if not wanted:
            return {}
        found = asked_until_answered(
            f"cannot read the committed offsets of consumer group {self.group}",
            lambda seconds: self._consumer.committed(wanted, timeout=seconds),
            self._timeout,
        )
        return {
            (tp.topic, tp.partition): OffsetAndMetadata(tp.offset, tp.metadata or "")
            for tp in found
            if tp.offset >= 0 and tp.error is None
        }

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Commit `offsets`; the group must have no active members.

        The broker refuses a commit to a group that has members, also one that became
        active since the caller looked: that refusal raises `ActiveGroupError`.
        """
        if not offsets:
            return
        wanted = [
            KafkaTopicPartition(t, p, o.offset, o.metadata) for (t, p), o in sorted(offsets.items())
        ]
        try:
            result = self._consumer.commit(offsets=wanted, asynchronous=False)
        except KafkaException as exc:
            _raise_for(self.group, exc.args[0], "offsets")
        for tp in result or ():
            if tp.error is not None:
                _raise_for(
                    self.group,
                    tp.error,
                    f"offset {tp.offset} on {tp.topic} partition {tp.partition}",
                )


def for_each_group(
    groups: Iterable[str], ask: Callable[[str], T], at_once: int = GROUPS_AT_ONCE
) -> dict[str, T]:
    """`ask(group)` for every group, `at_once` groups at a time; the answers by group,
    in the order given. One group's failure stops none of the others: once all are done,
    the first (in that order) that raised raises here."""
    wanted = list(groups)
    if len(wanted) <= 1:
        return {group: ask(group) for group in wanted}
    with ThreadPoolExecutor(min(at_once, len(wanted)), thread_name_prefix="group") as pool:
        asked = [pool.submit(ask, group) for group in wanted]
    return {group: answer.result() for group, answer in zip(wanted, asked, strict=True)}


def committed_offsets(
    consumer_settings: Mapping[str, object],
    group: str,
    partitions: Iterable[TopicPartition],
    timeout: float = 30.0,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """The group's committed offsets of `partitions`, read by an `OutsideMember`."""
    with OutsideMember(consumer_settings, group, timeout) as member:
        return member.committed(partitions)


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
    consumer_settings: Mapping[str, object],
    group: str,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
    timeout: float = 30.0,
) -> None:
    """Commit `offsets` for `group`, which must have no active members, by an
    `OutsideMember` (see `OutsideMember.commit`)."""
    with OutsideMember(consumer_settings, group, timeout) as member:
        member.commit(offsets)


# How the broker refuses a commit from outside a group that has members.
_GROUP_IS_ACTIVE = {
    "UNKNOWN_MEMBER_ID",
    "REBALANCE_IN_PROGRESS",
    "ILLEGAL_GENERATION",
    "STALE_MEMBER_EPOCH",
}


def _raise_for(group: str, error, what: str) -> NoReturn:
    if error.name() in _GROUP_IS_ACTIVE:
        raise ActiveGroupError(
            f"consumer group {group} has active members on this cluster: "
            "stop its consumers first (its offsets are theirs to commit)"
        ) from None
    raise KafkaOperationError(
        f"cannot commit {what} of consumer group {group}: {error.str()}"
    ) from None
