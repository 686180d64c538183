"""Exactly-once writing: one Kafka transaction per source partition and task.

For each source partition of its input, a task:

1. creates a producer with the partition's transactional id
   (`mirrorline.<flow>.<topic>.<partition>`) and initialises it; this fences
   every earlier producer with that id (a retried task, a task of a driver that
   lost the flow) and completes or aborts whatever transaction it left open;
2. looks up the partition's committed position (below), now stable, and skips
   every record before it: a replayed batch writes nothing twice;
3. writes the remaining records, the partition's new progress record and its
   committed position, and commits all of it at once.

The committed position is kept twice in the same transaction: in the progress
topic (what the driver reads at start), and as the committed offset of the
consumer group `mirrorline.position.<flow>` for the remote topic-partition, an
index that answers "how far has this partition been committed" with one request.
That group's offset is the target offset after the flow's last copy in the
partition (so `kafka-consumer-groups` shows something meaningful); its metadata
holds the source position as JSON: ``{"next_offset": 1234, "version": 1}``.

A record the target refuses inside a transaction makes the whole transaction
fail. Under `errors.tolerance = all` the task aborts it, remembers the refused
records and writes the partition again, this time sending those records to the
dead-letter topic (in the same transaction) instead of the remote topic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from mirrorline.engine.progress import progress_record
from mirrorline.engine.refusals import Refusal, is_refusal, refusal
from mirrorline.engine.sync_points import sync_points
from mirrorline.engine.writer import (
    DeliveryFailed,
    PartitionLog,
    SourceRecord,
    WriteSpec,
    flush_or_raise,
    headers_to_write,
    produce_copy,
    produce_dead_letter,
    producer_settings,
    refused_or_raise,
)

POSITION_VERSION = 1
# Attempts of one partition's transaction when the target refuses records in it.
MAX_ATTEMPTS = 5
TRANSACTION_TIMEOUT_S = 60.0


def transactional_id(flow: str, topic: str, partition: int) -> str:
    return f"mirrorline.{flow}.{topic}.{partition}"


def position_group(flow: str) -> str:
    return f"mirrorline.position.{flow}"


def write_exactly_once(
    records: Iterator[SourceRecord], spec: WriteSpec
) -> dict[tuple[str, int], PartitionLog]:
    """Write each source partition of the task's input in a transaction of its own."""
    by_partition: dict[tuple[str, int], list[SourceRecord]] = {}
    for record in records:
        by_partition.setdefault((record.topic, record.partition), []).append(record)
    positions = _positions(spec)
    return {
        (topic, partition): _PartitionTransaction(spec, positions, topic, partition, rows).run()
        for (topic, partition), rows in by_partition.items()
    }


