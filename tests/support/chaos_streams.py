"""The two ends of a chaos run's data: a numbered stream into a source topic, a watcher on its copy.

`NumberedStream` produces records whose value starts with a sequence number
(`b"<seq>:"`, as `replica_audit` reads them) at a steady rate for as long as
the run lasts (or, held back by `released`, as the crash harness releases
it), idempotently and with `acks=all`, and with a delivery timeout
long enough to ride out broker restarts and outages; `acknowledged` says how
many records the source holds. An idempotent producer should write each record
once, yet librdkafka's can write one twice when a partition's leader moves
(confluentinc/librdkafka#4953), so a census counts what the source holds too,
and a copy may hold a record as often as its source does. It batches for
`LINGER_MS`: at 5 ms two streams of 500 records/s into 3-node clusters kept
the six nodes and the producing process busy for 1.95 of this machine's 2
cores (0.80 at 50 ms), which left the replicators under test starved. The
records' ages include that wait (their timestamps are taken when produced).

`ReplicaWatcher` reads a topic (a remote topic, or its source) from its
beginning in a thread of its own, all the time, so that it sees each record
soon after it is written even while the run is busy restarting brokers. Per
sequence number it counts the copies (the census: lost and duplicated
records), and for the first copy of each record its age: the watcher's clock
minus the record's timestamp, which is the source producer's creation time
that replication keeps. Ages are kept per window (`window_s`) so that a long
run reports a p99 per window.
"""

from __future__ import annotations

import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from support.kafka_io import unique_name
from support.replica_audit import sequence_of

Record = tuple[int, bytes, bytes, list | None]  # partition, key, value, headers
LINGER_MS = 50


def padded_records(partitions: int, value_bytes: int) -> Callable[[int], Record]:
    """Record `seq` of a stream over `partitions`: its value padded to `value_bytes`."""

    def record(seq: int) -> Record:
        head = b"%d:" % seq
        value = head + b"x" * max(0, value_bytes - len(head))
        headers = [("trace", b"%d" % seq)] if seq % 4 == 0 else []
        return seq % partitions, b"k%d" % (seq % 1000), value, headers

    return record


class NumberedStream(threading.Thread):
    """Records `record(0)`, `record(1)`, ... into `topic` at `rate` per second, until
    `stop()` or `limit` records, and never past `released()` (all of them by default)."""

    def __init__(
        self,
        config: dict[str, str],
        topic: str,
        rate: int,
        record: Callable[[int], Record],
        limit: int | None = None,
    ) -> None:
        super().__init__(name=f"stream-{topic}", daemon=True)
        self._config = {
            **config,
            "enable.idempotence": True,  # and so acks=all
            "linger.ms": LINGER_MS,
            # Through a rolling restart or an outage of the source: retry, never drop.
            "delivery.timeout.ms": 600_000,
        }
        self.topic = topic
        self._rate = rate
        self._record = record
        self.limit = limit
        self._halt = threading.Event()
        self.sent = 0
        self.acknowledged = 0
        self.failures: list[str] = []

    def released(self) -> float:
        """How many records may be sent by now (a subclass holds the stream back)."""
        return float("inf") if self.limit is None else self.limit

    def run(self) -> None:
        producer = Producer(self._config)

        def delivered(error, _msg) -> None:
            if error is None:
                self.acknowledged += 1
            else:
                self.failures.append(error.str())

        allowance, last = 0.0, time.monotonic()
        try:
            while not self._halt.is_set() and (self.limit is None or self.sent < self.limit):
                now = time.monotonic()
                # Time spent held back earns no allowance: no burst after a release.
                allowance = min(allowance + (now - last) * self._rate, self.released() - self.sent)
                last = now
                while allowance >= 1:
                    partition, key, value, headers = self._record(self.sent)
                    try:
                        producer.produce(
                            self.topic,
                            value,
                            key,
                            partition,
                            on_delivery=delivered,
                            headers=headers,
                        )
                    except BufferError:
                        producer.poll(0.05)
                        continue  # the same record again
                    self.sent += 1
                    allowance -= 1
                producer.poll(0.01)  # serves delivery reports; paces the loop
            remaining = producer.flush(600)
            if remaining:
                self.failures.append(f"{remaining} records unacknowledged after 600 s")
        except Exception as exc:  # noqa: BLE001 - reported by check()
            self.failures.append(repr(exc))

    @property
    def finished(self) -> bool:
        """Every record of a limited stream sent and acknowledged."""
        return not self.is_alive() and self.acknowledged == self.limit

    def check(self) -> None:
        if self.failures:
            raise AssertionError(f"producing to {self.topic} failed: {self.failures[:3]}")

    def stop(self) -> None:
        """Stop producing and wait until every record sent is acknowledged (or failed)."""
        self._halt.set()
        if self.ident is not None:
            self.join(660)


