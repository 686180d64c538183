"""Local clusters, topics and data for benchmarks: the `mirrorline dev` clusters,
their warm-up, topic creation and deletion, end offsets, pre-loading and a paced
producer."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from benchlib.common import SOURCE, TARGET, BenchmarkError, say, wait_for
from mirrorline.admin_client import AdminClient
from mirrorline.devcluster import DevClusters
from mirrorline.devlatency import Link

# Errors of a partition that was created a moment ago and has no leader yet.
NOT_READY = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError.UNKNOWN_LEADER_EPOCH,  # its leader's epoch not known everywhere yet
}
PROBE_RATE = 10  # records/s produced before the replicator is seen to work
WARM_UP_TOPIC = "bench-warm-up"


def admin_client(bootstrap: str) -> AdminClient:
    """An admin client that keeps librdkafka's informational lines (a queue purged when
    the client is freed) out of the benchmark's output; errors still show."""
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


@contextmanager
def clusters_running(directory: Path, source_link: Link | None = None) -> Iterator[list]:
    """Two single-node KRaft clusters, `east` (source) and `west` (target), in
    `directory`, that die with this process; yields them in that order. With
    `source_link`, every client reaches the source through that simulated WAN link
    (see `mirrorline.devlink`)."""
    clusters = DevClusters(directory)
    try:
        if source_link is None:
            started = clusters.up([SOURCE, TARGET], die_with_parent=True, progress=say)
        else:
            started = clusters.up([SOURCE], die_with_parent=True, progress=say, link=source_link)
            started += clusters.up([TARGET], die_with_parent=True, progress=say)
        yield sorted(started, key=lambda c: c.alias != SOURCE)
    finally:
        clusters.down(progress=say)


@contextmanager
def dev_clusters_running(directory: Path) -> Iterator[list]:
    """The clusters `east` and `west` that `mirrorline dev up --dir DIRECTORY` started,
    as a user would have them (data on disk, no tuning); left running afterwards."""
    running = {c.alias: c for c in DevClusters(directory).clusters()}
    missing = [alias for alias in (SOURCE, TARGET) if alias not in running]
    if missing:
        raise BenchmarkError(
            f"no dev cluster {', '.join(missing)} in {directory}: "
            f"start them with `mirrorline dev up --dir {directory}`"
        )
    yield [running[SOURCE], running[TARGET]]


def warm_up(clusters: list, records: int, partitions: int, size: int = 1024) -> None:
    """Write `records` records to every cluster and read them back, then delete them.

    A broker's JVM runs its produce and fetch paths interpreted until its compiler
    catches up, which takes a few hundred thousand records here. Without this, the
    first contender of a run would meet cold brokers and every later one warm brokers.
    """
    began = time.monotonic()
    for cluster in clusters:
        bootstrap = cluster.bootstrap_servers
        create_topic(bootstrap, WARM_UP_TOPIC, partitions)
        preload(
            bootstrap,
            [WARM_UP_TOPIC],
            records=records,
            partitions=partitions,
            value=random_values(0, size),
        )
        _read_all(bootstrap, WARM_UP_TOPIC, partitions, records)
        delete_topics(bootstrap, [WARM_UP_TOPIC])
    say(
        f"brokers warmed up: {records:,} records of {size} bytes written and read on "
        f"each cluster in {time.monotonic() - began:.1f}s"
    )


def _read_all(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirrorline-bench-warm-up"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        read, deadline = 0, time.monotonic() + 300
        while read < records:
            if time.monotonic() > deadline:
                raise BenchmarkError(f"warming up {bootstrap}: read {read:,} of {records:,}")
            for message in consumer.consume(10_000, timeout=1):
                if message.error() is None:
                    read += 1
    finally:
        consumer.close()


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 60) -> None:
    admin = admin_client(bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout)
    wait_for(
        lambda: (
            (t := admin.list_topics(topic, timeout=5).topics.get(topic)) is not None
            and t.error is None
            and len(t.partitions) == partitions
            and all(p.leader >= 0 for p in t.partitions.values())
        ),
        timeout=timeout,
        what=f"topic {topic} to have leaders on {bootstrap}",
    )


def delete_topics(bootstrap: str, topics: list[str], timeout: float = 60) -> None:
    """Delete topics that exist (their disk space is freed by the broker later)."""
    admin = admin_client(bootstrap)
    present = set(admin.list_topics(timeout=10).topics)
    wanted = [t for t in topics if t in present]
    for topic, future in admin.delete_topics(wanted, operation_timeout=timeout).items():
        try:
            future.result(timeout)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise BenchmarkError(f"deleting {topic} on {bootstrap}: {exc}") from exc


