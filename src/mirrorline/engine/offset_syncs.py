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

from confluent_kafka.admin import AdminClient

from mirrorline.formats import OffsetSync
from mirrorline.kafka import AckedWriter, ensure_topic

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
        self._admin_settings = dict(admin_settings)
        self._replication_factor = replication_factor
        self._writer = AckedWriter(producer_settings, f"flow {flow}: offset syncs")

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
        return self._writer.write(
            self.topic, ((s.key(), s.value()) for s in syncs), partition=0, timeout=timeout
        )

    def close(self) -> None:
        self._writer.close()
