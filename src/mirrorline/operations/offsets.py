"""Moving a consumer group's translated offsets onto a cluster, as `mirrorline offsets` does.

In a failover or failback a group's consumers stop on one cluster and start on
the other, where they must resume from offsets translated for that cluster.
`checkpointed_offsets` reads them from the flow's checkpoints on the target
(the latest checkpoint per partition). `apply_offsets` commits them, from
there or from a file `offsets export` wrote (`offset_files`), under the two
rules of `group_offsets`: only a group without active members is written to,
and no partition moves backwards unless the operator says so.

Before committing, every partition must exist on the target and no offset may
lie past its partition's end: such an offset was made for another cluster,
and the group's consumers would reset to `auto.offset.reset` on it. After
committing, the offsets are read back, because a consumer that joined in
between may have committed its own. `outcome_document` says what was found
and done, partition by partition, as `offsets apply --json` prints it.

Everything that asks the clusters is here; the command (`cli.offsets_cmd`)
only reads its arguments and shows the outcome (`cli.offsets_render`). A
refusal is an `Failure` carrying the command's exit code and one line
per problem, as `FailoverError` does for the failover procedures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mirrorline.checkpoints import read_checkpoints
from mirrorline.cluster_access import ClusterAccess
from mirrorline.config import MirrorConfig
from mirrorline.config.model import FlowConfig
from mirrorline.control.offset_runs import read_runs
from mirrorline.control.translation import TranslationStore
from mirrorline.group_offsets import (
    GroupOnCluster,
    MovePlan,
    OffsetAndMetadata,
    plan_moves,
)
from mirrorline.kafka import KafkaOperationError
from mirrorline.offset_files import GroupOffset
from mirrorline.operations.failure import EXIT_FAILED, Failure
from mirrorline.text import counted


@dataclass(frozen=True)
class ApplyOutcome:
    """What `apply` found and did."""

    target: str
    group: str
    before: GroupOnCluster
    wanted: dict[tuple[str, int], OffsetAndMetadata]
    plan: MovePlan
    dry_run: bool
    allow_backwards: bool
    written: bool = False  # offsets were committed
    refused: str | None = None  # why a dry run's offsets could not be written now


def checkpointed_offsets(
    loaded: MirrorConfig, source: str, target: ClusterAccess, group: str
) -> list[GroupOffset]:
    """The group's offsets from the flow's latest checkpoints on the target."""
    flow = loaded.flow(source, target.alias)
    topic = flow.checkpoints_topic
    if topic not in target.topics():
        raise Failure(
            f"{target.alias} has no topic {topic}: the flow {flow.name} has written no "
            "checkpoints there (is it running, with emit.checkpoints.enabled = true?)",
            EXIT_FAILED,
        )
    try:
        checkpoints = read_checkpoints(target.consumer_settings, topic, timeout=target.timeout)
    except KafkaOperationError as exc:
        raise Failure(f"{target.alias}: {exc}", EXIT_FAILED) from None
    offsets = [
        GroupOffset.from_checkpoint(c)
        for (g, _, _), c in sorted(checkpoints.items())
        # A negative downstream offset is no offset: MM2 writes none, never commit one.
        if g == group and c.downstream_offset >= 0
    ]
    if offsets:
        return _marked_by_timestamp(flow, target, offsets)
    groups = sorted({g for g, _, _ in checkpoints})
    listed = ", ".join(groups[:10])
    if len(groups) > 10:
        listed += f" and {len(groups) - 10} more"
    has = f"groups with checkpoints: {listed}" if groups else "it holds no checkpoints yet"
    raise Failure(
        f"no checkpoints of group {group} in {topic} on {target.alias} ({has})", EXIT_FAILED
    )


def _marked_by_timestamp(
    flow: FlowConfig, target: ClusterAccess, offsets: list[GroupOffset]
) -> list[GroupOffset]:
    """`offsets` with those translated by timestamp marked: checkpoints of offsets that
    precede the flow's runs, in data it did not copy itself."""
    store = TranslationStore()
    store.load(read_runs(target.consumer_settings, flow.name, missing_ok=True))
    marked = []
    for o in offsets:
        source_topic = flow.policy.upstream_topic(o.topic) or o.topic
        own = flow.remote_topic(source_topic) == o.topic and o.upstream_offset is not None
        if own and store.precedes_runs((source_topic, o.partition), o.upstream_offset or 0):
            o = replace(o, by_timestamp=True)
        marked.append(o)
    return marked


