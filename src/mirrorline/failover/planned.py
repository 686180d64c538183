"""Planned failover of a flow A->B: move producers and consumers to B losing nothing.

The protocol, each step written to the state file once done (`state.py`), so
that running the command again continues where it stopped:

1. **pre-flight** (`preflight.py`): the flow is enabled, a driver leads it
   and reports running; the groups it checkpoints; what is stale. A failed
   check refuses the failover before anything changes.
2. **drain**: the operator stops producers on A; the command waits until
   the flow's lag is 0 on every partition (`lag.py`). At the deadline it
   refuses, unless `--force`, which goes on and records what is left behind.
3. **stop** the flow (`steps.stop_flow`) and wait for its status to say so.
4. **record** the positions (`steps.record_offsets`): the target's log end
   offsets are where failback will start copying back.
5. **groups**: wait until each group's committed offsets on A are covered by a
   final checkpoint (`groups.translate_group`), then commit the translated
   offsets to the group on B, or let the driver do it when it syncs group
   offsets (`groups.move_group`). A group that still has members on B, or
   that is ahead on B, is reported and refused (exit 1) unless `--force`.

A dry run does the pre-flight checks and measures the lag, then says what
the steps would do; it changes nothing and writes no state.
"""

from __future__ import annotations

import time
from typing import Any

from mirrorline.config.model import FlowConfig
from mirrorline.failover.context import (
    FailoverContext,
    FailoverError,
    Options,
    Reporter,
)
from mirrorline.failover.handover import checkpointed_groups, move_groups
from mirrorline.failover.lag import FlowLag
from mirrorline.failover.preflight import FlowFacts, evaluate
from mirrorline.failover.state import (
    DRAINED,
    GROUPS,
    RECORDED,
    STEPS,
    STOPPED,
    FailoverState,
    now_ms,
    save_state,
)
from mirrorline.failover.steps import (
    POLL_S,
    next_steps,
    offsets_rows,
    record_offsets,
    state_to_continue,
    stop_flow,
)
from mirrorline.operations.failure import EXIT_FAILED

Partition = tuple[str, int]


def run_planned(ctx: FailoverContext, options: Options, reporter: Reporter) -> dict[str, Any]:
    """Run (or continue) a planned failover of `ctx`'s flow; the report document."""
    state = state_to_continue(ctx, options.state_path, "planned", dry_run=options.dry_run)
    report: dict[str, Any] = _report(ctx, options, state)
    if state.finished:
        report.update(ok=True, already_done=True, groups=state.groups)
        report["left_behind"] = offsets_rows(state.left_behind or {})
        report["next_steps"] = next_steps(ctx, state)
        reporter.say(f"the failover of {ctx.name} is already done ({options.state_path})")
        return report
    report["resumed_after"] = [s for s in STEPS if state.done(s)]
    control = ctx.wanted()
    if not state.done(STOPPED) and not (state.done(DRAINED) and control.state == "stopped"):
        effective = control.effective(ctx.flow)
        replication = ctx.replication()
        facts = gather_facts(ctx, effective, control.state, replication)
        checks = evaluate(facts)
        report["preflight"] = [c.to_dict() for c in checks]
        report["groups_found"] = list(facts.groups)
        lag = ctx.positions.measure(effective)
        report["lag"] = _lag_document(lag)
        if options.dry_run:
            report["plan"] = _plan(ctx, state, options)
            report["ok"] = not any(c.failed for c in checks)
            return report
        failed = [f"{c.name}: {c.detail}" for c in checks if c.failed]
        if failed:
            raise FailoverError(
                f"pre-flight checks of {ctx.name} failed", EXIT_FAILED, failed, report=report
            )
        last_running = replication.status_time_ms if replication is not None else None
        # Drained again when continuing: producers may have written since the first run.
        lag = _drain(ctx, effective, options, reporter, lag)
        state.forced = state.forced or (options.force and bool(lag.total))
        state.mark(DRAINED)
        save_state(options.state_path, state)
        report["stopped"] = stop_flow(
            ctx,
            state,
            reporter,
            timeout=options.timeout,
            last_running_ms=last_running,
            require_driver=True,
        )
        save_state(options.state_path, state)
    elif options.dry_run:
        report["plan"] = _plan(ctx, state, options)
        return report
    elif not state.done(STOPPED):
        report["stopped"] = stop_flow(
            ctx, state, reporter, timeout=options.timeout, last_running_ms=None, require_driver=True
        )
        save_state(options.state_path, state)
    if not state.done(RECORDED):
        lag = ctx.positions.measure(ctx.effective_flow())
        report["recorded"] = record_offsets(ctx, state, lag)
        save_state(options.state_path, state)
        if state.left_behind:
            reporter.say(
                f"{state.left_behind_total()} records on {ctx.flow.source} were not replicated "
                "before the flow stopped (see left_behind)",
                "yellow",
            )
    report["left_behind"] = offsets_rows(state.left_behind or {})
    if not state.done(GROUPS):
        outcomes = move_groups(ctx, state, options, reporter)
        state.groups = [o.to_dict() for o in outcomes]
        report["groups"] = state.groups
        problems = [f"group {o.group}: {p}" for o in outcomes for p in o.problems]
        if problems and not options.force:
            save_state(options.state_path, state)
            raise FailoverError(
                f"the consumer groups of {ctx.name} could not all be moved to "
                f"{ctx.flow.target}; the flow is stopped and its offsets recorded: fix what is "
                "named and run the command again",
                EXIT_FAILED,
                problems,
                report=report,
            )
        state.mark(GROUPS)
    report["groups"] = state.groups
    state.finish()
    save_state(options.state_path, state)
    report["ok"] = True
    report["finished"] = True
    report["next_steps"] = next_steps(ctx, state)
    return report


