"""Records read for comparison: (offset, digest of timestamp, key, value, headers)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping

from confluent_kafka import TopicPartition

from mirrorline.kafka import KafkaOperationError, reading_consumer

__all__ = ["read_digests"]

Digest = bytes


def digest(timestamp: int, key: bytes | None, value: bytes | None, headers) -> Digest:
    """A digest of what a copy keeps: timestamp, key, value (null apart from empty), headers."""
    h = hashlib.blake2b(digest_size=16)
    h.update(timestamp.to_bytes(8, "big", signed=True))
    for part in (key, value):
        h.update(b"\x00" if part is None else b"\x01" + len(part).to_bytes(4, "big") + part)
    for name, data in headers or ():
        encoded = name.encode()
        h.update(len(encoded).to_bytes(4, "big") + encoded)
        h.update(b"\x00" if data is None else b"\x01" + len(data).to_bytes(4, "big") + data)
    return h.digest()


def read_digests(
    consumer_settings: Mapping[str, object],
    partition: tuple[str, int],
    start: int,
    end: int | None,
    *,
    limit: int | None = None,
    committed: bool = False,
    timeout: float = 60.0,
) -> list[tuple[int, Digest]]:
    """(offset, digest) of the records of `partition` from `start`, up to offset `end`
    (None: the partition's end as of the call) and at most `limit` records."""
    if limit == 0:
        return []
    consumer = reading_consumer(consumer_settings, "mirrorline-handover", committed=committed)
    topic, number = partition
    try:
        if end is None:
            _, end = consumer.get_watermark_offsets(
                TopicPartition(topic, number), timeout=timeout, cached=False
            )
        found: list[tuple[int, Digest]] = []
        if start >= end:
            return found
        consumer.assign([TopicPartition(topic, number, start)])
        position, deadline = start, time.monotonic() + timeout
        while position < end and (limit is None or len(found) < limit):
            if time.monotonic() > deadline:
                raise KafkaOperationError(f"reading {topic}[{number}] timed out at {position}")
            for msg in consumer.consume(1000, timeout=0.1):
                error = msg.error()
                if error is not None:
                    raise KafkaOperationError(f"reading {topic}[{number}]: {error.str()}")
                offset = msg.offset() or 0
                if offset >= end or (limit is not None and len(found) >= limit):
                    break
                stamp = msg.timestamp()[1]
                found.append((offset, digest(stamp, msg.key(), msg.value(), msg.headers())))
                position = offset + 1
            # Compaction and transaction markers leave offsets without records.
            position = max(position, consumer.position([TopicPartition(topic, number)])[0].offset)
        return found
    finally:
        consumer.close()
