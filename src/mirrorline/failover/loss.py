"""The loss window of an unplanned failover: what the target may be missing.

When the source is lost, the records it held but had not replicated are
lost with it. Two measures, per topic:

- **time**: the age of the newest record replicated to the target. The flow
  keeps each record's original timestamp, so the newest timestamp among a
  remote topic's partitions is the moment up to which the target has the
  source's data; anything the source received after it may be missing. A
  partition that was idle for an hour looks an hour behind: the window is an
  upper bound, and the per-partition numbers show which partitions make it.
- **records**, only if the source still answers: its log end offsets minus
  the flow's saved progress (`lag.lag_of`), exactly the records not replicated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Partition = tuple[str, int]


@dataclass(frozen=True)
class PartitionLoss:
    partition: int
    newest_ms: int | None  # newest replicated record's timestamp; None: nothing replicated
    not_replicated: int | None  # None: the source did not answer


@dataclass(frozen=True)
class TopicLoss:
    topic: str  # on the source
    remote_topic: str
    newest_ms: int | None
    age_s: float | None  # now minus `newest_ms`
    not_replicated: int | None
    partitions: tuple[PartitionLoss, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "remote_topic": self.remote_topic,
            "newest_replicated_ms": self.newest_ms,
            "window_s": self.age_s,
            "records_not_replicated": self.not_replicated,
            "partitions": [
                {
                    "partition": p.partition,
                    "newest_replicated_ms": p.newest_ms,
                    "records_not_replicated": p.not_replicated,
                }
                for p in self.partitions
            ],
        }


def loss_window(
    topics: Mapping[str, str],
    partitions: Mapping[str, int],
    newest: Mapping[Partition, int | None],
    now_ms: int,
    not_replicated: Mapping[Partition, int] | None = None,
) -> list[TopicLoss]:
    """Per source topic: the newest replicated timestamp, its age and, if known, the records
    the source holds that the target does not.

    `topics` maps source topics to remote topics; `partitions` gives each
    source topic's partition count; `newest` is keyed by (remote topic,
    partition); `not_replicated` by (source topic, partition), None when the
    source did not answer.
    """
    found: list[TopicLoss] = []
    for topic, remote in sorted(topics.items()):
        rows = []
        for p in range(partitions.get(topic, 0)):
            missing = None if not_replicated is None else not_replicated.get((topic, p), 0)
            rows.append(PartitionLoss(p, newest.get((remote, p)), missing))
        stamps = [r.newest_ms for r in rows if r.newest_ms is not None]
        latest = max(stamps) if stamps else None
        total = None if not_replicated is None else sum(r.not_replicated or 0 for r in rows)
        age = None if latest is None else round(max(0, now_ms - latest) / 1000, 3)
        found.append(TopicLoss(topic, remote, latest, age, total, tuple(rows)))
    return found
