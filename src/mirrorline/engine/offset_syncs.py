"""Publishes a flow's offset syncs, in MM2's format, to its offset-syncs topic.

The topic is `mm2-offset-syncs.<other alias>.internal` on the source cluster (or
the target, with `offset-syncs.topic.location = target`), one partition as in MM2,
so that MM2's checkpoint logic and Kafka's tools read it unchanged. Mirrorline
creates it with time-based retention rather than MM2's compaction: compaction
keeps one sync per partition, and exact translation of a lagging group needs
the history (MM2 and Kafka's tools read the topic either way).
"""

from __future__ import annotations

from collections.abc import Iterable

from mirrorline.formats import OffsetSync
from mirrorline.internal_topic import InternalTopic
from mirrorline.kafka import ClusterClients

SYNC_RETENTION_MS = 7 * 24 * 3600 * 1000


class OffsetSyncPublisher:
    """Writes one flow's offset syncs to the offset-syncs topic on `clients`' cluster."""

    def __init__(
        self,
        flow: str,
        topic: str,
        clients: ClusterClients,
        *,
        replication_factor: int = -1,
    ) -> None:
        self.flow = flow
        self.topic = topic
        self._topic = InternalTopic(
            topic,
            clients,
            what=f"flow {flow}: offset syncs",
            config={"cleanup.policy": "delete", "retention.ms": str(SYNC_RETENTION_MS)},
            replication_factor=replication_factor,
        )

    def ensure_topic(self) -> None:
        self._topic.ensure()

    def publish(self, syncs: Iterable[OffsetSync], timeout: float = 60.0) -> int:
        """Write the syncs in order and wait for every acknowledgement; returns the count."""
        return self._topic.write(((s.key(), s.value()) for s in syncs), timeout=timeout)

    def close(self) -> None:
        self._topic.close()
