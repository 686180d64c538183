"""Moving consumer groups to the failover's target: translated offsets, committed safely.

A group that fails over must resume on the target where it stopped on the
source: each committed source offset U becomes the target offset holding the
first record the group has not read. Three sources of that translation, in
this order:

1. the flow's **checkpoint** of (group, topic, partition), but only one whose
   upstream offset is U itself: an older checkpoint would make the group read
   again what it read since (a planned failover waits for the final one);
2. the **inverse of the opposite flow's offset runs** (`TranslationStore.inverse`),
   for a topic that came from the target (failback: on a flow B->A, `A.orders`
   on B goes back to `orders` on A) or whose records below U the flow itself
   never replicated (identity policy, failback: B's `orders` holds A's records
   up to the failover, which B->A skips). The runs are exact, so nothing is
   re-read;
3. nothing: the partition is reported untranslated, with the reason.

Offsets reach the target group under `group_offsets`' two rules: never to a
group with active members on the target, never backwards from what the group
committed there (unless forced). When the flow syncs group offsets itself
(`sync.group.offsets.enabled`), its driver is given the chance to do it first;
what it has not done within its interval is committed here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mirrorline.checkpoints import CheckpointKey
from mirrorline.cluster_access import ClusterAccess, Unreachable
from mirrorline.control.translation import Translation
from mirrorline.formats import Checkpoint
from mirrorline.group_offsets import ActiveGroupError, OffsetAndMetadata, plan_moves
from mirrorline.kafka import KafkaOperationError

Partition = tuple[str, int]
# (source partition, committed offset) -> a translation through offset runs, or None.
Fallback = Callable[[Partition, int], Translation | None]

# (source partition, committed offset) -> whether its checkpoint is a translation by
# timestamp: the offset precedes the flow's offset runs (`control.timestamp_translation`).
ByTimestamp = Callable[[Partition, int], bool]

VIA_CHECKPOINT = "checkpoint"
VIA_TIMESTAMP = "checkpoint, by timestamp"
VIA_RUNS = "offset runs"


@dataclass(frozen=True)
class PartitionTranslation:
    """One partition of a group: its committed offset on the source and where it resumes."""

    topic: str  # on the source
    partition: int
    committed: int  # on the source; -1 when the source did not answer (unplanned)
    target_topic: str
    offset: int | None  # on the target; None: not translated
    metadata: str = ""
    via: str = ""
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.offset is not None


def translate_group(
    group: str,
    committed: Mapping[Partition, OffsetAndMetadata],
    names: Mapping[str, str],
    checkpoints: Mapping[CheckpointKey, Checkpoint],
    fallback: Fallback | None = None,
    by_timestamp: ByTimestamp | None = None,
) -> list[PartitionTranslation]:
    """Where `group` resumes on the target, for each committed partition of a topic in `names`.

    `names` maps source topics to their names on the target (remote topics,
    and topics that came from the target to their original names).
    """
    found: list[PartitionTranslation] = []
    for (topic, partition), at in sorted(committed.items()):
        name = names.get(topic)
        if name is None:
            continue
        checkpoint = checkpoints.get((group, name, partition))
        if (
            checkpoint is not None
            and checkpoint.upstream_offset == at.offset
            and checkpoint.downstream_offset >= 0
        ):
            found.append(
                PartitionTranslation(
                    topic,
                    partition,
                    at.offset,
                    name,
                    checkpoint.downstream_offset,
                    at.metadata,
                    VIA_TIMESTAMP
                    if by_timestamp is not None and by_timestamp((topic, partition), at.offset)
                    else VIA_CHECKPOINT,
                )
            )
            continue
        inverse = fallback((topic, partition), at.offset) if fallback is not None else None
        if inverse is not None and inverse.offset is not None:
            found.append(
                PartitionTranslation(
                    topic, partition, at.offset, name, inverse.offset, at.metadata, VIA_RUNS
                )
            )
            continue
        if checkpoint is None:
            reason = "no checkpoint yet"
            if inverse is not None and inverse.reason:
                reason += f" (offset runs: {inverse.reason})"
        else:
            reason = (
                f"the latest checkpoint is of offset {checkpoint.upstream_offset}, the group "
                f"committed {at.offset}"
            )
        found.append(
            PartitionTranslation(topic, partition, at.offset, name, None, at.metadata, "", reason)
        )
    return found


def latest_checkpoints(
    group: str,
    checkpoints: Mapping[CheckpointKey, Checkpoint],
    sources: Mapping[str, str],
) -> list[PartitionTranslation]:
    """The group's latest checkpoints as they are (unplanned: the source cannot be asked).

    `sources` maps remote topics back to their source topics, for the report.
    """
    return [
        PartitionTranslation(
            sources.get(c.topic, ""),
            c.partition,
            c.upstream_offset,
            c.topic,
            c.downstream_offset,
            c.metadata,
            VIA_CHECKPOINT,
        )
        for (g, _, _), c in sorted(checkpoints.items())
        if g == group and c.downstream_offset >= 0
    ]


@dataclass
class GroupOutcome:
    """What happened to one group on the target."""

    group: str
    status: str  # moved, unchanged, synced, active, held back, untranslated, failed
    members: int = 0
    partitions: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "status": self.status,
            "members": self.members,
            "partitions": self.partitions,
            "problems": self.problems,
            "warnings": self.warnings,
        }


def move_group(
    target: ClusterAccess,
    group: str,
    translations: Iterable[PartitionTranslation],
    *,
    allow_backwards: bool,
    synced_by_driver: Callable[[], bool] | None = None,
    sync_wait_s: float = 0.0,
) -> GroupOutcome:
    """Commit the translated offsets to `group` on the target, keeping the two rules.

    `synced_by_driver`, when the flow syncs group offsets itself, is asked
    until `sync_wait_s` has passed whether the driver has done it; what is
    left is committed here.
    """
    chosen = list(translations)
    wanted = {
        (t.target_topic, t.partition): OffsetAndMetadata(t.offset, t.metadata)
        for t in chosen
        if t.offset is not None
    }
    rows = {(t.target_topic, t.partition): _row(t) for t in chosen}
    untranslated = [
        f"{t.topic or t.target_topic}[{t.partition}] at {t.committed}: {t.reason}"
        for t in chosen
        if t.offset is None
    ]
    outcome = GroupOutcome(
        group, "untranslated" if untranslated else "unchanged", problems=list(untranslated)
    )
    if not wanted:
        outcome.partitions = [rows[k] for k in sorted(rows)]
        return outcome
    before = target.describe(group, wanted)
    outcome.members = before.members
    if before.active:
        for key in wanted:
            rows[key]["action"] = "not committed"
        outcome.status = "active"
        outcome.problems.append(
            f"{before.members} active members on {target.alias} (state {before.state}): stop "
            "its consumers there and run the command again"
        )
        outcome.partitions = [rows[k] for k in sorted(rows)]
        return outcome
    plan = plan_moves(before.offsets, wanted, allow_backwards=allow_backwards)
    if plan.moves and synced_by_driver is not None:
        deadline = time.monotonic() + sync_wait_s
        while time.monotonic() < deadline and not synced_by_driver():
            time.sleep(0.5)
        before = target.describe(group, wanted)
        plan = plan_moves(before.offsets, wanted, allow_backwards=allow_backwards)
        if not plan.moves:
            outcome.status = "synced"
    for key in plan.unchanged:
        rows[key]["action"] = "unchanged" if outcome.status != "synced" else "synced"
    for key, (ahead, held) in plan.held_back.items():
        rows[key]["action"] = "held back"
        rows[key]["committed_on_target"] = ahead
        outcome.problems.append(
            f"{key[0]}[{key[1]}]: the group is at {ahead} on {target.alias}, ahead of "
            f"{held}: moving it back would make its consumers read again (--force does)"
        )
    if plan.moves:
        try:
            target.commit(group, plan.moves)
        except ActiveGroupError as exc:
            outcome.status = "active"
            outcome.problems.append(str(exc))
            outcome.partitions = [rows[k] for k in sorted(rows)]
            return outcome
        except KafkaOperationError as exc:
            raise Unreachable(f"{target.alias}: {exc}") from None
        after = target.describe(group, plan.moves).offsets
        for key, offset in plan.moves.items():
            now = after.get(key)
            if now is None or now.offset != offset.offset:
                outcome.problems.append(
                    f"{key[0]}[{key[1]}]: {now.offset if now else 'no offset'} instead of "
                    f"{offset.offset} after the commit (did a consumer commit meanwhile?)"
                )
            committed = before.offsets.get(key)
            rows[key]["action"] = (
                "set"
                if committed is None
                else ("forward" if committed.offset < offset.offset else "backwards")
            )
        outcome.status = "moved"
    if plan.held_back and outcome.status != "moved":
        outcome.status = "held back"
    if untranslated and outcome.status in ("unchanged", "moved", "synced"):
        outcome.status = "partial"
    outcome.partitions = [rows[k] for k in sorted(rows)]
    return outcome


def _row(t: PartitionTranslation) -> dict[str, Any]:
    return {
        "topic": t.topic or None,
        "partition": t.partition,
        "committed_on_source": t.committed if t.committed >= 0 else None,
        "target_topic": t.target_topic,
        "offset": t.offset,
        "via": t.via or None,
        "action": "untranslated" if t.offset is None else "",
        "reason": t.reason or None,
    }
