"""Translation by timestamp, for committed offsets in data Mirrorline did not copy.

Exact translation needs the offset mapping of the copy, which Mirrorline has
for what it copied itself and for what MirrorMaker 2 copied within its kept
offset syncs (`predecessor.handover`). A group can still have committed an
offset below all of that: in records MM2 copied before its oldest kept sync,
or that another tool copied. For such an offset only the record's timestamp
links the two clusters, since every copy keeps it.

The committed offset U is the next record the group reads. Its translation
is the first target offset whose timestamp is at or after U's record's
(`offsets_for_times` on the remote partition); when U holds no record any
more (compacted, aborted), the first record after U stands for it. The
result is approximate, and is reported as such: records sharing that
timestamp are read again, and where timestamps go backwards a record may be
skipped. It is asked only where exact translation cannot answer
(`TranslationStore.precedes_runs`), never instead of it.

Answers are kept per (partition, offset): a lagging group commits the same
offset round after round.
"""

from __future__ import annotations

import threading

from confluent_kafka import Consumer, KafkaException, TopicPartition

from mirrorline.control.translation import SourcePartition, Translation
from mirrorline.flow_context import FlowContext
from mirrorline.kafka import reading_consumer

__all__ = ["TimestampTranslator"]

_TIMEOUT_S = 10.0
_KEPT = 10_000


class TimestampTranslator:
    """Translates one flow's committed source offsets by their records' timestamps."""

    def __init__(self, context: FlowContext) -> None:
        self._source_settings = context.source.consumer_settings
        self._target_settings = context.target.consumer_settings
        self._kept: dict[tuple[SourcePartition, int], Translation] = {}
        self._lock = threading.Lock()

    def translate(self, partition: SourcePartition, remote: str, upstream: int) -> Translation:
        """The target offset in `remote` for committed source offset `upstream`."""
        key = (partition, upstream)
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None:
            return kept
        found = self._translate(partition, remote, upstream)
        if found.ok:
            with self._lock:
                if len(self._kept) >= _KEPT:
                    self._kept.clear()
                self._kept[key] = found
        return found

    def _translate(self, partition: SourcePartition, remote: str, upstream: int) -> Translation:
        topic, number = partition
        try:
            stamp = _timestamp_from(self._source_settings, topic, number, upstream)
            if stamp is None:
                return Translation(
                    None, f"no record at or after offset {upstream} to translate by timestamp"
                )
            return Translation(
                _first_at_or_after(self._target_settings, remote, number, stamp),
                f"by timestamp {stamp}",
                by_timestamp=True,
            )
        except KafkaException as exc:
            return Translation(None, f"translation by timestamp failed: {exc.args[0].str()}")


def _consumer(settings) -> Consumer:
    # librdkafka reads committed unless told otherwise; so it always did here.
    return reading_consumer(
        settings,
        "mirrorline-timestamp-translation",
        committed=True,
        **{"enable.partition.eof": True},
    )


def _timestamp_from(settings, topic: str, partition: int, offset: int) -> int | None:
    """The timestamp of the first record at or after `offset`, None at the log's end."""
    consumer = _consumer(settings)
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        for message in consumer.consume(1, timeout=_TIMEOUT_S):
            error = message.error()
            if error is None:
                return int(message.timestamp()[1])
            if error.code() != error._PARTITION_EOF:
                raise KafkaException(error)
        return None
    finally:
        consumer.close()


def _first_at_or_after(settings, topic: str, partition: int, timestamp: int) -> int:
    """The first offset of `topic[partition]` with a timestamp at or after `timestamp`,
    or its end when every record is older."""
    consumer = _consumer(settings)
    try:
        [found] = consumer.offsets_for_times(
            [TopicPartition(topic, partition, timestamp)], timeout=_TIMEOUT_S
        )
        if found.error is not None:
            raise KafkaException(found.error)
        if found.offset >= 0:
            return int(found.offset)
        _, end = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=_TIMEOUT_S
        )
        return int(end)
    finally:
        consumer.close()
