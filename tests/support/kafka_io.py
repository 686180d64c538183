"""Create topics, produce and consume on real clusters with confluent-kafka."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from mirrorline.admin_client import AdminClient
from mirrorline.checkpoints import read_checkpoints
from mirrorline.formats import OffsetSync
from mirrorline.kafka import ClusterClients, ensure_topic

#: Where a helper connects: bootstrap servers (plaintext clusters) or a whole
#: librdkafka configuration (secured clusters: `DevClusters.client_config`).
Endpoint = str | Mapping[str, str]


def conf(endpoint: Endpoint) -> dict[str, Any]:
    """The librdkafka settings that reach `endpoint`."""
    if isinstance(endpoint, str):
        return {"bootstrap.servers": endpoint}
    return dict(endpoint)


@dataclass(frozen=True)
class Record:
    """A record as tests produce and read it back."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None  # CreateTime in ms; None lets the producer set it
    partition: int | None = None
    offset: int | None = field(default=None, compare=False)


def recent_timestamp(ms_ago: int) -> int:
    """An explicit record timestamp `ms_ago` before now.

    Explicit timestamps must stay recent: the brokers delete records older than
    the topic's retention (7 days by default) within a second.
    """
    return int(time.time() * 1000) - ms_ago


def varied_records(count: int, seed: int, partitions: int, start: int = 0) -> list[Record]:
    """`count` numbered records spread round-robin over `partitions`, with null keys and
    values now and then, headers on every fourth, timestamps within the last hour."""
    rng = random.Random(seed)
    return [
        Record(
            None if i % 101 == 0 else f"k{rng.randrange(1000)}".encode(),
            None if i % 53 == 0 else f"value-{i}-{rng.randbytes(8).hex()}".encode(),
            () if i % 4 else (("trace-id", f"{i}".encode()), ("app", b"orders")),
            recent_timestamp(rng.randrange(3_600_000)),
            i % partitions,
        )
        for i in range(start, start + count)
    ]


def content(record: Record) -> tuple:
    """What a faithful copy keeps: key, value, headers and timestamp."""
    return record.key, record.value, tuple(record.headers), record.timestamp


def by_partition(records: Iterable[Record]) -> dict[int, list[tuple]]:
    """Each partition's record contents in offset order."""
    out: dict[int, list[tuple]] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        out.setdefault(r.partition, []).append(content(r))
    return out


def unique_name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def cluster_clients(cluster) -> ClusterClients:
    """Mirrorline's clients of a test cluster (a `DevCluster`), for its stores."""
    return ClusterClients.of(cluster.alias, conf(cluster.bootstrap_servers))


def admin(bootstrap: Endpoint) -> AdminClient:
    return AdminClient(conf(bootstrap))


def create_topic(
    bootstrap: Endpoint,
    name: str,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    timeout: float = 30,
    replication_factor: int = 1,
) -> None:
    """Create a new topic (replication factor 1 unless told; -1: the broker's default) and
    wait until every partition has a leader."""
    created = ensure_topic(
        admin(bootstrap),
        name,
        partitions=partitions,
        replication_factor=replication_factor,
        config=config,
        timeout=timeout,
    )
    assert created, f"topic {name} already exists on {bootstrap}"


def topic_names(bootstrap: Endpoint) -> set[str]:
    return set(admin(bootstrap).list_topics(timeout=10).topics)


def delete_topics(bootstrap: Endpoint, names: Iterable[str], timeout: float = 30) -> None:
    """Delete those of `names` that exist and wait until the cluster no longer lists them.

    For tests that must leave a shared cluster as they found it (a heartbeats
    topic, for one, would be replicated by every later flow out of the cluster).
    """
    present = sorted(set(names) & topic_names(bootstrap))
    if not present:
        return
    client = admin(bootstrap)  # kept alive until the futures complete
    for future in client.delete_topics(present, request_timeout=timeout).values():
        future.result(timeout)
    deadline = time.monotonic() + timeout
    while set(present) & topic_names(bootstrap):
        if time.monotonic() > deadline:
            raise AssertionError(f"topics {present} still listed {timeout:.0f}s after deletion")
        time.sleep(0.1)


def produce(
    bootstrap: Endpoint,
    topic: str,
    records: Iterable[Record],
    extra: Mapping[str, object] | None = None,
) -> list[Record]:
    """Produce and wait for every delivery; returns the records with partition and offset.

    Idempotent, so each partition holds the records in the order given: without it a
    retry (common right after a topic's creation) can put earlier records after later
    ones, and tests read order, timestamps and last records back.
    """
    producer = Producer(
        {**conf(bootstrap), "linger.ms": 5, "enable.idempotence": True, **(extra or {})}
    )
    delivered: list[Record] = []
    errors: list[str] = []

    def on_delivery(err, msg, record):
        if err is not None:
            errors.append(str(err))
        else:
            delivered.append(
                Record(
                    record.key,
                    record.value,
                    record.headers,
                    msg.timestamp()[1],
                    msg.partition(),
                    msg.offset(),
                )
            )

    for record in records:
        kwargs = {}
        if record.partition is not None:
            kwargs["partition"] = record.partition
        if record.timestamp is not None:
            kwargs["timestamp"] = record.timestamp
        if record.headers:
            kwargs["headers"] = list(record.headers)
        while True:
            try:
                producer.produce(
                    topic,
                    key=record.key,
                    value=record.value,
                    on_delivery=lambda err, msg, r=record: on_delivery(err, msg, r),
                    **kwargs,
                )
                break
            except BufferError:  # the local queue is full: serve deliveries, then retry
                producer.poll(1)
        producer.poll(0)
    remaining = producer.flush(60)
    if errors or remaining:
        raise AssertionError(f"produce to {topic} failed: {errors[:3]}, {remaining} undelivered")
    return delivered


