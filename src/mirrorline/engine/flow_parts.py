"""What one flow is made of: its collaborators, built once on its `FlowContext`.

`FlowRunner` decides when each part acts; this module only says what the
parts are and how they are wired to each other:

- `TopicManager` (the partitions ready on the target), `RemoteTopicPublisher`,
  `Checkpointer` (when checkpoints are emitted) and the `FlowLoops` that run
  them on their schedule;
- the driver's bookkeeping: `ProgressStore`, `RunLog`, `OffsetSyncPublisher`
  (when offset syncs are emitted), `GapFinder` and `GapLedger`, all written
  after each batch by the `BatchCommitter`;
- `DataPath`, the Spark query, which hands each batch's results to the
  committer;
- `MetricsReporter` (when metrics are emitted), `ClusterHealth`,
  `StartupTimeline` and `Lifecycle` (what operators want of the flow).

The parts share the context's clients; none builds its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mirrorline.control.checkpointing import Checkpointer
from mirrorline.control.offset_runs import RunLog
from mirrorline.control.remote_topics import RemoteTopicPublisher
from mirrorline.control.topics import TopicManager
from mirrorline.engine.batch_commit import BatchCommitter
from mirrorline.engine.data_path import DataPath
from mirrorline.engine.flow_metrics import MetricsReporter
from mirrorline.engine.gaps import GapFinder, GapLedger
from mirrorline.engine.health import ClusterHealth
from mirrorline.engine.leadership import FlowLeadership
from mirrorline.engine.lifecycle import Lifecycle
from mirrorline.engine.loops import FlowLoops
from mirrorline.engine.offset_syncs import OffsetSyncPublisher
from mirrorline.engine.progress import PROGRESS_TOPIC, ProgressStore
from mirrorline.engine.spark_promise import SparkPromise
from mirrorline.engine.startup import StartupTimeline
from mirrorline.engine.status import FlowStatus
from mirrorline.flow_context import FlowContext


@dataclass(frozen=True)
class FlowParts:
    topics: TopicManager
    progress: ProgressStore
    syncs: OffsetSyncPublisher | None
    runs: RunLog
    remote_topics: RemoteTopicPublisher
    metrics: MetricsReporter | None
    checkpointer: Checkpointer | None
    health: ClusterHealth
    gaps: GapFinder
    lost: GapLedger
    startup: StartupTimeline
    committer: BatchCommitter
    data_path: DataPath
    loops: FlowLoops
    lifecycle: Lifecycle

    def close(self) -> None:
        """Close the parts that hold clients or threads, once the query and the committer
        are stopped; the metrics last, since they write the flow's last status."""
        for part in (
            self.progress,
            self.runs,
            self.remote_topics,
            self.loops,
            self.lifecycle,
            self.checkpointer,
            self.syncs,
            self.metrics,
        ):
            if part is not None:
                part.close()
        self.health.close()


def build_parts(
    context: FlowContext,
    spark: SparkPromise,
    work_dir: Path,
    leadership: FlowLeadership,
    *,
    status: Callable[[], FlowStatus],
    term: Callable[[], int | None],
    assigned: Callable[[], Mapping[str, int]],
) -> FlowParts:
    """The parts of `context`'s flow. `status`: the flow's status, for its metrics;
    `term`: the term of leadership it acts in; `assigned`: the partitions its query
    reads (source topic -> partition count)."""
    flow, settings = context.flow, context.settings
    topics = TopicManager(context)
    progress = ProgressStore(
        flow.name, context.target, replication_factor=settings.replication_factor
    )
    syncs = (
        OffsetSyncPublisher(
            flow.name,
            flow.offset_syncs_topic,
            context.offset_syncs,
            replication_factor=settings.offset_syncs_replication_factor,
        )
        if settings.emit_offset_syncs
        else None
    )
    runs = RunLog(flow.name, context.target, replication_factor=settings.replication_factor)
    metrics_every = settings.intervals.emit_metrics
    metrics = (
        MetricsReporter(
            context,
            leadership.client_id,
            interval=metrics_every,
            status=status,
            positions=lambda: committer.committed_offsets(),  # asked once the flow runs
        )
        if metrics_every is not None
        else None
    )
    checkpointer = (
        Checkpointer(context, metrics.checkpoints_written if metrics else None)
        if settings.intervals.emit_checkpoints is not None
        else None
    )
    gaps, lost, startup = (
        GapFinder(flow.name, context.source),
        GapLedger(flow.name),
        StartupTimeline(flow.name),
    )
    committer = BatchCommitter(
        flow.name,
        progress=progress,
        runs=runs,
        syncs=syncs,
        gaps=gaps,
        ledger=lost,
        term=leadership.term,
        metrics=metrics,
        startup=startup,
        # Commits noted ahead of the progress are checkpointed as soon as it passes them.
        on_saved=context.wake.set if checkpointer is not None else None,
    )
    data_path = DataPath(
        context, spark, work_dir, committer, size_limits=topics.size_limits, term=leadership.term
    )
    remote_topics = RemoteTopicPublisher(context)
    loops = FlowLoops(
        context,
        topics=topics,
        remote_topics=remote_topics,
        checkpointer=checkpointer,
        gaps=gaps,
        committer=committer,
        data_path=data_path,
        term=term,
        assigned=assigned,
    )
    return FlowParts(
        topics=topics,
        progress=progress,
        syncs=syncs,
        runs=runs,
        remote_topics=remote_topics,
        metrics=metrics,
        checkpointer=checkpointer,
        health=ClusterHealth.for_flow(context, PROGRESS_TOPIC),
        gaps=gaps,
        lost=lost,
        startup=startup,
        committer=committer,
        data_path=data_path,
        loops=loops,
        lifecycle=Lifecycle(context),
    )
