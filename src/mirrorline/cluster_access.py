"""An operator command's view of one cluster: every request bounded by a short timeout.

The operator's commands (`offsets`, `failover`, `failback`) talk to clusters
one of which may be gone (an unplanned failover is run because it is). Every
request here waits `timeout` seconds at most and raises `Unreachable`, naming
the cluster (its bootstrap servers hidden when a secret provider gives them),
instead of a librdkafka exception; the caller decides whether that cluster's
answer was needed or only welcome. librdkafka's own log lines are silenced:
they would repeat one connection failure many times a second. What they would
have said (authentication failed, certificate not trusted, connection refused)
is kept as `last_error`: a failed request only says "transport failure".
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mirrorline.admin_client import AdminClient, destroy
from mirrorline.client_errors import ClientErrors, error_text
from mirrorline.config.model import ClientSettings
from mirrorline.config.redact import REDACTED
from mirrorline.group_offsets import (
    GroupOnCluster,
    OffsetAndMetadata,
    commit_offsets,
    describe_group,
)
from mirrorline.kafka import (
    ClientConfig,
    ClusterClients,
    KafkaOperationError,
    partition_offsets,
    reading_consumer,
)

Partition = tuple[str, int]
# How far back from a partition's end the newest record is looked for at first;
# transaction markers (exactly-once targets) take offsets without holding records.
_NEWEST_WINDOW = 16


class Unreachable(KafkaOperationError):
    """The cluster did not answer within the timeout, or refused the request."""


class ClusterAccess:
    """Admin and consumer requests to one cluster, each bounded by `timeout` seconds."""

    def __init__(
        self,
        alias: str,
        *,
        admin: Mapping[str, Any],
        consumer: Mapping[str, Any],
        producer: Mapping[str, Any] | None = None,
        timeout: float,
    ) -> None:
        self.alias = alias
        self.timeout = timeout
        quiet = {"log_level": 0}
        self._admin_settings = {**admin, **quiet}
        self.consumer_settings: dict[str, Any] = {**consumer, **quiet}
        self._producer_settings = {**(producer or consumer), **quiet}
        self._admin: AdminClient | None = None
        self._errors = ClientErrors()
        # Bootstrap servers given through a secret provider stay hidden (`shown`).
        self.servers = (
            admin.setting("bootstrap.servers").shown
            if isinstance(admin, ClientSettings) and "bootstrap.servers" in admin
            else str(admin.get("bootstrap.servers", "-"))
        )
        self._clients: ClusterClients | None = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            settings: ClientConfig = {**self._admin_settings, "error_cb": self._errors}
            self._admin = AdminClient(settings)
        return self._admin

    def clients(self) -> ClusterClients:
        """Mirrorline's shared clients of this cluster, for its stores (progress, control)."""
        if self._clients is None:
            self._clients = ClusterClients(
                self.alias,
                admin=self._admin_settings,
                producer=self._producer_settings,
                consumer=self.consumer_settings,
            )
        return self._clients

    @property
    def last_error(self) -> KafkaError | None:
        """librdkafka's latest report about this cluster's connections, if any.

        Reports are delivered when a request fails (`Unreachable`); one that
        names a cause (authentication, TLS, refused connection) is kept over
        "all brokers are down", which only repeats the request's failure.
        """
        return self._errors.last

    def close(self) -> None:
        if self._clients is not None:
            self._clients.close()
        destroy(self._admin)
        self._admin = None

    # -- topics and offsets ------------------------------------------------------------

    def topics(self) -> dict[str, int]:
        """Every topic and its partition count (topics in error left out)."""
        try:
            metadata = self.admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise self._unreachable(exc) from None
        return {
            name: len(meta.partitions)
            for name, meta in metadata.topics.items()
            if meta.error is None
        }

    def end_offsets(self, partitions: Iterable[Partition]) -> dict[Partition, int]:
        """Each partition's log end offset (high watermark)."""
        return self._offsets(partitions, "latest")

    def start_offsets(self, partitions: Iterable[Partition]) -> dict[Partition, int]:
        """Each partition's log start offset."""
        return self._offsets(partitions, "earliest")

    def newest_timestamps(
        self, ends: Mapping[Partition, int], starts: Mapping[Partition, int]
    ) -> dict[Partition, int | None]:
        """The timestamp of each partition's newest record; None for an empty partition.

        Reads back from the end: a few offsets first, further when the last
        ones hold no record (transaction markers).
        """
        newest: dict[Partition, int | None] = {}
        consumer = reading_consumer(
            self.consumer_settings,
            "mirrorline-failover-reader",
            committed=True,
            **{"enable.partition.eof": False},
        )
        try:
            for tp, end in sorted(ends.items()):
                newest[tp] = self._newest(consumer, tp, starts.get(tp, 0), end)
        except KafkaException as exc:
            raise self._unreachable(exc) from None
        finally:
            consumer.close()
        return newest

    # -- consumer groups ---------------------------------------------------------------

    def groups(self) -> list[str]:
        """The consumer groups the cluster knows."""
        try:
            listed = self.admin.list_consumer_groups(request_timeout=self.timeout).result(
                self.timeout
            )
        except KafkaException as exc:
            raise self._unreachable(exc) from None
        return sorted(g.group_id for g in listed.valid)

    def describe(self, group: str, partitions: Iterable[Partition]) -> GroupOnCluster:
        """The group's state, members and committed offsets of `partitions`."""
        try:
            return describe_group(
                self.admin,
                group,
                consumer_settings=self.consumer_settings,
                partitions=partitions,
                timeout=self.timeout,
            )
        except KafkaOperationError as exc:
            raise Unreachable(f"{self.alias}: {exc}") from None

    def commit(self, group: str, offsets: Mapping[Partition, OffsetAndMetadata]) -> None:
        """Commit offsets to a group with no active members (`group_offsets.commit_offsets`)."""
        commit_offsets(self.consumer_settings, group, offsets, self.timeout)

    # -- helpers -----------------------------------------------------------------------

    def _offsets(self, partitions: Iterable[Partition], which: str) -> dict[Partition, int]:
        try:
            return partition_offsets(
                self.admin, sorted(set(partitions)), which, timeout=self.timeout, what=self.alias
            )
        except KafkaException as exc:
            raise self._unreachable(exc) from None
        except KafkaOperationError as exc:
            raise Unreachable(str(exc)) from None

    def _newest(self, consumer: Consumer, tp: Partition, start: int, end: int) -> int | None:
        window = _NEWEST_WINDOW
        upper = end
        while upper > start:
            lower = max(start, upper - window)
            found = _last_timestamp(consumer, tp, lower, upper, self.timeout)
            if found is not None:
                return found
            upper, window = lower, window * 4
        return None

    def _unreachable(self, exc: KafkaException) -> Unreachable:
        if self._admin is not None:
            self._admin.poll(0)  # deliver the reports queued while the request waited
        reason = error_text(exc)
        # The report names broker addresses: left out when the servers are a secret.
        last = self._errors.text()
        if last and "timed out" in reason.lower() and self.servers != REDACTED:
            reason = f"{reason} ({last})"
        return Unreachable(f"cluster {self.alias} ({self.servers}) does not answer: {reason}")


def _last_timestamp(
    consumer: Consumer, tp: Partition, lower: int, upper: int, timeout: float
) -> int | None:
    """The timestamp of the last record between offsets `lower` and `upper` (exclusive)."""
    consumer.assign([TopicPartition(tp[0], tp[1], lower)])
    deadline = time.monotonic() + timeout
    last: int | None = None
    position = lower
    try:
        while position < upper:
            if time.monotonic() > deadline:
                raise KafkaException(
                    KafkaError(KafkaError._TIMED_OUT, f"reading {tp[0]}[{tp[1]}] timed out")
                )
            for msg in consumer.consume(500, timeout=0.2):
                error = msg.error()
                if error is not None:
                    raise KafkaException(error)
                offset = msg.offset() or 0
                if offset >= upper:
                    return last
                last = msg.timestamp()[1]
                position = offset + 1
            # Markers and compacted offsets hold no record: the position moves past them.
            position = max(position, consumer.position([TopicPartition(tp[0], tp[1])])[0].offset)
    finally:
        consumer.unassign()
    return last
