"""What a batch leaves for the driver to write, and what the flow counts of it.

A `Commit` lists one unit of the driver's bookkeeping (offset syncs, pruned
runs, progress, gaps, the batch's counts), in the order `batch_commit` writes
them. Building one from a batch's results is pure, done in the batch function;
writing it is the committer's (`engine.batch_commit`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mirrorline.engine.batch_writer import PartitionResult
from mirrorline.engine.gaps import RecordGap
from mirrorline.engine.progress import SourcePartition
from mirrorline.engine.status import BatchStats

# How many descriptions of refused records a flow's status keeps.
RECENT_REFUSALS = 5
WRITE_TIMEOUT_S = 60.0

# Per source partition, its offset syncs (upstream, downstream) in order.
Syncs = tuple[tuple[SourcePartition, tuple[tuple[int, int], ...]], ...]


@dataclass(frozen=True)
class BatchOutcome:
    """A batch's contribution to the flow's totals."""

    stats: BatchStats
    refused: int = 0  # records refused by the target
    dead_lettered: int = 0  # of those, written to the dead-letter topic
    skipped: int = 0  # records a replayed exactly-once batch found already committed
    dropped: int = 0  # records a single message transform dropped
    routed: int = 0  # records a transform sent to another topic or partition
    refusals: tuple[str, ...] = ()
    results: tuple[PartitionResult, ...] = ()  # what each task wrote, for the raw metrics


@dataclass(frozen=True)
class Commit:
    """One unit of bookkeeping; its writes happen in the order of the fields."""

    syncs: Syncs = ()  # published, then added to the translation store, in order
    prune: Mapping[SourcePartition, int] | None = None  # log starts: runs before them go
    progress: Mapping[SourcePartition, int] = field(default_factory=dict)  # next offsets
    save_progress: bool = True  # False: the tasks saved it (exactly-once batches)
    gaps: tuple[RecordGap, ...] = ()  # recorded once the progress is saved
    batch: BatchOutcome | None = None
    timeout: float = WRITE_TIMEOUT_S


@dataclass(frozen=True)
class Totals:
    """What the flow replicated since the driver started, counting committed batches."""

    records: int = 0
    bytes: int = 0
    last_batch: BatchStats | None = None
    refused: int = 0
    dead_lettered: int = 0
    skipped_committed: int = 0
    dropped: int = 0
    routed: int = 0
    refusals: tuple[str, ...] = ()  # the latest few, newest last
    batches: int = 0

    def add(self, batch: BatchOutcome) -> Totals:
        return Totals(
            records=self.records + batch.stats.records,
            bytes=self.bytes + batch.stats.bytes,
            last_batch=batch.stats,
            refused=self.refused + batch.refused,
            dead_lettered=self.dead_lettered + batch.dead_lettered,
            skipped_committed=self.skipped_committed + batch.skipped,
            dropped=self.dropped + batch.dropped,
            routed=self.routed + batch.routed,
            refusals=(self.refusals + batch.refusals)[-RECENT_REFUSALS:],
            batches=self.batches + 1,
        )

    def counters(self) -> dict[str, int]:
        """Running totals by name, as metrics exporters read them."""
        return {
            "records_replicated": self.records,
            "bytes_replicated": self.bytes,
            "records_refused": self.refused,
            "records_dead_lettered": self.dead_lettered,
            "records_already_committed": self.skipped_committed,
            "records_dropped_by_transforms": self.dropped,
            "records_routed_by_transforms": self.routed,
        }


def batch_commit(
    batch_id: int,
    results: Sequence[PartitionResult],
    *,
    gaps: Sequence[RecordGap],
    exactly_once: bool,
    started: float,
) -> Commit:
    """The bookkeeping of one written batch (`started`: its monotonic start time)."""
    return Commit(
        syncs=tuple((r.source_partition, r.syncs) for r in results),
        progress=advanced_offsets(results),
        save_progress=not exactly_once,
        gaps=tuple(gaps),
        batch=BatchOutcome(
            BatchStats(
                batch_id=batch_id,
                records=sum(r.records for r in results),
                bytes=sum(r.bytes for r in results),
                partitions=len({r.source_partition for r in results}),
                max_age_ms=max((r.max_age_ms for r in results), default=0),
                duration_ms=int((time.monotonic() - started) * 1000),
                finished_at_ms=int(time.time() * 1000),
            ),
            refused=sum(r.refused for r in results),
            dead_lettered=sum(r.dead_lettered for r in results),
            skipped=sum(r.skipped for r in results),
            dropped=sum(r.dropped for r in results),
            routed=sum(r.routed for r in results),
            refusals=tuple(text for r in results for text in r.refusals),
            results=tuple(results),
        ),
    )


def advanced_offsets(results: Iterable[PartitionResult]) -> dict[SourcePartition, int]:
    """Each partition's next offset after the batch (several tasks may read one partition)."""
    advanced: dict[SourcePartition, int] = {}
    for r in results:
        advanced[r.source_partition] = max(advanced.get(r.source_partition, 0), r.next_offset)
    return advanced


def first_offsets(results: Iterable[PartitionResult]) -> dict[SourcePartition, int]:
    """Each partition's first offset the batch read."""
    first: dict[SourcePartition, int] = {}
    for r in results:
        first[r.source_partition] = min(first.get(r.source_partition, r.first_seen), r.first_seen)
    return first