class OffsetWatcher:
    """End offsets of a topic, per partition.

    A topic the replicator has not created yet has none, and a partition whose
    leader is still being elected counts as empty: both pass within moments.
    """

    def __init__(self, bootstrap: str) -> None:
        self._consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "mirrorline-bench-watcher"}
        )

    def end_offsets(self, topic: str) -> dict[int, int]:
        meta = self._consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return {}
        return {p: self._end_offset(topic, p) for p in meta.partitions}

    def _end_offset(self, topic: str, partition: int) -> int:
        try:
            return self._consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=10
            )[1]
        except KafkaException as exc:
            if exc.args[0].code() in NOT_READY:
                return 0
            raise

    def close(self) -> None:
        self._consumer.close()


def key(i: int) -> bytes:
    """Small keys, 10,000 distinct ones, as many applications have."""
    return b"k%d" % (i % 10_000)


def key_bytes(records: int) -> int:
    """The exact number of key bytes `preload` writes for `records` records."""
    return sum(len(key(i)) for i in range(records))


def random_values(seed: int, size: int) -> Callable[[int], bytes]:
    """Random, incompressible values; the same seed gives the same values."""
    rng = random.Random(seed)
    return lambda _i: rng.randbytes(size)


def preload(
    bootstrap: str,
    topics: list[str],
    *,
    records: int,
    partitions: int,
    value: Callable[[int], bytes],
    compression: str = "none",
) -> None:
    """Write the same `records` records to every topic: record i has key `key(i)`,
    value `value(i)` (called once per record, in order) and partition i % partitions.

    The producer compresses with `compression`, so a topic can hold compressed
    batches as an application's producer would write them.
    """
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "acks": "all",
            # Retries must not reorder: the benchmark checks the target's order by
            # each partition's last record.
            "enable.idempotence": True,
            "compression.type": compression,
        }
    )
    failures: list[str] = []

    def delivered(error, _msg) -> None:
        if error is not None:
            failures.append(error.str())

    step = max(1, records // 4)
    for i in range(records):
        k, v = key(i), value(i)
        for topic in topics:
            while True:
                try:
                    producer.produce(topic, v, k, partition=i % partitions, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
        if (i + 1) % step == 0 and records >= 200_000:
            say(f"  pre-loaded {i + 1:,} / {records:,}")
    remaining = producer.flush(300)
    if remaining or failures:
        raise BenchmarkError(
            f"pre-loading {', '.join(topics)} failed: {remaining} unacknowledged, "
            f"errors: {failures[:3]}"
        )


def paced_producer(bootstrap, topic, partitions, size, rate, go, stop, results, turns=None) -> None:
    """Child process: PROBE_RATE records/s until `go`, then `rate` records/s until `stop`;
    with `turns` (an array of [start, end, ...] epoch seconds, filled before `go`), `rate`
    only within those turns and PROBE_RATE between them (`benchlib/turns.py`).

    A separate process, so producing never competes with the measuring consumer
    for the benchmark's interpreter lock. Each record's timestamp is its produce
    time. Puts {"produced", "unacknowledged", "errors"} on `results` at the end.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    errors: list[str] = []

    def delivered(error, _msg) -> None:
        if error is not None:
            errors.append(error.str())

    edges: list[float] | None = None  # the turns, copied once at `go`

    def rate_now() -> int:
        nonlocal edges
        if not go.is_set():
            return PROBE_RATE
        if turns is None:
            return rate
        if edges is None:
            edges = turns[:]
        now = time.time()
        in_turn = any(edges[i] <= now < edges[i + 1] for i in range(0, len(edges), 2))
        return rate if in_turn else PROBE_RATE

    produced = 0
    phase_start, phase_sent, phase_rate = time.monotonic(), 0, PROBE_RATE
    while not stop.is_set():
        current = rate_now()
        if current != phase_rate:
            phase_start, phase_sent, phase_rate = time.monotonic(), 0, current
        due = int((time.monotonic() - phase_start) * phase_rate) - phase_sent
        for _ in range(max(0, due)):
            while True:
                try:
                    producer.produce(
                        topic,
                        os.urandom(size),
                        key(produced),
                        partition=produced % partitions,
                        timestamp=int(time.time() * 1000),
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    producer.poll(0.01)
            produced += 1
            phase_sent += 1
        producer.poll(0)
        time.sleep(0.002)  # pacing granularity, not synchronisation
    remaining = producer.flush(60)
    results.put({"produced": produced, "unacknowledged": remaining, "errors": errors[:3]})
