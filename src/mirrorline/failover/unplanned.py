"""Unplanned failover of a flow A->B: A is gone, move what can be moved to B, say what is lost.

Nothing here needs A. Every request to A waits the short source timeout at
most, once (`steps.source_reachable`); when A does not answer, its part of
the report is left out instead of failing the command. The steps, each
written to the state file once done (`state.py`):

1. **stop** the flow through its control record on B (`steps.stop_flow`): a
   driver that still runs, or starts later, does not replicate; when no
   driver reports the flow, the record alone does it.
2. **record** the positions (`steps.record_offsets`) and the timestamp of the
   newest record of each remote partition on B: the **loss window**
   (`loss.py`). When A answers, the records it holds that B does not.
3. **groups**: each group's latest checkpoint on B is committed to the group
   on B, under `group_offsets`' rules (no active members, never backwards
   unless `--force`). A group with active members on B is left for a second
   run once its consumers stop (exit 1); a group that would move backwards or
   has no checkpoint is reported and left as it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from mirrorline.checkpoints import CheckpointKey
from mirrorline.config.model import FlowConfig
from mirrorline.failover.context import (
    FailoverContext,
    FailoverError,
    Options,
    Reporter,
)
from mirrorline.failover.groups import GroupOutcome, latest_checkpoints, move_group
from mirrorline.failover.handover import checkpointed_groups
from mirrorline.failover.lag import lag_of
from mirrorline.failover.loss import loss_window
from mirrorline.failover.state import GROUPS, RECORDED, STEPS, STOPPED, FailoverState, now_ms
from mirrorline.failover.steps import (
    next_steps,
    offsets_rows,
    record_offsets,
    save,
    source_reachable,
    state_to_continue,
    stop_flow,
)
from mirrorline.operations.failure import EXIT_FAILED

# A driver that still runs the flow says "stopped" within seconds; one that does not
# run is not waited for long.
_STOP_WAIT_S = 30.0


def run_unplanned(ctx: FailoverContext, options: Options, reporter: Reporter) -> dict[str, Any]:
    """Run (or continue) an unplanned failover of `ctx`'s flow; the report document."""
    state = state_to_continue(ctx, options.state_path, "unplanned", dry_run=options.dry_run)
    report: dict[str, Any] = {
        "ok": False,
        "command": "failover",
        "mode": "unplanned",
        "flow": ctx.name,
        "source": ctx.flow.source,
        "target": ctx.flow.target,
        "dry_run": options.dry_run,
        "forced": options.force,
        "state_file": str(options.state_path),
        "already_done": state.finished,
        "started_ms": state.started_ms,
        "resumed_after": [s for s in STEPS if state.done(s)],
    }
    if state.finished:
        reporter.say(f"the failover of {ctx.name} is already done ({options.state_path})")
        report.update(ok=True, loss_window=_loss(state), groups=state.groups)
        report["next_steps"] = next_steps(ctx, state)
        return report
    reachable, why = source_reachable(ctx)
    report["source_reachable"] = reachable
    report["source_error"] = why or None
    if not reachable:
        reporter.say(f"{ctx.flow.source} does not answer: going on without it ({why})", "yellow")
    if options.dry_run:
        return _dry_run(ctx, state, report, reachable)
    if not state.done(STOPPED):
        report["stopped"] = stop_flow(
            ctx,
            state,
            reporter,
            timeout=min(options.timeout, _STOP_WAIT_S),
            last_running_ms=None,
            require_driver=False,
        )
        save(options.state_path, state, options.dry_run)
    if not state.done(RECORDED):
        _record(ctx, state, reachable)
        save(options.state_path, state, options.dry_run)
    report["loss_window"] = _loss(state)
    report["left_behind"] = offsets_rows(state.left_behind or {})
    if not state.done(GROUPS):
        outcomes = move_groups(ctx, state, reachable, allow_backwards=options.force)
        state.groups = [o.to_dict() for o in outcomes]
        save(options.state_path, state, options.dry_run)
        active = [o for o in outcomes if o.status == "active"]
        if active:
            report["groups"] = state.groups
            raise FailoverError(
                f"{len(active)} consumer groups have active members on {ctx.flow.target}: stop "
                "their consumers and run the command again to set their offsets",
                EXIT_FAILED,
                [f"group {o.group}: {p}" for o in active for p in o.problems],
                report=report,
            )
        state.mark(GROUPS)
    report["groups"] = state.groups
    state.finish()
    save(options.state_path, state, options.dry_run)
    report.update(ok=True, finished=True, next_steps=next_steps(ctx, state))
    return report