def apply_offsets(
    target: ClusterAccess,
    group: str,
    offsets: list[GroupOffset],
    dry_run: bool,
    allow_backwards: bool,
) -> ApplyOutcome:
    """Commit `offsets` to `group` on the target (a plan only, when `dry_run`)."""
    _check_partitions(target, group, offsets)
    wanted = {(o.topic, o.partition): OffsetAndMetadata(o.offset, o.metadata) for o in offsets}
    before = target.describe(group, wanted)
    plan = plan_moves(before.offsets, wanted, allow_backwards=allow_backwards)
    refused = _active_message(before, target.alias) if before.active else None
    if refused and not dry_run:
        raise Failure(refused, EXIT_FAILED)
    outcome = ApplyOutcome(
        target.alias, group, before, wanted, plan, dry_run, allow_backwards, refused=refused
    )
    if dry_run or not plan.moves:
        return outcome
    try:
        target.commit(group, plan.moves)
    except KafkaOperationError as exc:  # ActiveGroupError too: members joined meanwhile
        raise Failure(f"{target.alias}: {exc}", EXIT_FAILED) from None
    # Read back: a consumer that joined and committed meanwhile would be missed otherwise.
    after = target.describe(group, plan.moves).offsets
    differ = []
    for (topic, partition), offset in sorted(plan.moves.items()):
        now = after.get((topic, partition))
        if now is None or now.offset != offset.offset:
            found = "none" if now is None else now.offset
            differ.append(f"{topic} partition {partition}: {found} instead of {offset.offset}")
    if differ:
        raise Failure(
            f"group {group} on {target.alias} does not have the offsets just committed "
            "(did a consumer commit meanwhile?)",
            EXIT_FAILED,
            tuple(differ),
        )
    return replace(outcome, written=True)


def _active_message(group: GroupOnCluster, target: str) -> str:
    return (
        f"consumer group {group.group} has {counted(group.members, 'active member')} on "
        f"{target} (state {group.state}): stop its consumers first, their offsets are "
        "theirs to commit"
    )


def _check_partitions(target: ClusterAccess, group: str, offsets: list[GroupOffset]) -> None:
    """Every partition exists on the target, and no offset is past its end.

    An offset past the end would make the group's consumers reset to
    `auto.offset.reset` on their first fetch; it usually means offsets made for
    another cluster.
    """
    topics = target.topics()
    problems: list[str] = []
    present: list[tuple[str, int]] = []
    for o in offsets:
        count = topics.get(o.topic)
        if count is None:
            missing = f"topic {o.topic} does not exist on {target.alias}"
            if missing not in problems:
                problems.append(missing)
        elif not 0 <= o.partition < count:
            problems.append(
                f"{o.topic} has no partition {o.partition} on {target.alias} (it has {count})"
            )
        else:
            present.append((o.topic, o.partition))
    ends = target.end_offsets(present)
    problems += [
        f"{o.topic} partition {o.partition}: offset {o.offset} is past the end of the "
        f"partition on {target.alias} ({ends[(o.topic, o.partition)]}); are these offsets "
        "for another cluster?"
        for o in offsets
        if (o.topic, o.partition) in ends and o.offset > ends[(o.topic, o.partition)]
    ]
    if problems:
        raise Failure(
            f"cannot apply the offsets of group {group} to {target.alias}",
            EXIT_FAILED,
            tuple(problems),
        )


# --- the outcome, as `--json` prints it ----------------------------------------------


def outcome_document(
    outcome: ApplyOutcome, source: str | None, from_file: Path | None
) -> dict[str, Any]:
    """What `apply` found and did, and where the offsets came from (the flow or a file)."""
    actions = _actions(outcome)
    committed = outcome.before.offsets
    plan = outcome.plan
    return {
        "ok": outcome.refused is None,
        "group": outcome.group,
        "target": outcome.target,
        "source": source,
        "from_file": str(from_file) if from_file is not None else None,
        "dry_run": outcome.dry_run,
        "allow_backwards": outcome.allow_backwards,
        "group_state": outcome.before.state,
        "members": outcome.before.members,
        "written": outcome.written,
        "refused": outcome.refused,
        "summary": {
            "moved": len(plan.moves),
            "unchanged": len(plan.unchanged),
            "held_back": len(plan.held_back),
        },
        "partitions": [
            {
                "topic": topic,
                "partition": partition,
                "committed": committed[(topic, partition)].offset
                if (topic, partition) in committed
                else None,
                "offset": offset.offset,
                "action": actions[(topic, partition)].replace(" ", "_"),
            }
            for (topic, partition), offset in sorted(outcome.wanted.items())
        ],
    }


def _actions(outcome: ApplyOutcome) -> dict[tuple[str, int], str]:
    """Each partition's fate: set, forward, backwards, unchanged or held back."""
    committed = outcome.before.offsets
    actions: dict[tuple[str, int], str] = {}
    for tp, offset in outcome.plan.moves.items():
        current = committed.get(tp)
        if current is None:
            actions[tp] = "set"
        else:
            actions[tp] = "forward" if current.offset < offset.offset else "backwards"
    actions.update({tp: "unchanged" for tp in outcome.plan.unchanged})
    actions.update({tp: "held back" for tp in outcome.plan.held_back})
    return actions
