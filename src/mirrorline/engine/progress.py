"""A flow's replication progress, kept in the target cluster.

The progress topic (`mirrorline.progress.internal`, compacted, one partition)
holds, per flow and source partition, the next source offset to replicate. It is
written after the target acknowledged a batch's records, and it is what a flow
resumes from: Spark's checkpoint directory is never the source of truth, so a
flow continues correctly when its driver moves to another host.

Record format, version 1 (JSON, UTF-8):

- key: ``{"flow": "east->west", "partition": 0, "topic": "orders"}`` (sorted keys,
  no spaces, so that compaction keeps one record per flow and partition);
- value: ``{"next_offset": 1234, "updated_ms": 1700000000000, "version": 1}``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirrorline.kafka import AckedWriter, KafkaOperationError, ensure_topic

PROGRESS_TOPIC = "mirrorline.progress.internal"
FORMAT_VERSION = 1

SourcePartition = tuple[str, int]  # (source topic, partition)


class ProgressStore:
    """Reads and writes one flow's progress in the target cluster."""

    def __init__(
        self,
        flow: str,
        *,
        admin_settings: Mapping[str, object],
        producer_settings: Mapping[str, object],
        consumer_settings: Mapping[str, object],
        topic: str = PROGRESS_TOPIC,
        replication_factor: int = -1,
    ) -> None:
        self.flow = flow
        self.topic = topic
        self._admin_settings = dict(admin_settings)
        self._consumer_settings = dict(consumer_settings)
        self._replication_factor = replication_factor
        self._writer = AckedWriter(producer_settings, f"flow {flow}: progress")

    def ensure_topic(self) -> None:
        ensure_topic(
            AdminClient(self._admin_settings),
            self.topic,
            partitions=1,
            replication_factor=self._replication_factor,
            config={"cleanup.policy": "compact", "min.compaction.lag.ms": "0"},
        )

    def load(self, timeout: float = 60.0) -> dict[SourcePartition, int]:
        """The flow's next source offset per partition, read up to the topic's end."""
        consumer = Consumer(
            {
                **self._consumer_settings,
                "group.id": f"mirrorline-progress-reader-{self.flow}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        progress: dict[SourcePartition, int] = {}
        try:
            partition = TopicPartition(self.topic, 0)
            _, end = consumer.get_watermark_offsets(partition, timeout=timeout)
            consumer.assign([TopicPartition(self.topic, 0, 0)])
            deadline = time.monotonic() + timeout
            position = 0
            while position < end:
                if time.monotonic() > deadline:
                    raise KafkaOperationError(
                        f"flow {self.flow}: reading {self.topic} timed out at offset "
                        f"{position} of {end}"
                    )
                for msg in consumer.consume(1000, timeout=0.5):
                    if msg.error():
                        raise KafkaException(msg.error())
                    position = msg.offset() + 1
                    entry = _decode(msg.key(), msg.value())
                    if entry is not None and entry[0] == self.flow:
                        _, source_partition, next_offset = entry
                        if next_offset is None:
                            progress.pop(source_partition, None)
                        else:
                            progress[source_partition] = next_offset
                # Compaction and transaction markers leave offsets without records.
                position = max(position, consumer.position([partition])[0].offset)
        finally:
            consumer.close()
        return progress

    def save(self, progress: Mapping[SourcePartition, int], timeout: float = 60.0) -> None:
        """Write the given partitions' next offsets and wait until they are acknowledged."""
        now = int(time.time() * 1000)
        self._writer.write(
            self.topic,
            (
                (
                    _key(self.flow, topic, partition),
                    json.dumps(
                        {"next_offset": offset, "updated_ms": now, "version": FORMAT_VERSION},
                        sort_keys=True,
                    ).encode(),
                )
                for (topic, partition), offset in progress.items()
            ),
            timeout=timeout,
        )

    def close(self) -> None:
        self._writer.close()


def _key(flow: str, topic: str, partition: int) -> bytes:
    return json.dumps(
        {"flow": flow, "partition": partition, "topic": topic},
        sort_keys=True,
        separators=(",", ":"),
    ).encode()


def _decode(key: bytes | None, value: bytes | None):
    """(flow, (topic, partition), next offset or None for a deleted entry), or None."""
    try:
        k = json.loads(key)
        source_partition = (k["topic"], int(k["partition"]))
        if value is None:
            return k["flow"], source_partition, None
        v = json.loads(value)
        if v.get("version") != FORMAT_VERSION:
            return None
        return k["flow"], source_partition, int(v["next_offset"])
    except (TypeError, ValueError, KeyError):
        return None  # not a record of this format: ignored, never fatal
