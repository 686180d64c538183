"""Writing one micro-batch: the seam between the flow's driver side and its executors.

`write_batch(frame, spec)` writes every record of a micro-batch's DataFrame to
the target cluster (on the executors) and returns one `PartitionResult` per
source partition of the batch. Everything the driver does after a batch
(offset syncs, runs, progress, totals, gaps) reads these results and nothing else.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from mirrorline.engine.writer import RESULT_DDL, WriteSpec, write_batches


@dataclass(frozen=True)
class PartitionResult:
    """What one task wrote for one source partition of a batch."""

    topic: str  # source topic
    partition: int
    records: int  # written to the remote topic
    filtered: int  # not written: provenance says the target had them before
    skipped: int  # not written: an earlier attempt already committed them (exactly-once)
    refused: int  # refused by the target (errors.tolerance = all)
    dead_lettered: int  # of those, written to the dead-letter topic
    refusals: tuple[str, ...]  # descriptions of the first few refusals
    first_seen: int  # source offset of the first record the task read
    next_offset: int  # source offset after the last record the task read
    bytes: int  # keys and values written
    first_offset: int | None  # source offsets of the first and last record written
    last_offset: int | None
    first_target_offset: int | None  # and where they were written on the target
    last_target_offset: int | None
    min_timestamp: int | None  # the oldest original timestamp written (epoch ms)
    max_age_ms: int  # how old that record was when the task finished
    syncs: tuple[tuple[int, int], ...]  # (upstream, downstream) offset syncs, in order

    @property
    def source_partition(self) -> tuple[str, int]:
        return self.topic, self.partition


def write_batch(frame, spec: WriteSpec) -> list[PartitionResult]:
    """Write the batch's records on the executors; one result per (task, source partition)."""
    rows = frame.mapInArrow(functools.partial(write_batches, spec=spec), RESULT_DDL).collect()
    return [
        PartitionResult(
            topic=r.topic,
            partition=r.partition,
            records=r.records,
            filtered=r.filtered,
            skipped=r.skipped,
            refused=r.refused,
            dead_lettered=r.dead_lettered,
            refusals=tuple(r.refusals or ()),
            first_seen=r.first_seen,
            next_offset=r.next_offset,
            bytes=r.bytes,
            first_offset=r.first_offset,
            last_offset=r.last_offset,
            first_target_offset=r.first_target_offset,
            last_target_offset=r.last_target_offset,
            min_timestamp=r.min_timestamp,
            max_age_ms=r.max_age_ms,
            syncs=tuple((s.upstream, s.downstream) for s in r.syncs or ()),
        )
        for r in rows
    ]