def consume(
    bootstrap: Endpoint,
    topic: str,
    *,
    expected: int,
    timeout: float = 60,
    isolation_level: str = "read_committed",
    partitions: Sequence[int] | None = None,
) -> list[Record]:
    """Read `topic` from the beginning until `expected` records arrived or the deadline.

    Uses manual assignment (no consumer group), so nothing is committed anywhere.
    Reads a little past `expected` is impossible: it stops as soon as the count is met.
    """
    consumer = Consumer(
        {
            **conf(bootstrap),
            "group.id": unique_name("reader"),
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
            "enable.partition.eof": False,
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        numbers = partitions if partitions is not None else sorted(meta.partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in numbers])
        records: list[Record] = []
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=500, timeout=0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                records.append(_record(msg))
        return records
    finally:
        consumer.close()


def _record(msg) -> Record:
    return Record(
        msg.key(),
        msg.value(),
        tuple(msg.headers() or ()),
        msg.timestamp()[1],
        msg.partition(),
        msg.offset(),
    )


def consume_to_end(bootstrap: Endpoint, topic: str, *, timeout: float = 60) -> list[Record]:
    """Every record of `topic` up to each partition's end as the read finds it
    (read_committed: transaction markers take offsets but are no records)."""
    consumer = Consumer(
        {
            **conf(bootstrap),
            "group.id": unique_name("reader"),
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        numbers = set(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in numbers])
        records: list[Record] = []
        deadline = time.monotonic() + timeout
        while numbers:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: partitions {sorted(numbers)} not read to the end")
            for msg in consumer.consume(num_messages=500, timeout=0.5):
                if msg.error() and msg.error().code() == KafkaError._PARTITION_EOF:
                    numbers.discard(msg.partition())
                elif msg.error():
                    raise KafkaException(msg.error())
                else:
                    records.append(_record(msg))
        return records
    finally:
        consumer.close()


def end_offsets(bootstrap: Endpoint, topic: str, timeout: float = 15) -> dict[int, int]:
    """Each partition's end offset, retrying Kafka errors until `timeout`.

    Right after a topic is created its partitions may briefly have no leader;
    librdkafka does not flag that as retriable for watermark queries.
    """
    deadline = time.monotonic() + timeout
    consumer = Consumer({**conf(bootstrap), "group.id": unique_name("offsets")})
    try:
        while True:
            try:
                meta = consumer.list_topics(topic, timeout=10).topics[topic]
                return {
                    p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                    for p in sorted(meta.partitions)
                }
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()


def read_offset_syncs(bootstrap: Endpoint, topic: str, timeout: float = 60) -> list[OffsetSync]:
    """Every offset sync in `topic` (one partition, MM2's format), in the order written."""
    consumer = Consumer({**conf(bootstrap), "group.id": unique_name("syncs")})
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, 0)])
        syncs: list[OffsetSync] = []
        deadline = time.monotonic() + timeout
        while len(syncs) < end:
            if time.monotonic() > deadline:
                raise AssertionError(f"read {len(syncs)} of {end} offset syncs from {topic}")
            for msg in consumer.consume(1000, timeout=1):
                if msg.error():
                    raise KafkaException(msg.error())
                syncs.append(OffsetSync.decode(msg.key(), msg.value()))
        return syncs
    finally:
        consumer.close()


def commit_offsets(
    bootstrap: Endpoint, group: str, topic: str, offsets: Mapping[int, int], timeout: float = 30
) -> None:
    """Commit `offsets` (partition -> offset) for `group`, as its consumer would.

    Retries while the group coordinator is still loading (a fresh cluster).
    """
    consumer = Consumer({**conf(bootstrap), "group.id": group})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                consumer.commit(
                    offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                    asynchronous=False,
                )
                return
            except KafkaException as exc:
                loading = exc.args[0].code() in _COORDINATOR_MOVING
                if not (exc.args[0].retriable() or loading) or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()


# Answers of a group coordinator that is loading or moving: worth a retry.
_COORDINATOR_MOVING = {
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
}


def committed_offsets(
    bootstrap: Endpoint, group: str, topic: str, partitions: int
) -> dict[int, int]:
    """`group`'s committed offset per partition of `topic` (partitions without one left out)."""
    consumer = Consumer({**conf(bootstrap), "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 10)
        return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
    finally:
        consumer.close()


def checkpoints_of(bootstrap: Endpoint, source_alias: str, group: str, topic: str) -> dict:
    """`group`'s latest checkpoints for `topic` (its name on this cluster), by partition.

    Read from `<source_alias>.checkpoints.internal`; empty while that topic
    does not exist yet.
    """
    found = read_checkpoints(
        conf(bootstrap),
        f"{source_alias}.checkpoints.internal",
        group=group,
        missing_ok=True,
    )
    return {p: c for (_, t, p), c in found.items() if t == topic}
