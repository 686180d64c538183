"""Who leads a flow, as its leadership group's coordinator describes the group.

The leader is the member assigned partition 0 of the leadership topic (see
`leadership`). A standby driver asks, every few seconds, only to say in its
status which driver leads; nothing is decided by the answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException

from mirrorline.admin_client import AdminClient

LEADERSHIP_TOPIC = "mirrorline.leadership.internal"
# How often a standby driver asks the coordinator who leads (for its status).
HOLDER_REFRESH_S = 3.0


@dataclass(frozen=True)
class Member:
    """A member of a leadership group, as the coordinator describes it."""

    client_id: str
    host: str
    partitions: tuple[tuple[str, int], ...]


def holder(members: Iterable[Member], topic: str = LEADERSHIP_TOPIC) -> Member | None:
    """The member assigned partition 0 of the leadership topic: the flow's leader."""
    for member in members:
        if (topic, 0) in member.partitions:
            return member
    return None


@dataclass(frozen=True)
class _Found:
    holder: Member | None


class HolderLookup:
    """Asks the coordinator who holds the flow, without ever blocking the group thread."""

    def __init__(self, admin: AdminClient, group: str) -> None:
        self._admin = admin
        self._group = group
        self._future: Future[Any] | None = None
        self._next_at = 0.0

    def _metadata_answers(self) -> bool:
        try:
            self._admin.list_topics(LEADERSHIP_TOPIC, timeout=2)
            return True
        except KafkaException:
            return False

    def poll(self, cluster_answers: bool) -> _Found | None:
        """A fresh answer when one arrived since the last call, else None.

        A new question is asked only while the cluster answers (no recent client
        error, and a metadata request succeeds first): a group description
        requested while the broker goes away once aborted the whole process
        inside librdkafka's admin client, so it is not risked during an outage.
        """
        now = time.monotonic()
        if self._future is None:
            if now >= self._next_at and cluster_answers and self._metadata_answers():
                self._future = self._admin.describe_consumer_groups(
                    [self._group], request_timeout=10
                )[self._group]
            return None
        if not self._future.done():
            return None
        future, self._future = self._future, None
        self._next_at = now + HOLDER_REFRESH_S
        try:
            description = future.result()
        except Exception:  # noqa: BLE001 - only the status's wording depends on it
            return None
        return _Found(
            holder(
                Member(
                    m.client_id,
                    m.host,
                    tuple(
                        (tp.topic, tp.partition)
                        for tp in (m.assignment.topic_partitions if m.assignment else ())
                    ),
                )
                for m in description.members
            )
        )
