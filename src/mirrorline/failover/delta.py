"""Whether failback can copy only the delta: the records written to the target after failover.

At failover the command recorded, for every topic producers may write on the
target afterwards (the target's topic named like each source topic: `orders`
on B, which is the remote topic itself under the identity policy and a local
topic under the default one), its log end offset. Those records are already
on the original cluster; everything from there on is the delta. The reverse
flow can start at the recorded offset only if the target still holds it: its
log start must not have passed it (retention, `delete_records`). A topic or
partition that did not exist at failover starts at 0.

A partition whose recorded offset is gone cannot be delta-copied: the
records between the recorded offset and the log start are on neither cluster
any more. `--full-resync` starts such partitions (and every other) at the
log start instead, copying everything the target still holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Partition = tuple[str, int]


@dataclass(frozen=True)
class DeltaCheck:
    topic: str
    partition: int
    recorded: int  # the log end offset at failover (0: the partition did not exist)
    log_start: int
    log_end: int
    start: int | None  # where the reverse flow starts; None: it cannot

    @property
    def ok(self) -> bool:
        return self.start is not None

    @property
    def delta(self) -> int | None:
        """How many records the reverse flow copies (those written since failover)."""
        return None if self.start is None else max(0, self.log_end - self.start)

    def reason(self) -> str:
        if self.ok:
            return ""
        if self.recorded > self.log_end:
            return (
                f"{self.topic}[{self.partition}]: the log ends at {self.log_end}, before the "
                f"offset {self.recorded} recorded at failover (was the topic deleted and created "
                "again?)"
            )
        return (
            f"{self.topic}[{self.partition}]: the log starts at {self.log_start}, past the "
            f"offset {self.recorded} recorded at failover: records {self.recorded} to "
            f"{self.log_start - 1} are gone"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "recorded": self.recorded,
            "log_start": self.log_start,
            "log_end": self.log_end,
            "start": self.start,
            "delta": self.delta,
        }


def check_delta(
    recorded: Mapping[Partition, int],
    starts: Mapping[Partition, int],
    ends: Mapping[Partition, int],
    *,
    full_resync: bool = False,
) -> list[DeltaCheck]:
    """One check per partition the target has now (`ends`).

    A partition the failover did not record starts at 0, as the topic was
    created (or grew) after it. With `full_resync`, every partition starts at
    its log start.
    """
    checks = []
    for tp, end in sorted(ends.items()):
        at = recorded.get(tp, 0)
        log_start = starts.get(tp, 0)
        if full_resync:
            start: int | None = log_start
        else:
            start = at if log_start <= at <= end else None
        checks.append(DeltaCheck(tp[0], tp[1], at, log_start, end, start))
    return checks
