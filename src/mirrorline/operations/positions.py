"""Where a flow stands on each source partition, and where an operator may move it.

A flow's position on a source partition is its saved progress: the next
source offset it replicates (`engine.progress`). `read_positions` puts it
beside the partition's log start and end, which gives the lag. `resolve`
turns an operator's choice (earliest, latest, a time, explicit offsets) into
one offset per partition, checked against the source log, for `positions
set`; the flow's leader saves them as progress while the flow is stopped
(`engine.lifecycle`).

The partitions are those the flow has progress for and those of the source
topics it replicates now (its effective filters, run-time lists included).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mirrorline.config.model import FlowConfig
from mirrorline.config.start_position import StartPosition
from mirrorline.engine.progress import ProgressStore, SourcePartition
from mirrorline.engine.start_offsets import resolve_start
from mirrorline.kafka import ClusterClients, KafkaOperationError, partition_offsets


@dataclass(frozen=True)
class PartitionPosition:
    topic: str
    partition: int
    next_offset: int | None  # saved progress; None: never replicated
    log_start: int
    log_end: int

    @property
    def lag(self) -> int:
        """Records in the source log the flow has not replicated yet."""
        return behind(self.log_end, self.next_offset, self.log_start)

    def to_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.next_offset,
            "log_start": self.log_start,
            "log_end": self.log_end,
            "lag": self.lag,
        }


def behind(log_end: int, next_offset: int | None, log_start: int = 0) -> int:
    """Records of a source partition a flow has not replicated: from its next offset (the
    log start when it has none, or when retention passed it) to the log end."""
    position = log_start if next_offset is None else max(next_offset, log_start)
    return max(0, log_end - position)


def replicated_partitions(
    flow: FlowConfig, source: ClusterClients, timeout: float
) -> list[SourcePartition]:
    """The partitions of the source topics `flow` replicates now."""
    return sorted(
        tp for tp in source_partitions(source, timeout) if flow.should_replicate_topic(tp[0])
    )


def source_partitions(source: ClusterClients, timeout: float) -> set[SourcePartition]:
    """Every partition of every topic the source cluster has now."""
    try:
        metadata = source.admin.list_topics(timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - librdkafka raises KafkaException here
        raise KafkaOperationError(f"{source.alias} does not answer: {exc}") from None
    return {(name, p) for name, topic in metadata.topics.items() for p in topic.partitions}


def saved_progress(
    flow: FlowConfig, target: ClusterClients, timeout: float
) -> dict[SourcePartition, int]:
    """The flow's saved next offsets, read from its target (none before it ever ran)."""
    store = ProgressStore(flow.name, target)
    try:
        return store.load(timeout, missing_ok=True)
    finally:
        store.close()


def read_positions(
    flow: FlowConfig,
    source: ClusterClients,
    target: ClusterClients,
    *,
    topic: str | None = None,
    timeout: float = 30.0,
) -> list[PartitionPosition]:
    """Each partition's saved position and source log bounds (of `topic` only, if given)."""
    progress = saved_progress(flow, target, timeout)
    # Progress on a partition the source no longer has (its topic was deleted) is left
    # out: nothing of it is left to copy, and it has no log to measure.
    partitions = {
        tp
        for tp in source_partitions(source, timeout)
        if tp in progress or flow.should_replicate_topic(tp[0])
    }
    if topic is not None:
        partitions = {tp for tp in partitions if tp[0] == topic}
    starts, ends = _bounds(source, partitions, timeout)
    return [
        PartitionPosition(t, p, progress.get((t, p)), starts[(t, p)], ends[(t, p)])
        for t, p in sorted(partitions)
    ]


def resolve(
    position: StartPosition,
    partitions: Iterable[SourcePartition],
    source: ClusterClients,
    *,
    explicit: Mapping[SourcePartition, int] | None = None,
    timeout: float = 30.0,
) -> dict[SourcePartition, int]:
    """One source offset per partition for `position`, or for `explicit` offsets.

    Explicit offsets must name partitions of the flow and lie inside the source
    log (log start to log end): a `ValueError` lists every one that does not.
    """
    wanted = sorted(partitions)
    starts, ends = _bounds(source, wanted, timeout)
    if explicit is not None:
        problems = []
        for (t, p), offset in sorted(explicit.items()):
            if (t, p) not in starts:
                problems.append(f"{t}[{p}] is not a partition the flow replicates")
            elif not starts[(t, p)] <= offset <= ends[(t, p)]:
                problems.append(
                    f"{t}[{p}] offset {offset} is outside the source log "
                    f"({starts[(t, p)]} to {ends[(t, p)]})"
                )
        if problems:
            raise ValueError("; ".join(problems))
        return dict(explicit)
    if position.kind == "earliest":
        return {tp: starts[tp] for tp in wanted}
    return resolve_start(position, wanted, source.consumer_settings)


def _bounds(
    source: ClusterClients, partitions: Iterable[SourcePartition], timeout: float
) -> tuple[dict[SourcePartition, int], dict[SourcePartition, int]]:
    chosen = list(partitions)
    what = f"source cluster {source.alias}"
    starts = partition_offsets(source.admin, chosen, "earliest", timeout=timeout, what=what)
    ends = partition_offsets(source.admin, chosen, "latest", timeout=timeout, what=what)
    return starts, ends
