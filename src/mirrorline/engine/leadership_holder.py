"""Who leads a flow, as the leader announces itself in the flow's leadership group.

A driver that gains a flow (see `leadership`) commits, as the member of the
flow's leadership group that holds partition 0, offset 0 of that partition with
an announcement as the commit's metadata: its driver id and when it took the
flow. The topic never holds a record, so the offset itself means nothing. A
standby reads the group's committed offset every few seconds, only to say in its
status which driver leads; nothing is decided by the answer.

The reader is a `group_offsets.OutsideMember` of the group, on a thread of its
own so that the group thread is never kept from its rebalance callbacks. The
group coordinator is not asked who holds partition 0 (DescribeGroups): that goes
through librdkafka's admin client, which aborted a driver asking while the
target cluster had just started (see `OutsideMember`).

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

from confluent_kafka import TopicPartition

from mirrorline.group_offsets import OutsideMember
from mirrorline.kafka import KafkaOperationError

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

    def __init__(self, consumer_settings: Mapping[str, object], group: str) -> None:
        self._settings = dict(consumer_settings)
        self._group = group
        self._member: OutsideMember | None = None
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
        except KafkaOperationError:  # only the status's wording depends on it
            return None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._member is not None:
            self._member.close()

    def _read(self) -> Announcement | None:
        if self._member is None:
            self._member = OutsideMember(self._settings, self._group, _READ_TIMEOUT_S)
        committed = self._member.committed([(LEADERSHIP_TOPIC, 0)]).get((LEADERSHIP_TOPIC, 0))
        return None if committed is None else Announcement.of(committed.metadata)