class _PartitionTransaction:
    def __init__(self, spec, positions: Consumer, topic, partition, records) -> None:
        self.spec = spec
        self.positions = positions
        self.topic = topic
        self.partition = partition
        self.remote = spec.remote_topics[topic]
        self.records: list[SourceRecord] = records
        # Refused in an earlier attempt: dead-lettered this time (errors.tolerance = all).
        self.refused: dict[int, Refusal] = {}

    def run(self) -> PartitionLog:
        for _ in range(MAX_ATTEMPTS):
            log = self._attempt()
            if log is not None:
                return log
        raise DeliveryFailed(
            f"flow {self.spec.flow}: {self.topic}[{self.partition}]: the target kept refusing "
            f"new records after {MAX_ATTEMPTS} attempts of one transaction"
        )

    def _attempt(self) -> PartitionLog | None:
        """One transaction; None when it was aborted to leave out newly refused records."""
        spec = self.spec
        settings = {
            **producer_settings(spec.producer_settings),
            "transactional.id": transactional_id(spec.flow, self.topic, self.partition),
        }
        producer = Producer(settings)
        try:
            producer.init_transactions(TRANSACTION_TIMEOUT_S)
            committed, committed_target = self._committed()
            log = PartitionLog(first_seen=self.records[0].offset)
            pending = [r for r in self.records if committed is None or r.offset >= committed]
            log.skipped = len(self.records) - len(pending)
            log.next_offset = max(self.records[-1].offset + 1, committed or 0)
            if not pending:
                return log  # an earlier attempt committed all of it
            producer.begin_transaction()
            failures: list[tuple[int, object]] = []
            dead_letter_errors: list[str] = []

            def delivered(error, msg) -> None:
                index = len(log.target_offsets)
                log.target_offsets.append(msg.offset() if error is None else -1)
                if error is not None:
                    failures.append((log.source_offsets[index], error))

            def dead_letter_delivered(error, _msg) -> None:
                if error is not None:
                    dead_letter_errors.append(error.str())

            for count, record in enumerate(pending):
                headers = headers_to_write(record, spec)
                if headers is None:
                    log.filtered += 1
                    continue
                found = self.refused.get(record.offset) or produce_copy(
                    producer, spec, record, headers, delivered
                )
                if found is None:
                    log.note_written(record)
                else:
                    refused_or_raise(spec, found)
                    log.refusals.append(found)
                    if produce_dead_letter(producer, spec, found, record, dead_letter_delivered):
                        log.dead_lettered += 1
                if count % 1000 == 0:
                    producer.poll(0)
            flush_or_raise(producer, spec, f"records of {self.topic}[{self.partition}]")
            if failures:
                self._note_refusals(failures)
                producer.abort_transaction(TRANSACTION_TIMEOUT_S)
                return None
            if dead_letter_errors:
                raise DeliveryFailed(
                    f"flow {spec.flow}: dead-letter topic {spec.dead_letter_topic} refused a "
                    f"record from {self.topic}[{self.partition}]: {dead_letter_errors[0]}"
                )
            self._commit(producer, log, committed_target)
            return log
        except KafkaException as exc:
            raise DeliveryFailed(
                f"flow {spec.flow}: transaction for {self.topic}[{self.partition}] failed: "
                f"{exc.args[0].str()}"
            ) from None

    def _note_refusals(self, failures: Iterable[tuple[int, object]]) -> None:
        """Remember refused records for the next attempt; anything else fails the task."""
        for offset, error in failures:
            found = refusal(self.topic, self.partition, offset, self.remote, error)
            if not is_refusal(error):
                raise DeliveryFailed(f"flow {self.spec.flow}: {found.describe()}")
            refused_or_raise(self.spec, found)
            self.refused[offset] = found

    def _committed(self) -> tuple[int | None, int]:
        """(next source offset, target offset) committed for this partition, if any.

        Read after `init_transactions`, so no transaction of this partition is
        still open; the consumer asks for stable offsets (read_committed).
        """
        [found] = self.positions.committed(
            [TopicPartition(self.remote, self.partition)], timeout=TRANSACTION_TIMEOUT_S
        )
        if found.error is not None:
            raise KafkaException(found.error)
        if found.offset < 0 or not found.metadata:
            return None, 0
        try:
            position = json.loads(found.metadata)
            return int(position["next_offset"]), found.offset
        except (ValueError, KeyError, TypeError):
            return None, found.offset  # not written by Mirrorline: no position known

    def _commit(self, producer: Producer, log: PartitionLog, committed_target: int) -> None:
        """Add the progress and the position to the transaction and commit it."""
        spec = self.spec
        source, target = log.delivered()
        syncs = sync_points(source, target, spec.offset_lag_max)
        key, value = progress_record(spec.flow, self.topic, self.partition, log.next_offset, syncs)
        producer.produce(spec.exactly_once.progress_topic, key=key, value=value)
        position = TopicPartition(
            self.remote,
            self.partition,
            target[-1] + 1 if target else committed_target,
            metadata=json.dumps({"next_offset": log.next_offset, "version": POSITION_VERSION}),
        )
        producer.send_offsets_to_transaction(
            [position], self.positions.consumer_group_metadata(), TRANSACTION_TIMEOUT_S
        )
        producer.commit_transaction(TRANSACTION_TIMEOUT_S)


_position_readers: dict[str, Consumer] = {}


def _positions(spec: WriteSpec) -> Consumer:
    """A consumer of the flow's position group, one per Python worker (never subscribes)."""
    group = spec.exactly_once.position_group
    consumer = _position_readers.get(group)
    if consumer is None:
        consumer = _position_readers[group] = Consumer(
            {
                **spec.exactly_once.consumer_settings,
                "group.id": group,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
    return consumer
