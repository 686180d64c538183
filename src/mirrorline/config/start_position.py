"""Where a flow starts reading a source partition it has never replicated.

`start.position` is a Mirrorline setting (MM2 only has the consumer's
`auto.offset.reset` and the Connect REST API). It accepts:

* `earliest` (the default): the oldest record still in the source log;
* `latest`: only records written after the flow starts;
* a point in time: an ISO-8601 timestamp with a time zone
  (`2024-05-01T08:00:00Z`) or epoch milliseconds (`1714550400000`); each
  partition starts at its first record at or after that time;
* explicit offsets: `topic:partition:offset, ...`; partitions not listed
  start at `earliest`.

It only matters the first time: once a flow has progress for a partition,
it resumes there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from mirrorline.config.values import parse_list, validate_topic_name

__all__ = ["PartitionOffset", "StartPosition", "parse_start_position"]

StartKind = Literal["earliest", "latest", "timestamp", "offsets"]


@dataclass(frozen=True)
class PartitionOffset:
    """An explicit start: `offset` of `partition` of `topic`."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class StartPosition:
    """A parsed `start.position`."""

    kind: StartKind = "earliest"
    timestamp_ms: int | None = None
    offsets: tuple[PartitionOffset, ...] = ()

    def offset_for(self, topic: str, partition: int) -> int | None:
        """The explicit offset for a partition, or None if the kind's rule applies."""
        for entry in self.offsets:
            if entry.topic == topic and entry.partition == partition:
                return entry.offset
        return None

    def __str__(self) -> str:
        if self.kind == "timestamp":
            return str(self.timestamp_ms)
        if self.kind == "offsets":
            return ", ".join(f"{o.topic}:{o.partition}:{o.offset}" for o in self.offsets)
        return self.kind


def parse_start_position(text: str) -> StartPosition:
    """Parse `earliest`, `latest`, a timestamp, epoch millis or `topic:partition:offset` list."""
    value = text.strip()
    word = value.lower()
    if word in ("earliest", "latest"):
        return StartPosition(kind=word)  # type: ignore[arg-type]
    if value.isdigit():
        return StartPosition(kind="timestamp", timestamp_ms=int(value))
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        if ":" in value:
            return StartPosition(kind="offsets", offsets=_parse_offsets(value))
        raise ValueError(
            "expected earliest, latest, an ISO-8601 timestamp, epoch milliseconds "
            "or topic:partition:offset entries"
        ) from None
    if moment.tzinfo is None:
        raise ValueError("the timestamp needs a time zone, e.g. 2024-05-01T08:00:00Z")
    return StartPosition(kind="timestamp", timestamp_ms=int(moment.timestamp() * 1000))


def _parse_offsets(value: str) -> tuple[PartitionOffset, ...]:
    result: list[PartitionOffset] = []
    seen: set[tuple[str, int]] = set()
    for entry in parse_list(value):
        pieces = entry.rsplit(":", 2)
        if len(pieces) != 3:
            raise ValueError(f"entry {entry!r} is not topic:partition:offset")
        topic, partition_text, offset_text = pieces
        try:
            validate_topic_name(topic)
        except ValueError as exc:
            raise ValueError(f"entry {entry!r}: {exc}") from None
        if not partition_text.isdigit() or not offset_text.isdigit():
            raise ValueError(f"entry {entry!r}: partition and offset must be whole numbers >= 0")
        partition = int(partition_text)
        if (topic, partition) in seen:
            raise ValueError(f"partition {topic}:{partition} is listed twice")
        seen.add((topic, partition))
        result.append(PartitionOffset(topic, partition, int(offset_text)))
    if not result:
        raise ValueError("no topic:partition:offset entries")
    return tuple(result)
