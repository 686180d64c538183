"""Publishes a flow's offset syncs, in MM2's format, to its offset-syncs topic.

The topic is `mm2-offset-syncs.<other alias>.internal` on the source cluster (or
the target, with `offset-syncs.topic.location = target`), one partition as in MM2,
so that MM2's checkpoint logic and Kafka's tools read it unchanged. Mirrorline
creates it with time-based retention rather than MM2's compaction: compaction
keeps one sync per partition, and exact translation of a lagging group needs
the history (MM2 and Kafka's tools read the topic either way).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from mirrorline.formats import OffsetSync
from mirrorline.kafka import KafkaOperationError, ensure_topic

SYNC_RETENTION_MS = 7 * 24 * 3600 * 1000


class OffsetSyncPublisher:
    def __init__(
        self,
        flow: str,
        topic: str,
        producer_settings: Mapping[str, object],
        *,
        admin_settings: Mapping[str, object],
        replication_factor: int = -1,
    ) -> None:
        self.flow = flow
        self.topic = topic
        self._settings = dict(producer_settings)
        self._admin_settings = dict(admin_settings)
        self._replication_factor = replication_factor
        self._producer: Producer | None = None

    def ensure_topic(self) -> None:
        ensure_topic(
            AdminClient(self._admin_settings),
            self.topic,
            partitions=1,
            replication_factor=self._replication_factor,
            config={"cleanup.policy": "delete", "retention.ms": str(SYNC_RETENTION_MS)},
        )

    def publish(self, syncs: Iterable[OffsetSync], timeout: float = 60.0) -> int:
        """Write the syncs in order and wait for every acknowledgement; returns the count."""
        if self._producer is None:
            self._producer = Producer(
                {**self._settings, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
            )
        errors: list[str] = []

        def delivered(error, _msg) -> None:
            if error is not None:
                errors.append(error.str())

        count = 0
        for sync in syncs:
            self._producer.produce(
                self.topic, key=sync.key(), value=sync.value(), partition=0, on_delivery=delivered
            )
            count += 1
        remaining = self._producer.flush(timeout)
        if remaining or errors:
            detail = errors[0] if errors else f"{remaining} unacknowledged"
            raise KafkaOperationError(
                f"flow {self.flow}: offset syncs not written to {self.topic}: {detail}"
            )
        return count

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None
