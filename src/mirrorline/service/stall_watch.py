"""Which partitions a reading consumer has stopped reading although they hold records.

The service reads its target clusters with one librdkafka consumer per cluster,
on partitions it assigns itself. librdkafka has been seen to stop fetching an
assigned partition for good after the partition's broker restarted or its
leader moved, and only a new consumer reads it again; a service that went on
serving a heartbeat from before the outage would report a healthy flow as
silent. So the collector asks the cluster, every few seconds, where each
partition's readable records end (its last stable offset), and compares that
with where its consumer stands.

A partition *stalls* when its consumer stands before that end and has not
moved for `after_s` seconds. A slow reader moves; an open transaction holds
the stable end back, not the position; a partition read to its end is never
stalled. What to do about a stall (the collector starts a new consumer at the
same positions) is not this module's business.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class _Standing:
    position: int
    since: float  # when the partition was first seen at `position`, behind its end


class StallWatch(Generic[K]):
    """Tells, from successive (position, end) readings, which partitions stall."""

    def __init__(self, after_s: float) -> None:
        self._after_s = after_s
        self._standing: dict[K, _Standing] = {}

    def stalled(self, now: float, progress: Mapping[K, tuple[int, int]]) -> list[K]:
        """The partitions of `progress` (key -> (position, end)) that stand before
        their end, at the position they had `after_s` seconds ago or earlier."""
        found = []
        for key, (position, end) in progress.items():
            if position >= end:
                self._standing.pop(key, None)  # read to the end: nothing to wait for
                continue
            standing = self._standing.get(key)
            if standing is None or standing.position != position:
                self._standing[key] = _Standing(position, now)
            elif now - standing.since >= self._after_s:
                found.append(key)
        return found

    def reset(self) -> None:
        """Forget every reading: a new consumer, or a cluster that did not answer."""
        self._standing.clear()
