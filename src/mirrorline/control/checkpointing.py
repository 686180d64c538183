"""Consumer-group checkpoints and automatic group offset sync for one flow.

Every `emit.checkpoints.interval.seconds` the flow reads the committed offsets
of the source groups its group filter selects (the list is refreshed every
`refresh.groups.interval.seconds`), translates each one exactly
(`control.translation`) and writes the checkpoints that changed to
`<source>.checkpoints.internal` on the target, in MM2's format: group, the
topic's name on the target, partition, the source offset, the translated
offset and the group's commit metadata (`control.checkpoint_log` writes them).
MM2's `RemoteClusterUtils` and Mirrorline's client read them.

Two kinds of source topics are checkpointed:

- topics the flow replicates: through its own translation store;
- remote topics that came from the flow's target (on a flow B->A, `A.orders`
  on B): a group that failed over from A to B and now goes back. They are
  translated back through the runs of the opposite flow A->B, kept on B, and
  checkpointed under the topic's name on A (`orders`), as MM2 names them.

An offset that cannot be translated exactly (not replicated yet, older than the
kept runs) gets no checkpoint this time; the previous one stays. A group that
keeps up with the stream is always a little ahead of the flow's saved progress:
its partitions get the newest earlier commit the progress has reached
(`control.ahead_commits`), checkpointed as soon as the progress passes it
(`catch_up`, between rounds), so their checkpoints trail by about a second.

With `sync.group.offsets.enabled`, every `sync.group.offsets.interval.seconds`
the checkpointed offsets are also committed to the same groups on the target,
following `group_offsets`' rules: only to groups without active members (the
target refuses a commit to the others; the sync counts them as skipped), and
never moving a partition backwards from what the group committed there.

Both rounds ask about `group_offsets.GROUPS_AT_ONCE` groups at a time
(`for_each_group`): each group's offsets cost a client's round trips, and a
thousand groups one after the other would make a round outlast its interval.

Mirrorline's own groups (`mirrorline.*`: flow leadership, exactly-once
positions) are never checkpointed, whatever the filter says.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaException

from mirrorline.config.model import FlowConfig
from mirrorline.control.ahead_commits import AheadCommits
from mirrorline.control.checkpoint_log import CheckpointLog, Pending
from mirrorline.control.offset_runs import read_runs
from mirrorline.control.timestamp_translation import TimestampTranslator
from mirrorline.control.translation import SourcePartition, Translation, TranslationStore
from mirrorline.flow_context import FlowContext
from mirrorline.formats import Checkpoint
from mirrorline.group_offsets import (
    ActiveGroupError,
    MovePlan,
    OffsetAndMetadata,
    OutsideMember,
    committed_offsets,
    for_each_group,
    plan_moves,
)
from mirrorline.kafka import KafkaOperationError
from mirrorline.raw_metrics import CheckpointLatency

log = logging.getLogger(__name__)

INTERNAL_GROUP_PREFIX = "mirrorline."
_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class CheckpointStats:
    """What the flow's checkpointing did since the driver started, for the status."""

    groups: int  # groups the filter selects on the source
    checkpoints_emitted: int
    untranslated: int  # partitions without an exact translation in the last round
    latency_p50_ms: float | None  # group offsets read -> checkpoint acknowledged
    latency_p99_ms: float | None
    group_offsets_synced: int  # partition offsets committed to target groups
    groups_skipped_active: int  # sync rounds the target refused a group: it has active members
    offsets_held_back: int  # partitions the target group had moved past the checkpoint
    last_untranslated: str = ""  # one example with its reason
    # Groups with offsets translated by timestamp in the last round (data not copied by
    # Mirrorline: see `control.timestamp_translation`).
    translated_by_timestamp: tuple[str, ...] = ()


