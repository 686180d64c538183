"""Small helpers around confluent-kafka clients that every part of Mirrorline uses."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import NewTopic, OffsetSpec

from mirrorline.admin_client import AdminClient, destroy

# librdkafka settings as confluent-kafka takes them: names to strings, numbers,
# flags and, for callbacks such as `error_cb`, functions.
ClientConfig = dict[str, Any]


class KafkaOperationError(RuntimeError):
    """A Kafka request failed; the message names the cluster, the object and the error."""


class ClusterClients:
    """How one part of Mirrorline reaches one cluster: a shared admin client and the
    settings of the producers and consumers each user creates for itself.

    The admin client is created on first use and shared by every user (librdkafka
    clients are thread-safe; each one holds threads and connections of its own, so
    one per cluster rather than one per user). Producers and consumers are not
    shared: each has a purpose of its own (a transactional id, a group, an
    isolation level). `close()` releases the admin client, once, when every user
    is done.
    """

    def __init__(
        self,
        alias: str,
        *,
        admin: Mapping[str, Any],
        producer: Mapping[str, Any],
        consumer: Mapping[str, Any],
    ) -> None:
        self.alias = alias
        self.admin_settings: ClientConfig = dict(admin)
        self.producer_settings: ClientConfig = dict(producer)
        self.consumer_settings: ClientConfig = dict(consumer)
        self._lock = threading.Lock()
        self._admin: AdminClient | None = None
        self._closed = False

    @classmethod
    def of(cls, alias: str, settings: Mapping[str, Any]) -> ClusterClients:
        """The same settings for every client (a plain cluster: tests, tools)."""
        return cls(alias, admin=settings, producer=settings, consumer=settings)

    @property
    def admin(self) -> AdminClient:
        with self._lock:
            if self._closed:
                raise KafkaOperationError(f"the clients of cluster {self.alias} are closed")
            if self._admin is None:
                self._admin = AdminClient(dict(self.admin_settings))
            return self._admin

    def close(self) -> None:
        """Destroy the admin client; later uses raise `KafkaOperationError`."""
        with self._lock:
            destroy(self._admin)
            self._admin = None
            self._closed = True

    def __repr__(self) -> str:
        return f"ClusterClients({self.alias!r})"


# What librdkafka answers for a topic (or partition) the cluster does not have.
_MISSING = {
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
}


def error_code(exc: KafkaException) -> int | None:
    """The librdkafka error code a `KafkaException` carries, if any."""
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


_T = TypeVar("_T")
_RETRY_PAUSE_S = 0.2


def asked_until_answered(what: str, ask: Callable[[float], _T], timeout: float) -> _T:
    """`ask(seconds_left)` again while it fails with a retriable error or a group
    coordinator that is still loading (a cluster that just started, a coordinator
    that moves), until `timeout`; any other error, or one at the deadline, is a
    `KafkaOperationError` that starts with `what`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return ask(max(1.0, deadline - time.monotonic()))
        except KafkaException as exc:
            error = exc.args[0]
            loading = error.code() == KafkaError.COORDINATOR_LOAD_IN_PROGRESS
            if not (loading or error.retriable()) or time.monotonic() > deadline:
                raise KafkaOperationError(f"{what}: {error.str()}") from None
        time.sleep(_RETRY_PAUSE_S)


def enum_name(value: object) -> str:
    """The name of an admin API enumeration value (`AclOperation.READ` -> `READ`)."""
    return str(getattr(value, "name", value))


def ensure_topic(
    admin: AdminClient,
    name: str,
    *,
    partitions: int = 1,
    replication_factor: int = -1,
    config: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> bool:
    """Create `name` unless it exists; True when this call created it.

    `replication_factor = -1` lets the broker apply its `default.replication.factor`.
    """
    futures = admin.create_topics(
        [NewTopic(name, partitions, replication_factor, config=dict(config or {}))],
        request_timeout=timeout,
    )
    try:
        futures[name].result(timeout)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise KafkaOperationError(f"cannot create topic {name}: {exc.args[0].str()}") from None
    except TimeoutError:  # the future's own timeout, when the cluster does not answer at all
        raise KafkaOperationError(
            f"cannot create topic {name}: no answer within {timeout:.0f}s"
        ) from None
    wait_for_leaders(admin, name, partitions, timeout)
    return True


def wait_for_leaders(admin: AdminClient, topic: str, partitions: int, timeout: float) -> None:
    """Wait until metadata shows `partitions` partitions of `topic`, each with a leader."""
    deadline = time.monotonic() + timeout
    while True:
        meta = admin.list_topics(topic, timeout=timeout).topics.get(topic)
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) >= partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise KafkaOperationError(f"topic {topic} has no leader for every partition yet")
        time.sleep(0.1)


