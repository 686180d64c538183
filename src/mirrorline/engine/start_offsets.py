"""Where the flow's query starts reading each source partition.

A partition with progress resumes there. A partition without (a new flow,
topic or partition) that MirrorMaker 2 copied before continues where MM2's
copy ends (`takeover.follow_predecessor`). As in MM2, any other partition
starts at the flow's `start.position`:
`earliest` stays symbolic (Spark's -2, the log start at the time the query
starts), every other position is resolved to an offset here, which the flow
saves before its query starts, so that restarting before the partition's first
record never moves its start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from mirrorline.config.start_position import StartPosition
from mirrorline.control.offset_runs import RunLog
from mirrorline.engine.batch_commit import BatchCommitter
from mirrorline.engine.progress import SourcePartition
from mirrorline.engine.takeover import follow_predecessor
from mirrorline.flow_context import FlowContext

EARLIEST = -2  # Spark's symbolic offset for the start of a partition
_TIMEOUT_S = 30.0


def without_progress(
    ready: Mapping[str, int], known: Mapping[SourcePartition, int]
) -> list[SourcePartition]:
    """The partitions of `ready` (topic -> partition count) that `known` has no offset for."""
    return [(t, p) for t, n in ready.items() for p in range(n) if (t, p) not in known]


def spark_offsets(
    ready: Mapping[str, int], known: Mapping[SourcePartition, int]
) -> dict[str, dict[str, int]]:
    """`startingOffsets` of Spark's Kafka source for `ready`, every partition in `known`."""
    return {t: {str(p): known[(t, p)] for p in range(n)} for t, n in ready.items()}


def starting_offsets(
    context: FlowContext,
    ready: Mapping[str, int],
    *,
    committer: BatchCommitter,
    runs: RunLog,
    term: int | None,
) -> dict[str, dict[str, int]]:
    """`startingOffsets` for the `ready` partitions (see the module); new starts are saved."""
    known = committer.next_offsets()
    fresh = without_progress(ready, known)
    if fresh:
        known.update(follow_predecessor(context, fresh, runs=runs, committer=committer, term=term))
        fresh = without_progress(ready, known)
    if fresh:
        resolved = resolve_start(
            context.flow.start_position, fresh, context.source.consumer_settings
        )
        committer.start_at(resolved, term)
        known.update(resolved)
    return spark_offsets(ready, known)


def resolve_start(
    position: StartPosition,
    partitions: Sequence[SourcePartition],
    consumer_settings: Mapping[str, Any],
) -> dict[SourcePartition, int]:
    """Each partition's start under `position`: `EARLIEST` or an offset of the source."""
    if position.kind == "earliest":
        return {tp: EARLIEST for tp in partitions}
    if position.kind == "offsets":
        explicit = {(o.topic, o.partition): o.offset for o in position.offsets}
        return {tp: explicit.get(tp, EARLIEST) for tp in partitions}
    consumer = Consumer(
        {**consumer_settings, "group.id": "mirrorline-start", "enable.auto.commit": False}
    )
    try:
        if position.kind == "latest" or position.timestamp_ms is None:
            return {tp: _end(consumer, *tp) for tp in partitions}
        # A time: the first record at or after it, else the end of the partition.
        found = consumer.offsets_for_times(
            [TopicPartition(t, p, position.timestamp_ms) for t, p in partitions],
            timeout=_TIMEOUT_S,
        )
        return {
            (tp.topic, tp.partition): tp.offset
            if tp.offset >= 0
            else _end(consumer, tp.topic, tp.partition)
            for tp in found
        }
    finally:
        consumer.close()


def _end(consumer: Consumer, topic: str, partition: int) -> int:
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=_TIMEOUT_S)
    return int(high)