def _report(ctx: FailoverContext, options: Options, state: FailoverState) -> dict[str, Any]:
    return {
        "ok": False,
        "command": "failover",
        "mode": "planned",
        "flow": ctx.name,
        "source": ctx.flow.source,
        "target": ctx.flow.target,
        "dry_run": options.dry_run,
        "forced": options.force,
        "state_file": str(options.state_path),
        "already_done": False,
        "started_ms": state.started_ms,
    }


def gather_facts(
    ctx: FailoverContext, flow: FlowConfig, wanted_state: str, replication: Any
) -> FlowFacts:
    """What the pre-flight checks need, from both clusters and the flow's status."""
    on_source = ctx.source.topics()
    selected = {t: n for t, n in on_source.items() if flow.should_replicate_topic(t)}
    interval_topics = flow.interval("refresh.topics")
    interval_checkpoints = flow.interval("emit.checkpoints")
    return FlowFacts(
        flow=ctx.name,
        enabled=flow.enabled,
        config_file=ctx.config.file,
        wanted_state=wanted_state,
        replication=replication,
        groups=checkpointed_groups(ctx, flow),
        checkpoints_enabled=interval_checkpoints is not None,
        checkpoint_interval_s=interval_checkpoints.total_seconds()
        if interval_checkpoints
        else None,
        refresh_interval_s=interval_topics.total_seconds() if interval_topics else None,
        selected=selected,
        published=ctx.positions.topics(),
        target_partitions=ctx.target.topics(),
        now_ms=now_ms(),
    )


def _drain(
    ctx: FailoverContext, flow: FlowConfig, options: Options, reporter: Reporter, lag: FlowLag
) -> FlowLag:
    """Wait until the flow's lag is 0 (or, forced, take it as it is)."""
    if options.force:
        if lag.total:
            reporter.say(
                f"--force: not waiting for {lag.total} records still to replicate", "yellow"
            )
        return lag
    reporter.say(
        f"stop the producers writing to {ctx.flow.source}: waiting until {ctx.name} has "
        "replicated every record"
    )
    first = lag.total or 0
    deadline = time.monotonic() + options.timeout
    with reporter.waiting(f"draining {ctx.name}", total=max(first, 1)) as wait:
        while lag.total:
            if time.monotonic() > deadline:
                lagging = lag.lagging()
                raise FailoverError(
                    f"{ctx.name} still lags by {lag.total} records after {options.timeout:.0f}s: "
                    f"are producers still writing to {ctx.flow.source}? Stop them and run the "
                    "command again, or give --force to fail over without those records",
                    EXIT_FAILED,
                    [f"{t}[{p}]: {n} records" for (t, p), n in list(lagging.items())[:20]],
                )
            first = max(first, lag.total or 0)
            wait.update(
                completed=first - (lag.total or 0),
                total=first,
                detail=f"{lag.total} records to go",
            )
            time.sleep(POLL_S)
            lag = ctx.positions.measure(flow)
        wait.update(completed=first, total=max(first, 1), detail="lag 0")
    return lag


def _lag_document(lag: FlowLag) -> dict[str, Any]:
    return {
        "total": lag.total,
        "partitions": offsets_rows(lag.lagging()),
        "topics": dict(lag.topics),
    }


def _plan(ctx: FailoverContext, state: FailoverState, options: Options) -> list[str]:
    source, target = ctx.flow.source, ctx.flow.target
    wait = "take the lag as it is (--force)" if options.force else "wait until the lag is 0"
    plan = [
        (DRAINED, f"{wait} (producers on {source} must stop)"),
        (STOPPED, f"stop {ctx.name} through its control record and wait for it to report so"),
        (
            RECORDED,
            f"record the log end offsets of the remote topics on {target} in {options.state_path}",
        ),
        (
            GROUPS,
            f"wait for the final checkpoint of each group and set its offsets on {target}",
        ),
    ]
    return [f"{'done: ' if state.done(step) else ''}{text}" for step, text in plan]