@dataclass(frozen=True)
class Census:
    """What a copy holds of a stream of `produced` numbered records."""

    produced: int
    copies: int  # records read from the copy, duplicates included
    lost: int  # sequence numbers below `produced` never read
    duplicated: int  # copies beyond as many as the source holds (one when not counted)
    source_duplicated: int  # records beyond the first that the source itself holds


class ReplicaWatcher(threading.Thread):
    """Reads a remote topic from its beginning until `stop()`; counts copies and ages."""

    def __init__(
        self,
        config: dict[str, str],
        topic: str,
        partitions: int,
        isolation_level: str,
        window_s: float = 60.0,
    ) -> None:
        super().__init__(name=f"watch-{topic}", daemon=True)
        self.topic = topic
        self._partitions = partitions
        self._window_s = window_s
        self._consumer_config = {
            **config,
            "group.id": unique_name("chaos-watch"),
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
        }
        self._halt = threading.Event()
        self._copies = bytearray()  # by sequence number: copies read, at most 255
        self.copies = 0
        self.distinct = 0
        self.max_age_ms = 0
        self.began = time.time()
        self.ages: dict[int, array] = {}  # window index -> ages (ms) of first copies
        self.errors: list[str] = []

    def run(self) -> None:
        consumer = Consumer(self._consumer_config)
        try:
            while not self._halt.is_set() and not self._assign(consumer):
                self._halt.wait(0.5)
            while not self._halt.is_set():
                for msg in consumer.consume(5_000, timeout=0.2):
                    self._take(msg)
        except Exception as exc:  # noqa: BLE001 - reported by check()
            self.errors.append(repr(exc))
        finally:
            consumer.close()

    def _assign(self, consumer: Consumer) -> bool:
        meta = consumer.list_topics(self.topic, timeout=10).topics.get(self.topic)
        if meta is None or meta.error is not None or len(meta.partitions) < self._partitions:
            return False
        consumer.assign(
            [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self._partitions)]
        )
        return True

    def _take(self, msg) -> None:
        error = msg.error()
        if error is not None:
            # Brokers restarting or away, metadata still spreading after the topic was
            # created: transient to a consumer, which retries. The census tells losses.
            if error.fatal():
                self.errors.append(error.str())
            return
        seq = sequence_of(msg.value())
        if seq < 0:
            return
        now_ms = time.time() * 1000
        if seq >= len(self._copies):
            self._copies.extend(bytes(seq + 1 - len(self._copies) + 100_000))
        self.copies += 1
        if self._copies[seq] < 255:
            self._copies[seq] += 1
        if self._copies[seq] > 1:
            return
        self.distinct += 1
        age = max(0, int(now_ms - msg.timestamp()[1]))
        self.max_age_ms = max(self.max_age_ms, age)
        window = int((now_ms / 1000 - self.began) // self._window_s)
        self.ages.setdefault(window, array("l")).append(age)

    def check(self) -> None:
        if self.errors:
            raise AssertionError(f"reading {self.topic} failed: {self.errors[:3]}")

    def census(self, produced: int, source: ReplicaWatcher | None = None) -> Census:
        """What the copy holds of the first `produced` records; with `source` (a watcher
        of the source topic), a record the source holds twice may be copied twice."""
        held = self._copies[:produced]
        lost = produced - (len(held) - held.count(0))
        in_source = source._copies if source is not None else bytearray()
        duplicated = 0
        for seq, copies in enumerate(self._copies):
            if copies > 1:
                times = in_source[seq] if seq < len(in_source) else 0
                duplicated += max(0, copies - max(1, times))
        source_duplicated = source.copies - source.distinct if source is not None else 0
        return Census(produced, self.copies, lost, duplicated, source_duplicated)

    def age_p99_per_window(self) -> list[tuple[int, int, int]]:
        """(window index, records, p99 age in ms) of each window that saw a first copy."""
        rows = []
        for window in sorted(self.ages):
            ages = sorted(self.ages[window])
            rows.append((window, len(ages), ages[min(len(ages) - 1, int(len(ages) * 0.99))]))
        return rows

    def stop(self) -> None:
        self._halt.set()
        if self.ident is not None:
            self.join(30)
