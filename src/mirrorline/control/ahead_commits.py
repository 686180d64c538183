"""Offsets a group committed ahead of the flow's progress, kept until progress reaches them.

A group that keeps up with the stream commits offsets that the flow's saved
progress (`read_until`) reaches a second or two later; by then the group has
committed newer ones. Translating only the group's current offset would then
fail in every round for as long as the group keeps up, and its checkpoint would
stay where it was before the group caught up.

So, for each (group, source topic, partition) whose current offset is ahead of
the progress, the checkpointer notes that offset here, with when it read it,
and checkpoints the newest noted one the progress has reached: in its next
round, or sooner, as soon as the progress passes it (`Checkpointer.catch_up`).
That offset is one the group really committed, translated exactly: a consumer
that fails over resumes there and reads again only what the group consumed
since, seconds of the stream.

Rules:

- Noted offsets are kept in commit order. A commit below a noted one (the group
  was reset backwards) drops the noted ones at or above it: they no longer say
  where the group is.
- At most MAX_NOTED per partition are kept; when progress trails further, the
  oldest go first, so the first checkpoint after catching up comes later but
  every one after it is as fresh.
- A partition whose current offset translates directly forgets its noted ones.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from typing import NamedTuple

from mirrorline.group_offsets import OffsetAndMetadata

MAX_NOTED = 64

Key = tuple[str, str, int]  # group, source topic, partition


class Noted(NamedTuple):
    """A commit, and when the checkpointer read it (`time.monotonic()`)."""

    commit: OffsetAndMetadata
    read_at: float


class AheadCommits:
    """Recent commits per group partition that the flow's progress has not reached yet."""

    def __init__(self, limit: int = MAX_NOTED) -> None:
        self._limit = limit
        self._noted: dict[Key, deque[Noted]] = {}

    def note(self, key: Key, committed: OffsetAndMetadata, read_at: float) -> None:
        """Remember `committed`, read at `read_at`, which the progress has not reached yet."""
        noted = self._noted.setdefault(key, deque(maxlen=self._limit))
        while noted and noted[-1].commit.offset >= committed.offset:
            noted.pop()
        noted.append(Noted(committed, read_at))

    def reached(self, key: Key, read_until: int) -> Noted | None:
        """The newest noted commit at or below `read_until`, or None; it and the older
        ones are forgotten (a checkpoint never needs to go back to them)."""
        noted = self._noted.get(key)
        newest = None
        while noted and noted[0].commit.offset <= read_until:
            newest = noted.popleft()
        return newest

    def keys(self) -> list[Key]:
        """The group partitions with noted commits."""
        return [key for key, noted in self._noted.items() if noted]

    def forget(self, key: Key) -> None:
        self._noted.pop(key, None)

    def keep_groups(self, groups: Collection[str]) -> None:
        """Forget what was noted for groups the flow no longer checkpoints."""
        for key in [k for k in self._noted if k[0] not in groups]:
            del self._noted[key]

    def __len__(self) -> int:
        return sum(len(noted) for noted in self._noted.values())
