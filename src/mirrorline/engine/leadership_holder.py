"""Who leads a flow, as the leader announces itself in the flow's leadership group.

A driver that gains a flow (see `leadership`) commits, as the member of the
flow's leadership group that holds partition 0, offset 0 of that partition with
an announcement as the commit's metadata: its driver id and when it took the
flow. The topic never holds a record, so the offset itself means nothing. A
standby reads the group's committed offset every few seconds, only to say in its
status which driver leads; nothing is decided by the answer.

The reader is a consumer that never joins the group (an OffsetFetch, as in
`group_offsets.committed_offsets`), on a thread of its own so that the group
thread is never kept from its rebalance callbacks. The group coordinator is not
asked who holds partition 0: librdkafka's admin client (2.16) aborts the whole
process when a coordinator request cannot be sent (confluentinc/librdkafka#4605),
and a driver did abort so, asking while the target cluster had just started.

An announcement outlives its leader: a driver that dies is named until another
one takes the flow, after the group's session timeout, and announces itself.
That is as long as the coordinator would go on naming it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition

LEADERSHIP_TOPIC = "mirrorline.leadership.internal"
# How often a standby driver reads the announcement (for its status).
HOLDER_REFRESH_S = 3.0
_READ_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Announcement:
    """A leader's announcement: which driver took the flow, and when."""

    driver: str
    since_ms: int

    def offset(self) -> TopicPartition:
        """The commit that carries this announcement."""
        metadata = json.dumps({"driver": self.driver, "since_ms": self.since_ms})
        return TopicPartition(LEADERSHIP_TOPIC, 0, 0, metadata)

    @classmethod
    def of(cls, metadata: str) -> Announcement | None:
        """The announcement a commit's metadata holds; None for anything else."""
        try:
            data = json.loads(metadata)
            return cls(str(data["driver"]), int(data["since_ms"]))
        except (ValueError, TypeError, KeyError):
            return None

    def since(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.since_ms / 1000))


def announcement(driver: str) -> Announcement:
    """This driver's announcement, taking the flow now."""
    return Announcement(driver, int(time.time() * 1000))


@dataclass(frozen=True)
class _Found:
    holder: Announcement | None


class HolderLookup:
    """Reads the leader's announcement, without ever blocking the group thread."""

    def __init__(self, consumer_settings: Mapping[str, object]) -> None:
        """`consumer_settings` are the leadership group's (its `group.id` included)."""
        self._settings = dict(consumer_settings)
        self._consumer: Consumer | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="leadership holder")
        self._future: Future[Announcement | None] | None = None
        self._next_at = 0.0

    def poll(self) -> _Found | None:
        """A fresh answer when one arrived since the last call, else None."""
        now = time.monotonic()
        if self._future is None:
            if now >= self._next_at:
                self._future = self._pool.submit(self._read)
            return None
        if not self._future.done():
            return None
        future, self._future = self._future, None
        self._next_at = now + HOLDER_REFRESH_S
        try:
            return _Found(future.result())
        except KafkaException:  # only the status's wording depends on it
            return None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._consumer is not None:
            self._consumer.close()

    def _read(self) -> Announcement | None:
        if self._consumer is None:
            self._consumer = Consumer(self._settings)
        [committed] = self._consumer.committed(
            [TopicPartition(LEADERSHIP_TOPIC, 0)], timeout=_READ_TIMEOUT_S
        )
        if committed.error is not None or committed.offset < 0:
            return None
        return Announcement.of(committed.metadata or "")
