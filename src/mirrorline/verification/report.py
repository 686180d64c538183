"""What a verification found, per partition and per topic, and its JSON document.

Four kinds of findings make a copy differ from its source; each is counted in
full and its first `SHOWN` occurrences are named by offset:

- missing: a source record in the checked range with no copy (the runs do not
  map it, or the target holds no record where they say its copy is);
- extra: a target record in the mapped range that is not the copy of a source
  record: at a target offset no run maps to, or a second copy (a duplicate,
  named with the source offset it repeats);
- different: the record at the mapped target offset differs in key, value,
  headers (the user's: Mirrorline's provenance headers are not compared) or
  timestamp;
- misplaced: the copy exists but at another target offset than the runs say,
  so translating offsets through the runs would be off.

The rest is counted, never a difference: records the flow has not reached yet
(at or past its saved progress), records before the flow's first run or
between MirrorMaker 2's offset syncs that were not in line (copied by MM2 or
another tool: no exact mapping), records the flow skipped
on purpose (loop prevention by provenance headers) and copies whose source
record has since been removed (compaction, retention).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SHOWN = 10  # offsets named per kind of finding and partition
KINDS = ("missing", "extra", "different", "misplaced")


@dataclass
class Findings:
    """One kind of finding in one partition: how many, and the first few."""

    count: int = 0
    first: list[dict[str, Any]] = field(default_factory=list)

    def add(self, entry: dict[str, Any]) -> None:
        self.count += 1
        if len(self.first) < SHOWN:
            self.first.append(entry)

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "first": list(self.first)}


@dataclass
class PartitionReport:
    """The verification of one source partition against its copy."""

    topic: str
    partition: int
    remote_topic: str
    start: int  # first source offset checked
    end: int  # one past the last source offset checked
    checked: int = 0  # source records compared
    missing: Findings = field(default_factory=Findings)
    extra: Findings = field(default_factory=Findings)
    different: Findings = field(default_factory=Findings)
    misplaced: Findings = field(default_factory=Findings)
    not_yet_copied: int = 0  # source offsets at or past the flow's progress
    not_covered: int = 0  # source offsets without an exact mapping (before the first run, MM2's)
    skipped_by_flow: int = 0  # records the flow did not copy on purpose (provenance)
    source_removed: int = 0  # copies whose source record no longer exists

    @property
    def differences(self) -> int:
        return self.missing.count + self.extra.count + self.different.count + self.misplaced.count

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "range": {"start": self.start, "end": self.end},
            "checked": self.checked,
            "missing": self.missing.to_dict(),
            "extra": self.extra.to_dict(),
            "different": self.different.to_dict(),
            "misplaced": self.misplaced.to_dict(),
            "not_yet_copied": self.not_yet_copied,
            "not_covered": self.not_covered,
            "skipped_by_flow": self.skipped_by_flow,
            "source_removed": self.source_removed,
        }


_COUNTS = ("checked", "not_yet_copied", "not_covered", "skipped_by_flow", "source_removed")


def topic_summary(partitions: list[PartitionReport]) -> dict[str, int]:
    """The counts of a topic's partitions added up."""
    summary = {name: sum(getattr(p, name) for p in partitions) for name in _COUNTS}
    for kind in KINDS:
        summary[kind] = sum(getattr(p, kind).count for p in partitions)
    return summary


@dataclass
class VerifyReport:
    """The verification of one flow over a range."""

    flow: str
    since: str | None
    until: str | None
    started_ms: int
    finished_ms: int = 0
    partitions: list[PartitionReport] = field(default_factory=list)

    @property
    def differences(self) -> int:
        return sum(p.differences for p in self.partitions)

    @property
    def checked(self) -> int:
        return sum(p.checked for p in self.partitions)

    @property
    def identical(self) -> bool:
        return self.differences == 0

    def topics(self) -> dict[str, list[PartitionReport]]:
        grouped: dict[str, list[PartitionReport]] = {}
        for p in sorted(self.partitions, key=lambda p: (p.topic, p.partition)):
            grouped.setdefault(p.topic, []).append(p)
        return grouped

    def totals(self) -> dict[str, int]:
        return topic_summary(self.partitions)

    def to_dict(self) -> dict[str, Any]:
        """The stable document `--json` prints."""
        return {
            "flow": self.flow,
            "verdict": "identical" if self.identical else "different",
            "differences": self.differences,
            "range": {"since": self.since, "until": self.until},
            "started_ms": self.started_ms,
            "finished_ms": self.finished_ms,
            "totals": self.totals(),
            "topics": [
                {
                    "topic": topic,
                    "remote_topic": parts[0].remote_topic,
                    "summary": topic_summary(parts),
                    "partitions": [p.to_dict() for p in parts],
                }
                for topic, parts in self.topics().items()
            ],
        }
