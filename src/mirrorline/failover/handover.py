"""The groups step of a planned failover: which groups, and waiting for their final checkpoints.

The groups are those of the source the flow checkpoints (its group filter,
run-time lists included; Mirrorline's own `mirrorline.*` groups never). Their
topics are the ones the flow replicates, plus the copies on the source of the
target's own topics (a group's way back after an earlier failover: known from
the opposite flow's published remote-topic pairs, or from MM2 names).

The step waits until every committed offset of every group is translated
(`groups.translate_group`): by a checkpoint of exactly that offset, written
by the flow's checkpoint loop that keeps running while the flow is stopped,
or, where no checkpoint can come, through the opposite flow's offset runs.
Then each group is moved (`groups.move_group`). At `--timeout` what is still
untranslated is reported per partition with its reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from mirrorline.cluster_access import ClusterAccess
from mirrorline.config.model import FlowConfig
from mirrorline.control.checkpointing import INTERNAL_GROUP_PREFIX
from mirrorline.control.offset_runs import read_runs
from mirrorline.control.remote_topics import read_remote_topics
from mirrorline.control.translation import Translation, TranslationStore
from mirrorline.failover.context import (
    FailoverContext,
    FailoverError,
    Options,
    Reporter,
)
from mirrorline.failover.groups import (
    ByTimestamp,
    Fallback,
    GroupOutcome,
    PartitionTranslation,
    move_group,
    translate_group,
)
from mirrorline.failover.state import FailoverState
from mirrorline.failover.steps import POLL_S
from mirrorline.kafka import KafkaOperationError
from mirrorline.operations.failure import EXIT_FAILED

Partition = tuple[str, int]


def checkpointed_groups(ctx: FailoverContext, flow: FlowConfig) -> list[str]:
    """The source's consumer groups the flow checkpoints (as its checkpointer selects them)."""
    return [
        g
        for g in ctx.source.groups()
        if not g.startswith(INTERNAL_GROUP_PREFIX) and flow.should_replicate_group(g)
    ]


def move_groups(
    ctx: FailoverContext, state: FailoverState, options: Options, reporter: Reporter
) -> list[GroupOutcome]:
    """Wait for the groups' final checkpoints, then move each group to the target."""
    flow = ctx.effective_flow()
    groups = checkpointed_groups(ctx, flow)
    if not groups:
        return []
    on_source = ctx.source.topics()
    names, came_back = topic_names(ctx, flow, state, on_source)
    partitions = [(t, p) for t in names for p in range(on_source.get(t, 0))]
    fallback = _fallback(ctx, state, came_back)
    by_timestamp = _by_timestamp(ctx, flow.name, came_back)
    interval = flow.interval("emit.checkpoints")
    deadline = time.monotonic() + options.timeout
    translations: dict[str, list[PartitionTranslation]] = {}
    members: dict[str, int] = {}
    with reporter.waiting(
        f"waiting for the final checkpoints of {len(groups)} groups", total=len(groups)
    ) as wait:
        while True:
            checkpoints = ctx.checkpoints(flow)
            for group in groups:
                described = ctx.source.describe(group, partitions)
                members[group] = described.members
                translations[group] = translate_group(
                    group, described.offsets, names, checkpoints, fallback, by_timestamp
                )
            ready = [g for g, found in translations.items() if all(t.ok for t in found)]
            wait.update(completed=len(ready), detail=f"{len(ready)} of {len(groups)} groups")
            if len(ready) == len(groups) or time.monotonic() > deadline or interval is None:
                break
            time.sleep(POLL_S)
    sync = flow.interval("sync.group.offsets")
    sync_wait = 0.0 if sync is None else min(options.timeout, 2 * sync.total_seconds() + 5)
    outcomes = []
    for group in groups:
        if not translations[group]:
            continue  # nothing committed on the replicated topics
        outcome = move_group(
            ctx.target,
            group,
            translations[group],
            allow_backwards=options.force,
            sync_wait_s=sync_wait,
        )
        if members[group]:
            outcome.warnings.append(
                f"{members[group]} members still consume on {ctx.flow.source}: offsets they "
                f"commit there from now on do not reach {ctx.flow.target}"
            )
        reporter.say(f"group {group}: {outcome.status}")
        outcomes.append(outcome)
    return outcomes


def topic_names(
    ctx: FailoverContext, flow: FlowConfig, state: FailoverState, on_source: Iterable[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Source topic -> its name on the target, and the part of it that came from the target.

    The replicated topics keep their remote names. Topics on the source that
    are copies of the target's (a group's way back after an earlier
    failover) go to their original names there: known from the opposite
    flow's published pairs on the source, or, for MM2's remote topics, from
    their names.
    """
    names = dict(state.topics)
    came_back: dict[str, str] = {}
    opposite = f"{flow.target}->{flow.source}"
    try:
        published = read_remote_topics(ctx.source.consumer_settings, timeout=ctx.source.timeout)
    except KafkaOperationError as exc:
        raise FailoverError(f"{ctx.source.alias}: {exc}", EXIT_FAILED) from None
    for original, copy in published.get(opposite, {}).items():
        came_back[copy] = original
    for topic in on_source:
        if topic not in came_back and flow.policy.topic_source(topic) == flow.target:
            came_back[topic] = flow.policy.upstream_topic(topic) or topic
    for topic, original in came_back.items():
        names.setdefault(topic, original)
    return names, came_back


def _by_timestamp(ctx: FailoverContext, flow: str, came_back: Mapping[str, str]) -> ByTimestamp:
    """Whether the checkpoint of a replicated topic's offset was translated by timestamp:
    the offset precedes the flow's runs, in data the flow did not copy itself."""
    store = TranslationStore()
    store.load(read_runs(ctx.target.consumer_settings, flow, missing_ok=True))
    return lambda tp, offset: tp[0] not in came_back and store.precedes_runs(tp, offset)


def _fallback(ctx: FailoverContext, state: FailoverState, came_back: Mapping[str, str]) -> Fallback:
    """Translations through offset runs, for what the flow's own checkpoints cannot give.

    Only for topics that are copies of the target's (`came_back`): read
    backwards, the opposite flow's runs (kept on the source) give the exact
    offset on the target. For a topic the flow also replicates (identity
    policy), only where the flow's own runs cannot translate the offset.
    """
    stores: dict[str, TranslationStore] = {}
    flow = ctx.flow
    opposite = f"{flow.target}->{flow.source}"

    def store(name: str, access: ClusterAccess) -> TranslationStore:
        if name not in stores:
            loaded = TranslationStore()
            loaded.load(read_runs(access.consumer_settings, name, missing_ok=True))
            stores[name] = loaded
        return stores[name]

    def translate(tp: Partition, committed: int) -> Translation | None:
        topic, partition = tp
        if topic not in came_back:
            return None
        if topic in state.topics:
            own = store(flow.name, ctx.target).translate(tp, committed, state.progress.get(tp))
            if own.ok:
                return None  # the flow's checkpoint will say it
        return store(opposite, ctx.source).inverse((came_back[topic], partition), committed)

    return translate
