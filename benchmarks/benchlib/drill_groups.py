"""The failover drill's records and consumer groups, on the source and on the target.

Every value names its partition and its position there (`Record`), so a group's
reads on either cluster can be checked record by record: what it read on the
source (`consume_and_commit`), where the replicator put its offsets on the
target (`TargetGroups`), what it reads from there (`read_from_synced`) and how
that compares (`compare`).
"""

from __future__ import annotations

from confluent_kafka import OFFSET_STORED, Consumer, KafkaException, Producer, TopicPartition

from benchlib.common import BenchmarkError, wait_for

Record = tuple[int, int]  # (partition, position in the partition), as a value carries it


def _value(partition: int, position: int, size: int) -> bytes:
    head = b"%d:%d:" % (partition, position)
    return head + b"x" * max(0, size - len(head))


def _record(value: bytes) -> Record:
    partition, position, _ = value.split(b":", 2)
    return int(partition), int(position)


def produce(bootstrap: str, topics: list[str], records: int, partitions: int, size: int) -> None:
    """The same `records` values of `size` bytes, in the same partitions and order, into
    every topic; record i goes to partition i % `partitions`."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "acks": "all",
            "batch.size": 1_000_000,
            # Retries (a topic created moments ago) must not reorder: the groups check
            # each partition's records in order.
            "enable.idempotence": True,
        }
    )
    failures: list[str] = []

    def delivered(error, _msg) -> None:
        if error is not None:
            failures.append(error.str())

    for i in range(records):
        partition = i % partitions
        value = _value(partition, i // partitions, size)
        for topic in topics:
            while True:
                try:
                    producer.produce(
                        topic, value, b"k%d" % i, partition=partition, on_delivery=delivered
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(120)
    if remaining or failures:
        raise BenchmarkError(
            f"producing to {', '.join(topics)} failed: {remaining} unacknowledged, "
            f"errors: {failures[:3]}"
        )


def consume_and_commit(bootstrap: str, group: str, topic: str, counts: dict[int, int]) -> None:
    """Read the first `counts[p]` records of each partition as `group`, then commit.

    The values are checked on the way: the group must have read exactly the
    records the plan says, so that the comparison on west starts from a known point.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in counts])
        read = {p: 0 for p in counts}
        last_offset: dict[int, int] = {}

        def done() -> bool:
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error():
                    raise BenchmarkError(f"group {group} reading {topic}: {msg.error().str()}")
                p = msg.partition()
                if read[p] >= counts[p]:
                    continue
                if _record(msg.value()) != (p, read[p]):
                    raise BenchmarkError(
                        f"{topic}[{p}] offset {msg.offset()}: expected record {read[p]}, "
                        f"found {msg.value()[:30]!r}"
                    )
                read[p] += 1
                last_offset[p] = msg.offset()
                if read[p] == counts[p]:
                    consumer.pause([TopicPartition(topic, p)])
            return read == counts

        wait_for(done, timeout=120, what=f"group {group} reading {counts} of {topic}", interval=0)
        consumer.commit(
            offsets=[TopicPartition(topic, p, o + 1) for p, o in last_offset.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


class TargetGroups:
    """The drill's groups' committed offsets of one topic on the target.

    Read through a consumer of each group that never joins it (no subscription),
    so the group stays without members for the tool's offset sync. A consumer,
    not the admin client: librdkafka 2.16's admin ListConsumerGroupOffsets
    crashes the process when a fresh cluster's group coordinator is still loading.
    """

    def __init__(self, bootstrap: str, groups: list[str], topic: str, partitions: int) -> None:
        self.topic = topic
        self.partitions = partitions
        self.groups = groups
        self._consumers = {
            group: Consumer(
                {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
            )
            for group in groups
        }

    def committed(self) -> dict[str, dict[int, int]] | None:
        """group -> {partition: offset}; None if the cluster did not answer in time."""
        found = {}
        for group, consumer in self._consumers.items():
            try:
                answer = consumer.committed(
                    [TopicPartition(self.topic, p) for p in range(self.partitions)], timeout=30
                )
            except KafkaException:
                return None
            found[group] = {tp.partition: tp.offset for tp in answer if tp.offset >= 0}
        return found

    def close(self) -> None:
        for consumer in self._consumers.values():
            consumer.close()


def read_from_synced(bootstrap: str, group: str, topic: str, partitions: list[int]) -> list:
    """What `group` gets on `topic`, starting where its committed offsets say, to the end.

    The consumer asks the broker for the group's committed offset of each of
    `partitions` itself (`OFFSET_STORED`), as an application that fails over does;
    it commits nothing.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )
    got: list[Record] = []
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_STORED) for p in partitions])
        pending = {p for p in partitions if ends[p] > 0}
        for p in list(pending):  # a group already at the end has nothing to read
            committed = consumer.committed([TopicPartition(topic, p)], timeout=10)[0].offset
            if committed >= ends[p]:
                pending.discard(p)

        def at_end() -> bool:
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error():
                    raise BenchmarkError(f"group {group} reading {topic}: {msg.error().str()}")
                got.append(_record(msg.value()))
                if msg.offset() >= ends[msg.partition()] - 1:
                    pending.discard(msg.partition())
            return not pending

        wait_for(at_end, timeout=120, what=f"group {group} reading {topic} to its end", interval=0)
    finally:
        consumer.close()
    return got


def compare(plan: dict[int, int], sizes: dict[int, int], synced: dict[int, int], got) -> dict:
    """Re-read, skipped and duplicated records of one group, per partition and in total."""
    per_partition = {}
    for p, n in sizes.items():
        read_on_east = plan[p]
        if p not in synced:
            per_partition[p] = {
                "read_on_east": read_on_east,
                "synced_offset": None,
                "re_read": 0,
                "skipped": 0,
                "duplicates": 0,
                # What a consumer's auto.offset.reset would then cost.
                "re_read_if_earliest": read_on_east,
                "skipped_if_latest": n - read_on_east,
            }
            continue
        seen = [pos for q, pos in got if q == p]
        distinct = set(seen)
        per_partition[p] = {
            "read_on_east": read_on_east,
            "synced_offset": synced[p],
            "read_on_west": len(seen),
            "re_read": sum(1 for pos in distinct if pos < read_on_east),
            "skipped": sum(1 for pos in range(read_on_east, n) if pos not in distinct),
            "duplicates": len(seen) - len(distinct),
        }
    present = [v for v in per_partition.values() if v["synced_offset"] is not None]
    return {
        "read_on_west": sum(v["read_on_west"] for v in present),
        "re_read": sum(v["re_read"] for v in present),
        "skipped": sum(v["skipped"] for v in present),
        "duplicates": sum(v["duplicates"] for v in present),
        "partitions_without_offset": len(per_partition) - len(present),
        "partitions": per_partition,
    }
