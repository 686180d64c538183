"""Small helpers around confluent-kafka clients that every part of Mirrorline uses."""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


class KafkaOperationError(RuntimeError):
    """A Kafka request failed; the message names the cluster, the object and the error."""


def ensure_topic(
    admin: AdminClient,
    name: str,
    *,
    partitions: int = 1,
    replication_factor: int = -1,
    config: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> bool:
    """Create `name` unless it exists; True when this call created it.

    `replication_factor = -1` lets the broker apply its `default.replication.factor`.
    """
    futures = admin.create_topics(
        [NewTopic(name, partitions, replication_factor, config=dict(config or {}))],
        request_timeout=timeout,
    )
    try:
        futures[name].result(timeout)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise KafkaOperationError(f"cannot create topic {name}: {exc.args[0].str()}") from None
    wait_for_leaders(admin, name, partitions, timeout)
    return True


def wait_for_leaders(admin: AdminClient, topic: str, partitions: int, timeout: float) -> None:
    """Wait until metadata shows `partitions` partitions of `topic`, each with a leader."""
    deadline = time.monotonic() + timeout
    while True:
        meta = admin.list_topics(topic, timeout=timeout).topics.get(topic)
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) >= partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise KafkaOperationError(f"topic {topic} has no leader for every partition yet")
        time.sleep(0.1)