# librdkafka looks a partition's leader up once per offsets request: with metadata
# older than the partition's leader (a topic just created, a leader being elected
# after a broker restart) the request fails with "No leaders found" (_NOENT) or a
# retriable error, and a new request, on refreshed metadata, succeeds. So failed
# partitions are asked again for up to this long (or the call's timeout if shorter).
LEADER_RETRY_S = 5.0
_LEADER_RETRY_BACKOFF_S = 0.2


def partition_offsets(
    admin: AdminClient,
    partitions: Iterable[tuple[str, int]],
    which: str,
    *,
    timeout: float,
    what: str,
    stable: bool = False,
) -> dict[tuple[str, int], int]:
    """Each partition's `earliest` (log start) or `latest` (log end) offset, in one request
    per broker; `KafkaOperationError` names `what` (the cluster) and the partition.

    With `stable`, `latest` is the last stable offset: the end of what a
    read-committed consumer can read, before any open transaction. Partitions
    whose leader is not known yet are asked again (`LEADER_RETRY_S`)."""
    spec = OffsetSpec.earliest() if which == "earliest" else OffsetSpec.latest()
    pending = [TopicPartition(t, p) for t, p in partitions]
    isolation = IsolationLevel.READ_COMMITTED if stable else IsolationLevel.READ_UNCOMMITTED
    retry_until = time.monotonic() + min(timeout, LEADER_RETRY_S)
    offsets: dict[tuple[str, int], int] = {}
    while pending:
        futures = admin.list_offsets(
            {tp: spec for tp in pending}, isolation_level=isolation, request_timeout=timeout
        )
        failed: list[tuple[TopicPartition, KafkaError]] = []
        for tp, future in futures.items():
            try:
                offsets[(tp.topic, tp.partition)] = future.result(timeout).offset
            except KafkaException as exc:
                failed.append((tp, exc.args[0]))
        lasting = [(tp, error) for tp, error in failed if not _leader_unknown(error)]
        if lasting or (failed and time.monotonic() >= retry_until):
            tp, error = (lasting or failed)[0]
            raise KafkaOperationError(
                f"{what}: cannot read the {which} offset of {tp.topic}[{tp.partition}]: "
                f"{error.str()}"
            )
        pending = [tp for tp, _ in failed]
        if pending:
            time.sleep(_LEADER_RETRY_BACKOFF_S)
    return offsets


# What a partition's offsets request fails with while its leadership moves.
_LEADER_MOVING = frozenset(
    (
        KafkaError._NOENT,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
    )
)


def _leader_unknown(error: KafkaError) -> bool:
    """Whether asking again may succeed: the leader was not known, or the error says so."""
    return error.code() in _LEADER_MOVING or error.retriable()


def reading_consumer(
    consumer_settings: Mapping[str, object],
    group: str,
    *,
    committed: bool,
    **overrides: object,
) -> Consumer:
    """A consumer that reads what a cluster already holds, by explicit assignment.

    The group is never joined and nothing is committed. Brokers may hold its
    fetches only briefly: a partition just assigned would otherwise be first
    fetched after the broker's full wait (500 ms by default) though its records
    are there, which a reader of many partitions pays once per partition.
    """
    return Consumer(
        {
            **consumer_settings,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
            "fetch.wait.max.ms": 10,
            **overrides,
        }
    )


def read_to_end(
    consumer_settings: Mapping[str, object],
    topic: str,
    *,
    partition: int = 0,
    start: int = 0,
    read_committed: bool = False,
    missing_ok: bool = False,
    timeout: float = 60.0,
) -> Iterator[Message]:
    """The records of one partition from `start` to its end as of the call, in order.

    For Mirrorline's internal topics, which are read whole at start. Read
    committed, the end is the last stable offset: a transaction a killed writer
    left open ends the read where it starts instead of stalling it. A topic
    that does not exist raises `KafkaOperationError`, or reads as empty with
    `missing_ok` (a topic nobody has written yet); so does a read that
    outlasts `timeout`.
    """
    consumer = reading_consumer(
        consumer_settings, f"mirrorline-reader-{topic}", committed=read_committed
    )
    try:
        tp = TopicPartition(topic, partition)
        try:
            _, end = consumer.get_watermark_offsets(tp, timeout=timeout, cached=False)
        except KafkaException as exc:
            if missing_ok and exc.args[0].code() in _MISSING:
                return
            raise KafkaOperationError(f"cannot read {topic}: {exc.args[0].str()}") from None
        consumer.assign([TopicPartition(topic, partition, start)])
        deadline = time.monotonic() + timeout
        position = start
        while position < end:
            if time.monotonic() > deadline:
                raise KafkaOperationError(
                    f"reading {topic} timed out at offset {position} of {end}"
                )
            # A short wait: a small topic is read in one fetch, not in one timeout.
            for msg in consumer.consume(1000, timeout=0.05):
                error = msg.error()
                if error is not None:
                    raise KafkaOperationError(f"reading {topic}: {error.str()}")
                position = (msg.offset() or 0) + 1
                yield msg
            # Compaction and transaction markers leave offsets without records.
            position = max(position, consumer.position([tp])[0].offset)
    finally:
        consumer.close()
