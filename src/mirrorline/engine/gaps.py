"""Source records deleted before the flow replicated them: found, reported and counted.

The writer reads as Spark's Kafka source does with `failOnDataLoss=false`: when
retention (or DeleteRecords) removed records the flow had not read yet, it goes
on from the earliest offset still there. Replication must go on, but the loss
must not be silent, so the flow compares what it reads with what it expected.

A partition whose offsets jump past the flow's next offset has not necessarily
lost anything: compaction removes records, and transaction markers and aborted
transactions take offsets too. The partition's log start offset tells the cases
apart. Everything below it was deleted; a missing offset at or above it was
compacted away or never held a record. So if the flow expected offset `e`, the
next record it saw is at `f` and the log now starts at `s`, the records in
`[e, min(f, s))` were lost, and nothing was lost when `s <= e`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mirrorline.engine.progress import SourcePartition
from mirrorline.kafka import ClusterClients, partition_offsets

log = logging.getLogger(__name__)

# Long enough for an operator to see what happened, short enough for a status line.
RECENT_GAPS = 20
_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RecordGap:
    """Source offsets `start` up to (not including) `end` were deleted before replication."""

    topic: str
    partition: int
    start: int
    end: int
    found_ms: int = 0

    @property
    def records(self) -> int:
        return self.end - self.start

    def __str__(self) -> str:
        count = f"{self.records} record" + ("s" if self.records != 1 else "")
        return f"{self.topic}[{self.partition}] offsets {self.start} to {self.end - 1} ({count})"


def lost_range(expected: int, first_seen: int, log_start: int) -> tuple[int, int] | None:
    """The offsets `[start, end)` lost before `first_seen`, or None when none were.

    `expected` is the flow's next offset for the partition (negative when it
    has none yet: a partition that starts at its earliest record cannot lose
    any), `first_seen` the first offset read after it, `log_start` the
    partition's log start offset now.
    """
    if expected < 0:
        return None
    end = min(first_seen, log_start)
    return (expected, end) if end > expected else None


class GapFinder:
    """Asks the source cluster where its partitions start, to tell a loss from a jump."""

    def __init__(self, flow: str, source: ClusterClients) -> None:
        self.flow = flow
        self._source = source

    def after_batch(
        self, expected: Mapping[SourcePartition, int], first_seen: Mapping[SourcePartition, int]
    ) -> list[RecordGap]:
        """Losses before a batch's first records: `first_seen` per partition it read."""
        jumped = {
            tp: offset
            for tp, offset in first_seen.items()
            if expected.get(tp, -1) >= 0 and offset > expected[tp]
        }
        if not jumped:
            return []
        starts = self.log_starts(jumped)
        return _gaps(expected, jumped, starts)

    def before_log_start(self, expected: Mapping[SourcePartition, int]) -> list[RecordGap]:
        """Losses of partitions whose next offset is below their log start.

        For partitions with nothing left to read, no batch would ever show the
        loss: checked when the query starts and, for idle partitions, now and then.
        """
        known = {tp: offset for tp, offset in expected.items() if offset >= 0}
        if not known:
            return []
        starts = self.log_starts(known)
        return _gaps(known, starts, starts)

    def log_starts(self, partitions: Iterable[SourcePartition]) -> dict[SourcePartition, int]:
        """Each partition's log start offset (the earliest offset still stored)."""
        return partition_offsets(
            self._source.admin,
            partitions,
            "earliest",
            timeout=_TIMEOUT_S,
            what=f"flow {self.flow}: source cluster {self._source.alias}",
        )


class GapLedger:
    """What a flow lost so far: the latest gaps and running counters, for its status."""

    def __init__(self, flow: str, keep: int = RECENT_GAPS) -> None:
        self.flow = flow
        self._lock = threading.Lock()
        self._recent: deque[RecordGap] = deque(maxlen=keep)
        self._records_lost = 0
        self._gaps = 0

    def record(self, gaps: Iterable[RecordGap]) -> None:
        for gap in gaps:
            log.warning(
                "flow %s: source records lost before replication: %s were deleted from the "
                "source (retention or deletion) before the flow read them; continuing at "
                "offset %d",
                self.flow,
                gap,
                gap.end,
            )
            with self._lock:
                self._recent.append(gap)
                self._records_lost += gap.records
                self._gaps += 1

    def recent(self) -> tuple[RecordGap, ...]:
        with self._lock:
            return tuple(self._recent)

    def counters(self) -> dict[str, int]:
        """Totals since the flow started; named for metrics exporters to read as they are."""
        with self._lock:
            return {"records_lost": self._records_lost, "gaps": self._gaps}


def _gaps(
    expected: Mapping[SourcePartition, int],
    first_seen: Mapping[SourcePartition, int],
    starts: Mapping[SourcePartition, int],
) -> list[RecordGap]:
    now = int(time.time() * 1000)
    gaps = []
    for tp, seen in sorted(first_seen.items()):
        lost = lost_range(expected[tp], seen, starts[tp])
        if lost is not None:
            gaps.append(RecordGap(tp[0], tp[1], lost[0], lost[1], now))
    return gaps
