"""Remote-topic metadata: which source topic each flow replicates to which remote topic.

A remote topic's name does not always say where it came from: under
`IdentityReplicationPolicy` `orders` on the target may be a local topic or a
copy of `orders` from any source. So each flow publishes, in its target
cluster, the pairs (source topic -> remote topic) it currently replicates,
and readers (`mirrorline.client.remote_topics`, the service) learn the truth
from there instead of guessing from names. A topic the flow stops
replicating (filter changed, topic deleted at the source) is removed, so
the topic says what is replicated *now*, not what ever was.

The topic is `mirrorline.metadata.internal` on each target cluster:
compacted, one partition, shared by every flow into that cluster; it is never
replicated (its name ends in `.internal`). One record per (flow, source
topic), JSON in UTF-8 with sorted keys and no spaces, so that equal keys are
equal bytes and compaction keeps only the latest record of each:

- key: ``{"flow":"east->west","topic":"orders","version":1}``
- value: ``{"remote_topic":"east.orders","source":"east","target":"west",
  "topic":"orders","updated_ms":1700000000000,"version":1}``
- a tombstone (null value) when the flow no longer replicates the topic.

Readers skip records of other versions and records that are not JSON, so a
newer format can be introduced next to this one.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaException, Message

from mirrorline.flow_context import FlowContext
from mirrorline.formats import json_record
from mirrorline.internal_topic import InternalTopic
from mirrorline.kafka import KafkaOperationError, read_to_end

log = logging.getLogger(__name__)

METADATA_TOPIC = "mirrorline.metadata.internal"
FORMAT_VERSION = 1
_TOPIC_CONFIG = {"cleanup.policy": "compact"}
# Short: the caller is a flow's control loop, which must not wait long on its target.
_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class MetadataChanges:
    """What to write so that a flow's published pairs become the wanted ones."""

    upserts: dict[str, str]  # source topic -> remote topic, new or renamed
    removals: tuple[str, ...]  # source topics no longer replicated

    def __bool__(self) -> bool:
        return bool(self.upserts or self.removals)


def metadata_changes(published: Mapping[str, str], wanted: Mapping[str, str]) -> MetadataChanges:
    """The records that turn `published` into `wanted` (both: source topic -> remote topic)."""
    upserts = {t: r for t, r in sorted(wanted.items()) if published.get(t) != r}
    removals = tuple(sorted(t for t in published if t not in wanted))
    return MetadataChanges(upserts, removals)


def metadata_key(flow: str, topic: str) -> bytes:
    return json_record({"flow": flow, "topic": topic, "version": FORMAT_VERSION})


def metadata_value(source: str, target: str, topic: str, remote_topic: str, now_ms: int) -> bytes:
    return json_record(
        {
            "remote_topic": remote_topic,
            "source": source,
            "target": target,
            "topic": topic,
            "updated_ms": now_ms,
            "version": FORMAT_VERSION,
        }
    )


def decode_metadata(key: bytes | None, value: bytes | None) -> tuple[str, str, str | None] | None:
    """(flow, source topic, remote topic or None for a removal), or None for another format."""
    if key is None:
        return None
    try:
        k = json.loads(key)
        if k.get("version") != FORMAT_VERSION:
            return None
        flow, topic = str(k["flow"]), str(k["topic"])
        if value is None:
            return flow, topic, None
        v = json.loads(value)
        if v.get("version") != FORMAT_VERSION:
            return None
        return flow, topic, str(v["remote_topic"])
    except (TypeError, ValueError, KeyError, AttributeError):
        return None  # not a record of this format: ignored, never fatal


class RemoteTopicPublisher:
    """Publishes one flow's (source topic -> remote topic) pairs in its target cluster.

    Call `publish(ready)` after each topic refresh with the topics the flow
    replicates (`TopicManager.ready()`); only differences from what is
    published are written. The first call creates the topic if needed and
    reads the flow's published pairs, so a restarted driver writes nothing
    when nothing changed, and removes what changed while it was away.
    """

    def __init__(
        self,
        context: FlowContext,
        *,
        topic: str = METADATA_TOPIC,
        timeout: float = _TIMEOUT_S,
    ) -> None:
        self.flow = context.flow
        self.topic = topic
        self._timeout = timeout
        self._topic = InternalTopic(
            topic,
            context.target,
            what=f"flow {self.flow.name}: remote-topic metadata (cluster {self.flow.target})",
            config=_TOPIC_CONFIG,
            replication_factor=context.settings.replication_factor,
        )
        self._published: dict[str, str] | None = None  # None until read from the topic

    def publish(self, ready: Mapping[str, int]) -> int:
        """Make the published pairs those of `ready` (source topic -> partitions).

        Returns the number of records written. Raises `KafkaOperationError`
        naming the topic and cluster when the target does not answer; the
        next call tries again from what was really written.
        """
        published = self._load()
        wanted = {topic: self.flow.remote_topic(topic) for topic in ready}
        changes = metadata_changes(published, wanted)
        if not changes:
            return 0
        now_ms = int(time.time() * 1000)
        records: list[tuple[bytes, bytes | None]] = [
            (
                metadata_key(self.flow.name, topic),
                metadata_value(self.flow.source, self.flow.target, topic, remote, now_ms),
            )
            for topic, remote in changes.upserts.items()
        ]
        records += [(metadata_key(self.flow.name, topic), None) for topic in changes.removals]
        self._topic.write(records, timeout=self._timeout)
        published.update(changes.upserts)
        for topic in changes.removals:
            del published[topic]
        log.info(
            "flow %s: remote-topic metadata on %s: %d added or changed, %d removed",
            self.flow.name,
            self.flow.target,
            len(changes.upserts),
            len(changes.removals),
        )
        return len(records)

    def close(self) -> None:
        self._topic.close()

    def _load(self) -> dict[str, str]:
        if self._published is None:
            try:
                self._topic.ensure(timeout=self._timeout)
                entries = _pairs(self._topic.read(missing_ok=True, timeout=self._timeout))
            except (KafkaException, KafkaOperationError) as exc:
                reason = exc.args[0].str() if isinstance(exc, KafkaException) else str(exc)
                raise KafkaOperationError(
                    f"flow {self.flow.name}: remote-topic metadata (cluster {self.flow.target}): "
                    f"{reason}"
                ) from None
            self._published = entries.get(self.flow.name, {})
        return self._published


def read_remote_topics(
    consumer_settings: Mapping[str, object],
    *,
    topic: str = METADATA_TOPIC,
    timeout: float = 30.0,
) -> dict[str, dict[str, str]]:
    """Every flow's published pairs in one cluster: {flow: {source topic: remote topic}}.

    `consumer_settings` are librdkafka settings of the cluster (a flow's
    target). A cluster where no flow has published yet has no metadata topic:
    the answer is then empty. A cluster that does not answer raises
    `KafkaOperationError`.
    """
    return _pairs(read_to_end(consumer_settings, topic, missing_ok=True, timeout=timeout))


def _pairs(records: Iterable[Message]) -> dict[str, dict[str, str]]:
    flows: dict[str, dict[str, str]] = {}
    for msg in records:
        entry = decode_metadata(msg.key(), msg.value())
        if entry is None:
            continue
        flow, source_topic, remote = entry
        pairs = flows.setdefault(flow, {})
        if remote is None:
            pairs.pop(source_topic, None)
        else:
            pairs[source_topic] = remote
    return {flow: pairs for flow, pairs in flows.items() if pairs}
