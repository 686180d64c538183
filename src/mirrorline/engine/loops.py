"""What a flow's periodic control loops do, and their schedule, in one place.

The loops come in three stages, which the flow runs where their conditions
hold (`FlowRunner.tick`):

- `TOPICS`, while both clusters answer: topic refresh (remote topics created,
  partitions added, the flow's topic pairs published), topic config sync,
  the permission check and topic ACL sync;
- `QUERY`, while the query runs: the check of idle partitions for records
  deleted before the flow read them;
- `CHECKPOINTS`, once the query runs on its partitions (checkpoints translate
  through them): consumer group refresh, checkpoints (then runs no source
  record needs any more are pruned), between rounds the checkpoints of commits
  the progress just passed, and, when enabled, group offset sync.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mirrorline.control.acl_sync import TopicAclSync
from mirrorline.control.checkpointing import Checkpointer
from mirrorline.control.remote_topics import RemoteTopicPublisher
from mirrorline.control.topics import TopicManager
from mirrorline.engine.access import AccessCheck, MissingPermissions
from mirrorline.engine.batch_commit import BatchCommitter
from mirrorline.engine.data_path import DataPath
from mirrorline.engine.gaps import GapFinder
from mirrorline.engine.schedule import Scheduler
from mirrorline.flow_context import FlowContext

TOPICS, QUERY, CHECKPOINTS = "topics", "query", "checkpoints"
# How often idle partitions are checked for records deleted before they were read.
GAP_CHECK_S = 10.0
# Mirrorline's own requests outside the data path: short, so that the flow's thread moves on.
_TIMEOUT_S = 10.0


class FlowLoops:
    """One flow's control loops, run by stage; each failure is kept for the status."""

    def __init__(
        self,
        context: FlowContext,
        *,
        topics: TopicManager,
        remote_topics: RemoteTopicPublisher,
        checkpointer: Checkpointer | None,
        gaps: GapFinder,
        committer: BatchCommitter,
        data_path: DataPath,
        term: Callable[[], int | None],
        assigned: Callable[[], Mapping[str, int]],
    ) -> None:
        """`term`: the term of leadership the flow acts in; `assigned`: the partitions
        its query reads (source topic -> partition count)."""
        self.topics = topics
        self.remote_topics = remote_topics
        self.checkpointer = checkpointer
        self.gaps = gaps
        self.committer = committer
        self.data_path = data_path
        self._term = term
        self._assigned = assigned
        self.scheduler = schedule = Scheduler(context.name)
        intervals = context.settings.intervals
        schedule.every("topic refresh", intervals.refresh_topics, self.refresh_topics, stage=TOPICS)
        schedule.every(
            "topic config sync", intervals.sync_topic_configs, topics.sync_configs, stage=TOPICS
        )
        self.access = AccessCheck(context, topics.ready)
        schedule.every(
            "permission check", intervals.refresh_topics, self.access.check, stage=TOPICS
        )
        self.acls = TopicAclSync(context) if intervals.sync_topic_acls is not None else None
        if self.acls is not None:
            acls = self.acls
            schedule.every(
                "topic ACL sync",
                intervals.sync_topic_acls,
                lambda: acls.sync(topics.ready()),
                stage=TOPICS,
            )
        schedule.every(
            "source gap check", GAP_CHECK_S, lambda: self.skip_deleted(assigned()), stage=QUERY
        )
        if checkpointer is not None:
            schedule.every(
                "consumer group refresh",
                intervals.refresh_groups,
                checkpointer.refresh_groups,
                stage=CHECKPOINTS,
            )
            schedule.every(
                "checkpoints", intervals.emit_checkpoints, self.emit_checkpoints, stage=CHECKPOINTS
            )
            # Due at every look (the flow's tick): commits noted ahead of the progress
            # are checkpointed as soon as it passes them, not a round later.
            schedule.every("checkpoint catch-up", 0.0, self.catch_up_checkpoints, stage=CHECKPOINTS)
            if intervals.sync_group_offsets is not None:
                schedule.every(
                    "group offset sync",
                    intervals.sync_group_offsets,
                    checkpointer.sync_group_offsets,
                    stage=CHECKPOINTS,
                )

    def run(self, stage: str, now: float) -> None:
        self.scheduler.run(stage, now)

    def wait_s(self, now: float, longest: float) -> float:
        """How long the flow may wait before a loop falls due (`longest` at most)."""
        return self.scheduler.wait_s(now, longest)

    def explain(self, reason: str) -> str:
        """A failure's reason, or the ACLs the brokers deny the flow when some are missing.

        Spark reports a denial deep inside a Java stack, so every failure is
        checked, not only those whose first line says "authorization".
        """
        try:
            self.access.check()
        except MissingPermissions as exc:
            return str(exc)
        except Exception:  # noqa: BLE001 - the original reason stands
            return reason
        return reason

    def lists_changed(self) -> None:
        """Run-time topic or group lists changed: the loops that filter run now."""
        self.scheduler.hurry(
            "topic refresh", "permission check", "topic ACL sync", "consumer group refresh"
        )

    def close(self) -> None:
        if self.acls is not None:
            self.acls.close()

    def errors(self) -> dict[str, str]:
        return self.scheduler.errors()

    def check_gaps(self, partitions: Mapping[str, int]) -> None:
        """The source gap check now, for `partitions` (the query is about to read them)."""
        self.scheduler.guard("source gap check", lambda: self.skip_deleted(partitions))

    def refresh_topics(self) -> bool:
        """Find and create remote topics, then publish the flow's topic pairs; whether
        every remote topic is complete (a failure is tried again soon).

        Only after a successful look at the source: before it, no topic is known
        and the published pairs would all be removed. The pairs of the topics about
        to be created are published before they are, so that the reverse flow of a
        renaming policy knows a new remote topic for a copy from the moment it
        exists (`TopicManager.refresh`); afterwards the pairs become those of the
        topics that are ready.
        """
        self.topics.refresh(announce=self.remote_topics.publish)
        self.remote_topics.publish(self.topics.ready())
        return self.topics.structure_complete()

    def skip_deleted(self, partitions: Mapping[str, int]) -> None:
        """Report records deleted below the flow's next offsets and move past them.

        Runs at query start and now and then, for partitions that have nothing
        left to read (a batch reports the gaps it reads past itself). Skipped
        while a batch runs: that batch may be replicating the very records.
        """
        with self.data_path.between_batches() as free:
            if not free:
                return
            known = self.committer.next_offsets()
            expected = {
                (t, p): known[(t, p)]
                for t, n in partitions.items()
                for p in range(n)
                if (t, p) in known
            }
            lost = self.gaps.before_log_start(expected)
            if lost:
                moved = {(g.topic, g.partition): g.end for g in lost}
                self.committer.skip(moved, lost, self._term(), timeout=_TIMEOUT_S)

    def catch_up_checkpoints(self) -> None:
        """Checkpoints of the noted commits that the committed progress passed since."""
        if self.checkpointer is not None and self.checkpointer.noted():
            self.checkpointer.catch_up(
                self.committer.translation, self.committer.committed_offsets()
            )

    def emit_checkpoints(self) -> None:
        """Checkpoints of the committed offsets; then runs no source record needs go."""
        if self.checkpointer is None:
            return
        replicated = dict(self._assigned())
        store = self.committer.translation
        # Committed, not read: the store holds the syncs of every offset below it.
        self.checkpointer.emit(store, replicated, self.committer.committed_offsets())
        partitions = [p for p in store.partitions() if p[0] in replicated]
        if partitions:
            self.committer.prune(self.gaps.log_starts(partitions), self._term(), timeout=_TIMEOUT_S)
