"""Reading a partition for verification: large batches, explicit offsets, no group.

A reader's consumer is assigned one partition at a time at an explicit
offset and read with `consume(num_messages=...)` up to an end offset (never
asking for more records than the range has left, so the last batch does not
wait); no group is joined and nothing is committed. Records come out in batches of
`(offset, (timestamp, key, value, headers), skipped)` (`compare.Record`),
which is all the comparison looks at:

- headers are the user's: Mirrorline's provenance headers
  (`engine.provenance.HEADER`, added by the writer under policies that keep
  topic names) are left out on both sides;
- `skipped` marks a source record whose provenance names the target cluster:
  the writer does not copy such a record (loop prevention).

Both sides are read committed, as the writer reads its source and as
exactly-once consumers read the target: aborted records are no records.
Offsets without records (compaction, transaction markers) are passed by the
consumer's position, so a read always ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

from confluent_kafka import KafkaException, Message, TopicPartition

from mirrorline.engine.provenance import HEADER
from mirrorline.kafka import KafkaOperationError, reading_consumer
from mirrorline.verification.compare import Headers, Record

BATCH = 20_000  # records asked of the consumer at once
_FETCHING = {
    "enable.auto.offset.store": False,
    "fetch.max.bytes": 64 * 1024 * 1024,
    "max.partition.fetch.bytes": 16 * 1024 * 1024,
    "queued.min.messages": 200_000,
}


class PartitionReader:
    """Reads partitions of one cluster, one at a time, in batches.

    `open` assigns the partition at once, so librdkafka starts fetching it in
    the background while the caller still compares the previous one (a caller
    alternates two readers per side for that).
    """

    def __init__(
        self, consumer_settings: Mapping[str, Any], what: str, *, timeout: float = 30.0
    ) -> None:
        # Each partition is assigned when its turn comes: a reader of what is there
        # (2,000 partitions of one record took 100 s per 200 with the broker's fetch wait).
        self._consumer = reading_consumer(
            consumer_settings, "mirrorline-verify", committed=True, **_FETCHING
        )
        self._what = what
        self._timeout = timeout
        # Every topic's leaders at once: a partition of a topic the consumer has no
        # metadata for is first fetched about a second after its assignment (200
        # topics: 200 s), one of a known topic at once.
        try:
            self._consumer.list_topics(timeout=timeout)
        except KafkaException as exc:
            self._consumer.close()
            raise KafkaOperationError(f"{what}: cannot read its metadata: {exc}") from None

    def open(
        self,
        topic: str,
        partition: int,
        start: int,
        end: int,
        *,
        loop_marker: bytes | None = None,
        on_batch: Callable[[int], None] | None = None,
    ) -> Iterator[list[Record]]:
        """The records of `topic`[`partition`] from `start` to before `end`, in batches;
        fetching starts now. Read it to its end before this reader opens another.

        `loop_marker` (`<target cluster id>:`) marks records whose provenance names
        the target as skipped; `on_batch` is told how many offsets each batch passed.
        """
        if start >= end:
            return iter(())
        self._consumer.assign([TopicPartition(topic, partition, start)])
        return self._batches(topic, partition, start, end, loop_marker, on_batch)

    def _batches(
        self,
        topic: str,
        partition: int,
        start: int,
        end: int,
        loop_marker: bytes | None,
        on_batch: Callable[[int], None] | None,
    ) -> Iterator[list[Record]]:
        consumer = self._consumer
        try:
            position, idle_since = start, time.monotonic()
            while position < end:
                before = position
                # No more than the range holds: the last batch returns without waiting.
                messages = consumer.consume(num_messages=min(BATCH, end - position), timeout=0.1)
                batch: list[Record] = []
                append = batch.append
                for msg in messages:
                    if msg.error() is not None:
                        raise KafkaOperationError(
                            f"{self._what}: reading {topic}[{partition}] at offset "
                            f"{position}: {cast(Any, msg.error()).str()}"
                        )
                    offset = cast(int, msg.offset())
                    if offset >= end:
                        position = end
                        break
                    if msg.headers() is None:  # the common case, kept short
                        append((offset, (msg.timestamp()[1], msg.key(), msg.value(), None), False))
                    else:
                        append(_record(offset, msg, loop_marker))
                    position = offset + 1
                if not messages:
                    # Offsets without records (compaction, markers) move the position only.
                    moved = consumer.position([TopicPartition(topic, partition)])[0].offset
                    position = min(end, max(position, moved))
                if position > before:
                    idle_since = time.monotonic()
                    if on_batch is not None:
                        on_batch(position - before)
                elif time.monotonic() - idle_since > self._timeout:
                    raise KafkaOperationError(
                        f"{self._what}: reading {topic}[{partition}] made no progress for "
                        f"{self._timeout:.0f}s at offset {position} (records expected up to "
                        f"offset {end})"
                    )
                if batch:
                    yield batch
        finally:
            consumer.unassign()

    def close(self) -> None:
        self._consumer.close()


def _record(offset: int, msg: Message, loop_marker: bytes | None) -> Record:
    headers = cast("list[tuple[str, bytes | None]] | None", msg.headers())
    user: Headers = None
    skipped = False
    if headers is not None:
        kept = tuple(h for h in headers if h[0] != HEADER)
        if loop_marker is not None and len(kept) != len(headers):
            skipped = any(h[0] == HEADER and (h[1] or b"").startswith(loop_marker) for h in headers)
        user = kept or None
    return (offset, (msg.timestamp()[1], msg.key(), msg.value(), user), skipped)
