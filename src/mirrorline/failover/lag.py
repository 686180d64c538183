"""How far a flow is behind its source, partition by partition.

A flow's lag on a source partition is the source's high watermark minus the
flow's saved progress (the next source offset it will replicate, kept in the
target: `engine.progress`). Progress is saved once the target holds a
batch's records, so a lag of 0 on every partition means every record the
source holds is on the target: the condition a planned failover waits for
once producers have stopped. A partition the flow has no progress for yet
counts from its log start.

Which partitions: those of the source topics the flow selects now, with its
run-time lists (`operations.positions`, as `mirrorline positions show` reads
them). When the source does not answer, those the flow publishes as
replicated (`control.remote_topics`, on the target).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from mirrorline.cluster_access import ClusterAccess, Unreachable
from mirrorline.config.model import FlowConfig
from mirrorline.control.remote_topics import read_remote_topics
from mirrorline.kafka import KafkaOperationError
from mirrorline.operations.positions import behind, read_positions, saved_progress

Partition = tuple[str, int]


def lag_of(
    ends: Mapping[Partition, int],
    progress: Mapping[Partition, int],
    starts: Mapping[Partition, int] | None = None,
) -> dict[Partition, int]:
    """Records not replicated yet per partition (`operations.positions.behind`)."""
    starts = starts or {}
    return {tp: behind(end, progress.get(tp), starts.get(tp, 0)) for tp, end in ends.items()}


@dataclass(frozen=True)
class FlowLag:
    """One measurement of a flow's positions and lag."""

    topics: Mapping[str, str]  # source topic -> remote topic
    partitions: Mapping[str, int]  # source topic -> partition count
    progress: Mapping[Partition, int]
    source_ends: Mapping[Partition, int] | None  # None: the source did not answer
    lag: Mapping[Partition, int] | None = field(default=None)

    @property
    def total(self) -> int | None:
        return None if self.lag is None else sum(self.lag.values())

    def lagging(self) -> dict[Partition, int]:
        return {tp: n for tp, n in sorted((self.lag or {}).items()) if n}


class FlowPositions:
    """Reads a flow's replicated topics, progress and source ends (see the module)."""

    def __init__(self, flow: FlowConfig, source: ClusterAccess, target: ClusterAccess) -> None:
        self.flow = flow
        self.source = source
        self.target = target

    def topics(self) -> dict[str, str]:
        """Source topic -> remote topic, as the flow publishes them on the target."""
        try:
            published = read_remote_topics(
                self.target.consumer_settings, timeout=self.target.timeout
            )
        except KafkaOperationError as exc:
            raise Unreachable(f"{self.target.alias}: {exc}") from None
        return dict(sorted(published.get(self.flow.name, {}).items()))

    def progress(self) -> dict[Partition, int]:
        """The flow's next source offset per partition, from the target."""
        try:
            return saved_progress(self.flow, self.target.clients(), self.target.timeout)
        except KafkaOperationError as exc:
            raise Unreachable(f"{self.target.alias}: {exc}") from None

    def measure(self, flow: FlowConfig | None = None, *, source_reachable: bool = True) -> FlowLag:
        """Topics, progress and, when the source answers, its ends and the lag.

        `flow` is the flow with its run-time lists (default: as configured):
        its lag covers the partitions of every source topic it selects now
        (`operations.positions.read_positions`), including topics its next
        topic refresh is still to create on the target.
        """
        flow = flow or self.flow
        topics = self.topics()
        if not source_reachable:
            progress = self.progress()
            on_target = self.target.topics()
            partitions = {t: on_target.get(r, 0) for t, r in topics.items()}
            return FlowLag(topics, partitions, progress, None)
        try:
            found = read_positions(
                flow, self.source.clients(), self.target.clients(), timeout=self.source.timeout
            )
        except KafkaOperationError as exc:
            raise Unreachable(str(exc)) from None
        selected = [p for p in found if flow.should_replicate_topic(p.topic)]
        for position in selected:
            topics.setdefault(position.topic, flow.remote_topic(position.topic))
        partitions = dict(Counter(p.topic for p in selected))
        progress = {
            (p.topic, p.partition): p.next_offset for p in found if p.next_offset is not None
        }
        ends = {(p.topic, p.partition): p.log_end for p in selected}
        lag = {(p.topic, p.partition): p.lag for p in selected}
        return FlowLag(dict(sorted(topics.items())), partitions, progress, ends, lag)
