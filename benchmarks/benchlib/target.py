"""A topic seen as a reader of a contender's guarantee sees it: the source topic
(plainly) and the contender's remote topic on the target.

At-least-once contenders are read `read_uncommitted`: a record counts once it is
in the log. Exactly-once is read `read_committed`: a record counts once its
transaction committed, and end offsets are last stable offsets. Transaction
markers take offsets too, so a backlog is complete when every partition's last
readable record on the target is the last one of its source partition
(`workloads.seq_of`), not when the end offsets reach the record count.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from benchlib.common import BenchmarkError
from benchlib.kafka_data import NOT_READY, admin_client
from benchlib.workloads import seq_of


def _isolation(committed: bool) -> str:
    return "read_committed" if committed else "read_uncommitted"


class TopicReader:
    def __init__(self, bootstrap: str, topic: str, partitions: int, committed: bool) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.committed = committed
        self._admin = admin_client(bootstrap)
        self._reader = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "mirrorline-bench-target-reader",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": _isolation(committed),
            }
        )
        self._ready = False

    def ready(self) -> bool:
        """Whether the contender created the topic and all its partitions have leaders."""
        if not self._ready:
            meta = self._admin.list_topics(self.topic, timeout=10).topics.get(self.topic)
            self._ready = (
                meta is not None
                and meta.error is None
                and len(meta.partitions) == self.partitions
                and all(p.leader >= 0 for p in meta.partitions.values())
            )
        return self._ready

    def end_offsets(self) -> dict[int, int]:
        """Per partition: the last stable offset (committed) or the high watermark;
        empty while the topic is not there yet."""
        if not self.ready():
            return {}
        level = IsolationLevel.READ_COMMITTED if self.committed else IsolationLevel.READ_UNCOMMITTED
        wanted = {
            TopicPartition(self.topic, p): OffsetSpec.latest() for p in range(self.partitions)
        }
        futures = self._admin.list_offsets(wanted, isolation_level=level, request_timeout=10)
        ends = {}
        for tp, future in futures.items():
            try:
                ends[tp.partition] = future.result().offset
            except KafkaException as exc:
                # A topic created moments ago: leaders and epochs settle within moments.
                if exc.args[0].code() not in NOT_READY and not exc.args[0].retriable():
                    raise
                ends[tp.partition] = 0
        return ends

    def last_seqs(self, ends: dict[int, int], timeout: float = 5.0) -> dict[int, int]:
        """Per partition: the position (seq) of the last readable record below `ends`,
        -1 for a partition that has none."""
        # The last data record sits at most one transaction marker below the end.
        self._reader.assign(
            [TopicPartition(self.topic, p, max(0, end - 3)) for p, end in ends.items() if end > 0]
        )
        last = {p: -1 for p in ends}
        pending = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for msg in self._reader.consume(num_messages=100, timeout=0.2):
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(msg.partition())
                        continue
                    raise BenchmarkError(f"reading the end of {self.topic}: {error.str()}")
                if msg.offset() < ends[msg.partition()]:
                    last[msg.partition()] = max(last[msg.partition()], seq_of(msg.value()))
                if msg.offset() >= ends[msg.partition()] - 1:
                    pending.discard(msg.partition())
        return last

    def first_records(self, count: int) -> dict[int, list[tuple]]:
        """The first `count` readable records of every partition as comparable tuples."""
        return read_first(self.bootstrap, self.topic, self.partitions, count, self.committed)

    def close(self) -> None:
        self._reader.close()


def _record(msg) -> tuple:
    return (msg.key(), msg.value(), tuple(msg.headers() or ()), msg.timestamp())


def read_first(
    bootstrap: str, topic: str, partitions: int, count: int, committed: bool = False
) -> dict[int, list[tuple]]:
    """(key, value, headers, (timestamp type, timestamp)) of the first `count` readable
    records of each partition."""
    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mirrorline-bench-sample",
            "enable.auto.commit": False,
            "isolation.level": _isolation(committed),
        }
    )
    found: dict[int, list[tuple]] = {p: [] for p in range(partitions)}
    try:
        reader.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 30
        while any(len(r) < count for r in found.values()) and time.monotonic() < deadline:
            for msg in reader.consume(num_messages=500, timeout=0.5):
                if msg.error() is not None:
                    raise BenchmarkError(f"reading {topic}: {msg.error().str()}")
                if len(found[msg.partition()]) < count:
                    found[msg.partition()].append(_record(msg))
    finally:
        reader.close()
    return found


def compare_samples(
    source: dict[int, list[tuple]], target: dict[int, list[tuple]], where: str
) -> None:
    """Raise unless the target's first records equal the source's (key, value, headers,
    timestamp), partition by partition."""
    for partition, records in source.items():
        copied = target.get(partition, [])
        if copied != records:
            for i, (a, b) in enumerate(zip(records, copied, strict=False)):
                if a != b:
                    raise BenchmarkError(
                        f"{where}: record {i} of partition {partition} differs on the target "
                        f"(key {a[0]!r} / {b[0]!r}, timestamp {a[3]} / {b[3]}, headers "
                        f"{a[2]} / {b[2]}, values equal: {a[1] == b[1]})"
                    )
            raise BenchmarkError(
                f"{where}: partition {partition} has {len(copied)} of the first "
                f"{len(records)} records on the target"
            )