def _record(ctx: FailoverContext, state: FailoverState, reachable: bool) -> None:
    lag = ctx.positions.measure(ctx.effective_flow(), source_reachable=reachable)
    record_offsets(ctx, state, lag)
    remote = state.target_end_offsets
    starts = ctx.target.start_offsets(remote)
    state.newest_timestamps = ctx.target.newest_timestamps(remote, starts)


def _loss(state: FailoverState) -> list[dict[str, Any]]:
    """The loss window per topic, from what the state recorded."""
    remote_of = state.topics
    counts = Counter(r for r, _ in state.target_end_offsets)
    partitions = {t: counts.get(r, 0) for t, r in remote_of.items()}
    not_replicated = None
    if state.source_end_offsets is not None:
        not_replicated = lag_of(state.source_end_offsets, state.progress)
    topics = loss_window(remote_of, partitions, state.newest_timestamps, now_ms(), not_replicated)
    return [t.to_dict() for t in topics]


def move_groups(
    ctx: FailoverContext, state: FailoverState, reachable: bool, *, allow_backwards: bool
) -> list[GroupOutcome]:
    """Commit each group's latest checkpoint to the group on the target."""
    flow = ctx.effective_flow()
    checkpoints = ctx.checkpoints(flow)
    groups = _checkpointed_groups(flow, checkpoints)
    sources = {r: t for t, r in state.topics.items()}
    outcomes = []
    for group in groups:
        translations = latest_checkpoints(group, checkpoints, sources)
        outcomes.append(
            move_group(ctx.target, group, translations, allow_backwards=allow_backwards)
        )
    if reachable:
        for group in checkpointed_groups(ctx, flow):
            if group not in groups:
                outcomes.append(
                    GroupOutcome(
                        group,
                        "untranslated",
                        problems=[
                            f"no checkpoint in {flow.checkpoints_topic} on {ctx.flow.target}: "
                            "its consumers start on the target as their auto.offset.reset says"
                        ],
                    )
                )
    return sorted(outcomes, key=lambda o: o.group)


def _dry_run(
    ctx: FailoverContext, state: FailoverState, report: dict[str, Any], reachable: bool
) -> dict[str, Any]:
    """What the failover would do and lose, without changing anything."""
    if state.done(RECORDED):
        report["loss_window"] = _loss(state)
    else:
        preview = FailoverState.new("unplanned", ctx.flow.source, ctx.flow.target, "")
        _record(ctx, preview, reachable)
        report["loss_window"] = _loss(preview)
    flow = ctx.effective_flow()
    report["groups_found"] = _checkpointed_groups(flow, ctx.checkpoints(flow))
    report["plan"] = [
        f"{'done: ' if state.done(STOPPED) else ''}stop {ctx.name} through its control record "
        f"on {ctx.flow.target}",
        f"{'done: ' if state.done(RECORDED) else ''}record the offsets on {ctx.flow.target} "
        f"and the loss window in {report['state_file']}",
        f"set the latest checkpointed offsets of {len(report['groups_found'])} groups on "
        f"{ctx.flow.target} (groups without active members; never backwards"
        f"{', except with --force' if not report['forced'] else ' (--force: backwards too)'})",
    ]
    report["ok"] = True
    return report


def _checkpointed_groups(
    flow: FlowConfig, checkpoints: Mapping[CheckpointKey, object]
) -> list[str]:
    """The groups the flow selects that have checkpoints on the target."""
    return sorted({g for g, _, _ in checkpoints if flow.should_replicate_group(g)})