class Checkpointer:
    """Emits one flow's checkpoints and, when enabled, syncs its groups' offsets."""

    def __init__(
        self,
        context: FlowContext,
        on_written: Callable[[Sequence[CheckpointLatency]], None] | None = None,
    ) -> None:
        """`on_written` is told each write's checkpoint latencies (it must not block)."""
        self._context = context
        self._source = context.source
        self._target = context.target
        self._source_consumer = context.source.consumer_settings
        self._target_consumer = context.target.consumer_settings
        self._checkpoints = CheckpointLog(context, on_written)
        self._groups: list[str] = []
        self._untranslated: list[str] = []
        self._translated_by_timestamp: tuple[str, ...] = ()
        self._timestamps = TimestampTranslator(context)
        self._ahead = AheadCommits()
        self._synced = 0
        self._skipped_active = 0
        self._held_back = 0
        self._held_at: dict[tuple[str, str, int], tuple[int, int]] = {}

    @property
    def flow(self) -> FlowConfig:
        """The flow with its current run-time list changes (`FlowContext.follow`)."""
        return self._context.flow

    def forget(self) -> None:
        """Read the checkpoints topic again before the next round (another driver wrote it)."""
        self._checkpoints.forget()

    def refresh_groups(self) -> list[str]:
        """The source's consumer groups that the flow checkpoints."""
        try:
            listed = self._source.admin.list_consumer_groups(request_timeout=_TIMEOUT_S).result(
                _TIMEOUT_S
            )
        except KafkaException as exc:
            raise KafkaOperationError(
                f"cannot list the consumer groups of {self.flow.source}: {exc.args[0].str()}"
            ) from None
        groups = sorted(
            g.group_id
            for g in listed.valid
            if not g.group_id.startswith(INTERNAL_GROUP_PREFIX)
            and self.flow.should_replicate_group(g.group_id)
        )
        if groups != self._groups:
            log.info("flow %s checkpoints %d consumer groups", self.flow.name, len(groups))
        self._groups = groups
        self._ahead.keep_groups(groups)
        return groups

    def emit(
        self,
        store: TranslationStore,
        replicated: Mapping[str, int],
        read_until: Mapping[SourcePartition, int],
    ) -> int:
        """Translate every selected group's offsets; write the changed checkpoints.

        Returns how many were written. `replicated` maps the source topics the
        flow replicates to their partition counts; `read_until` is the flow's
        next source offset per partition.
        """
        reverse: TranslationStore | None = None
        checkpoints: list[Pending] = []
        untranslated: list[str] = []
        by_timestamp: set[str] = set()
        partitions = [
            (t, p) for t, n in {**replicated, **self._from_target()}.items() for p in range(n)
        ]
        read = for_each_group(self._groups, lambda group: self._read(group, partitions))
        for group, (now, offsets) in read.items():
            for (topic, partition), committed in sorted(offsets.items()):
                read_at = now
                if topic in replicated:
                    name = self.flow.remote_topic(topic)
                    committed, read_at, translation = self._translate(
                        store, group, (topic, partition), committed, now, read_until
                    )
                elif self._came_from_target(topic):
                    if reverse is None:
                        reverse = self._reverse_store()
                    name = self.flow.policy.upstream_topic(topic) or topic
                    translation = reverse.inverse((name, partition), committed.offset)
                else:
                    continue
                if (
                    translation.offset is None
                    and topic in replicated
                    and self._copied_before_runs(
                        store, (topic, partition), committed.offset, read_until
                    )
                ):
                    translation = self._timestamps.translate(
                        (topic, partition), name, committed.offset
                    )
                if translation.offset is None:
                    untranslated.append(_describe(group, topic, partition, committed, translation))
                    continue
                if translation.by_timestamp:
                    by_timestamp.add(group)
                checkpoint = Checkpoint(
                    group, name, partition, committed.offset, translation.offset, committed.metadata
                )
                checkpoints.append((checkpoint, topic, read_at))
        written = self._checkpoints.write(checkpoints)
        self._untranslated = untranslated
        self._translated_by_timestamp = tuple(sorted(by_timestamp))
        return written

    def _read(
        self, group: str, partitions: Sequence[SourcePartition]
    ) -> tuple[float, dict[SourcePartition, OffsetAndMetadata]]:
        """When the group's offsets were read, and what they were."""
        now = time.monotonic()
        return now, committed_offsets(self._source_consumer, group, partitions, _TIMEOUT_S)

    def catch_up(self, store: TranslationStore, read_until: Mapping[SourcePartition, int]) -> int:
        """Checkpoint the commits noted ahead of the progress that it has passed since.

        Runs between rounds, as often as the flow looks at its loops: a group that
        keeps up gets its checkpoint as soon as the saved progress passes the
        commit, not at the next round. Nothing is read from the source; what the
        progress passed and cannot be translated waits for the next round.
        Returns how many checkpoints were written.
        """
        checkpoints: list[Pending] = []
        for key in self._ahead.keys():
            group, topic, partition = key
            until = read_until.get((topic, partition))
            reached = self._ahead.reached(key, until) if until is not None else None
            if reached is None:
                continue
            committed, read_at = reached
            translation = store.translate((topic, partition), committed.offset, until)
            if translation.offset is not None:
                name = self.flow.remote_topic(topic)
                checkpoint = Checkpoint(
                    group, name, partition, committed.offset, translation.offset, committed.metadata
                )
                checkpoints.append((checkpoint, topic, read_at))
        return self._checkpoints.write(checkpoints)

    def noted(self) -> bool:
        """Whether commits ahead of the progress wait for it (`catch_up` has work)."""
        return len(self._ahead) > 0

    def _translate(
        self,
        store: TranslationStore,
        group: str,
        partition: SourcePartition,
        committed: OffsetAndMetadata,
        read_at: float,
        read_until: Mapping[SourcePartition, int],
    ) -> tuple[OffsetAndMetadata, float, Translation]:
        """The commit to checkpoint for a replicated partition, when it was read, and its
        translation: the group's current one, or while that is ahead of the progress,
        the newest earlier one the progress has reached (`control.ahead_commits`)."""
        until = read_until.get(partition)
        key = (group, *partition)
        if until is None or committed.offset <= until:
            self._ahead.forget(key)
        else:
            self._ahead.note(key, committed, read_at)
            reached = self._ahead.reached(key, until)
            if reached is not None:
                committed, read_at = reached
        return committed, read_at, store.translate(partition, committed.offset, until)

    def sync_group_offsets(self) -> int:
        """Commit the checkpointed offsets to idle target groups; the partitions moved."""
        wanted: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        selected = set(self._groups)
        for (group, topic, partition), checkpoint in self._checkpoints.emitted().items():
            if group in selected:
                wanted.setdefault(group, {})[(topic, partition)] = OffsetAndMetadata(
                    checkpoint.downstream_offset, checkpoint.metadata
                )
        moved = 0
        synced = for_each_group(sorted(wanted), lambda group: self._sync(group, wanted[group]))
        for group, plan in synced.items():
            if plan is None:
                self._skipped_active += 1  # its consumers' offsets win
                continue
            self._hold_back(group, plan.held_back)
            moved += len(plan.moves)
        self._synced += moved
        return moved

    def _sync(
        self, group: str, offsets: Mapping[SourcePartition, OffsetAndMetadata]
    ) -> MovePlan | None:
        """Commit what moves forward to the target group; None if it has active members."""
        with OutsideMember(self._target_consumer, group, _TIMEOUT_S) as member:
            plan = plan_moves(member.committed(offsets), offsets)
            try:
                member.commit(plan.moves)
            except ActiveGroupError:
                return None
        return plan

    def _hold_back(self, group: str, held_back: Mapping[SourcePartition, tuple[int, int]]) -> None:
        """Count the partitions left ahead of their checkpoint; say so once per position."""
        self._held_back += len(held_back)
        for (topic, partition), (committed, checkpointed) in held_back.items():
            key = (group, topic, partition)
            if self._held_at.get(key) == (committed, checkpointed):
                continue
            self._held_at[key] = (committed, checkpointed)
            log.info(
                "flow %s: group %s is at offset %d of %s[%d] on %s, ahead of its checkpoint "
                "%d: left where its own consumers put it",
                self.flow.name,
                group,
                committed,
                topic,
                partition,
                self.flow.target,
                checkpointed,
            )

    def stats(self) -> CheckpointStats:
        p50, p99 = self._checkpoints.latency_percentiles()
        return CheckpointStats(
            groups=len(self._groups),
            checkpoints_emitted=self._checkpoints.count,
            untranslated=len(self._untranslated),
            latency_p50_ms=p50,
            latency_p99_ms=p99,
            group_offsets_synced=self._synced,
            groups_skipped_active=self._skipped_active,
            offsets_held_back=self._held_back,
            last_untranslated=self._untranslated[0] if self._untranslated else "",
            translated_by_timestamp=self._translated_by_timestamp,
        )

    def close(self) -> None:
        self._checkpoints.close()

    @staticmethod
    def _copied_before_runs(
        store: TranslationStore,
        partition: SourcePartition,
        committed: int,
        read_until: Mapping[SourcePartition, int],
    ) -> bool:
        """Whether `committed` lies in data the flow read past but its runs do not cover:
        copied before them (by MirrorMaker 2 or another tool)."""
        until = read_until.get(partition)
        return until is not None and committed < until and store.precedes_runs(partition, committed)

    def _came_from_target(self, topic: str) -> bool:
        return self.flow.policy.topic_source(topic) == self.flow.target

    def _from_target(self) -> dict[str, int]:
        """Remote topics on the source that came from the target: a group's way back."""
        try:
            topics = self._source.admin.list_topics(timeout=_TIMEOUT_S).topics
        except KafkaException as exc:
            raise KafkaOperationError(
                f"cannot list the topics of {self.flow.source}: {exc.args[0].str()}"
            ) from None
        return {
            name: len(meta.partitions)
            for name, meta in topics.items()
            if meta.error is None and self._came_from_target(name)
        }

    def _reverse_store(self) -> TranslationStore:
        """The runs of the opposite flow (target->source), kept on this flow's source."""
        store = TranslationStore()
        opposite = f"{self.flow.target}->{self.flow.source}"
        store.load(read_runs(self._source_consumer, opposite, missing_ok=True))
        return store


def _describe(
    group: str, topic: str, partition: int, committed: OffsetAndMetadata, t: Translation
) -> str:
    return f"group {group} at offset {committed.offset} of {topic}[{partition}]: {t.reason}"
