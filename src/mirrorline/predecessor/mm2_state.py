"""What a MirrorMaker 2 that replicated a flow before Mirrorline left on the target.

Dedicated-mode MM2 (`connect-mirror-maker.sh`) runs one Kafka Connect worker
group per flow on the flow's target cluster:

- its source offsets are records of the Connect offsets topic
  (`mm2-offsets.<source>.internal`, or the file's `offset.storage.topic`), key
  `["<connector>", {"cluster": <source alias>, "topic": <topic>, "partition": <n>}]`,
  value `{"offset": <last source offset copied>}` (MM2 resumes one past it); a
  null value removes the entry. The connector is `MirrorSourceConnector` in
  dedicated mode and any name on a Connect cluster, so entries are recognised
  by their partition's fields, not by the connector's name; other connectors
  of MM2 (heartbeats, checkpoints) key theirs differently;
- its workers are members of a Connect group (`<source>-mm2`, or the file's
  `group.id`). A worker that stops leaves the group; one that is killed stays
  a member until its session times out.

A Connect group is not a consumer group: the admin API's consumer-group calls
refuse it, and only the older list-groups call describes it with its members.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition

from mirrorline.admin_client import AdminClient
from mirrorline.kafka import KafkaOperationError, asked_until_answered, reading_consumer

log = logging.getLogger(__name__)

__all__ = ["ConnectGroup", "committed_offsets", "connect_group", "offsets_topic_of", "group_of"]

SourcePartition = tuple[str, int]

_READ_TIMEOUT_S = 60.0


def offsets_topic_of(source: str, configured: str) -> str:
    """The Connect offsets topic of MM2's flow from `source` (dedicated mode's name unless set)."""
    return configured or f"mm2-offsets.{source}.internal"


def group_of(source: str, configured: str) -> str:
    """The Connect group of MM2's workers for flows from `source`."""
    return configured or f"{source}-mm2"


def committed_offsets(
    consumer_settings: Mapping[str, object],
    topic: str,
    source: str,
    *,
    timeout: float = _READ_TIMEOUT_S,
) -> dict[SourcePartition, int] | None:
    """The last source offset MM2 committed as copied, per source partition of `source`.

    None when the topic does not exist (no MM2 ran against this target); MM2
    creates it when it starts, before it copies anything.
    """
    consumer = reading_consumer(
        consumer_settings, f"mirrorline-mm2-offsets-{topic}", committed=True
    )
    try:
        partitions = _partitions(consumer, topic, timeout)
        if not partitions:
            return None
        offsets: dict[SourcePartition, int] = {}
        for record in _read_whole(consumer, topic, partitions, timeout):
            entry = _source_partition(record.key(), source)
            if entry is None:
                continue
            value = record.value()
            if value is None:
                offsets.pop(entry, None)
                continue
            try:
                offsets[entry] = int(json.loads(value)["offset"])
            except (ValueError, KeyError, TypeError):
                log.warning(
                    "%s[%d] offset %d: not a MirrorMaker 2 source offset, skipped",
                    topic,
                    record.partition(),
                    record.offset(),
                )
        return offsets
    finally:
        consumer.close()


def _source_partition(key: bytes | None, source: str) -> SourcePartition | None:
    """(topic, partition) of an MM2 source-offset key for `source`, else None."""
    try:
        connector, fields = json.loads(key or b"")
        if not isinstance(connector, str) or set(fields) != {"cluster", "topic", "partition"}:
            return None
        if fields["cluster"] != source:
            return None
        return str(fields["topic"]), int(fields["partition"])
    except (ValueError, TypeError, AttributeError):
        return None


def _partitions(consumer: Consumer, topic: str, timeout: float) -> int:
    """The topic's partition count; 0 when it does not exist or is not visible.

    Every topic is listed, rather than `topic` asked for: a cluster where MM2
    never ran, and a principal without access to MM2's topic, then log no
    denied request in the broker's authorizer log.
    """
    try:
        metadata = consumer.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise KafkaOperationError(f"cannot read {topic}: {exc.args[0].str()}") from None
    found = metadata.topics.get(topic)
    if found is None or found.error is not None:
        return 0
    return len(found.partitions)


def _read_whole(consumer: Consumer, topic: str, partitions: int, timeout: float) -> Iterable:
    """Every record of every partition up to its end as of the call."""
    ends: dict[int, int] = {}
    for p in range(partitions):
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
        except KafkaException as exc:
            raise KafkaOperationError(f"cannot read {topic}[{p}]: {exc.args[0].str()}") from None
        if high > low:
            ends[p] = high
    if not ends:
        return
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    positions = dict.fromkeys(ends, 0)
    deadline = time.monotonic() + timeout
    while any(positions[p] < ends[p] for p in ends):
        if time.monotonic() > deadline:
            raise KafkaOperationError(f"reading {topic} timed out")
        for record in consumer.consume(1000, timeout=0.1):
            error = record.error()
            if error is not None:
                raise KafkaOperationError(f"reading {topic}: {error.str()}")
            positions[record.partition() or 0] = (record.offset() or 0) + 1
            yield record
        for tp in consumer.position([TopicPartition(topic, p) for p in ends]):
            if tp.offset >= 0:
                positions[tp.partition] = max(positions[tp.partition], tp.offset)


@dataclass(frozen=True)
class ConnectGroup:
    """MM2's Connect group on the target: its state and its members' client ids."""

    name: str
    state: str
    members: tuple[str, ...]

    @property
    def active(self) -> bool:
        return bool(self.members)


def connect_group(admin: AdminClient, name: str, timeout: float = 30.0) -> ConnectGroup | None:
    """The Connect group `name`, or None when the cluster does not know it."""
    with warnings.catch_warnings():  # confluent-kafka marks list_groups deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        groups = asked_until_answered(
            f"cannot describe MirrorMaker 2's group {name}",
            lambda seconds: admin.list_groups(group=name, timeout=seconds),
            timeout,
        )
    for group in groups:
        if group.id == name and group.state not in ("Dead", ""):
            members = tuple(sorted(m.client_id or m.id for m in group.members))
            return ConnectGroup(name, group.state, members)
    return None
