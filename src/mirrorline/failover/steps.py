"""The steps planned and unplanned failovers share: stop the flow, record offsets, say what next.

**Stop.** The flow is stopped through its control record on the target
(`ControlStore.set_state(flow, "stopped")`), which every driver of the flow
follows within about a second: the leading driver stops its query, and its
status (raw metrics) says `stopped`. Its checkpoint and group offset sync
loops keep running, so the groups' last offsets still reach the target. The
step waits for a `stopped` status newer than the last `running` one seen, so
an old status from before the request does not count. When no driver
reports the flow (unplanned: it may have died with the source), the control
record alone is the step: a driver that starts later reads it and does not
replicate.

**Record.** With the flow stopped, its positions no longer move: the flow's
progress, the source's log end offsets (when it answers) and so the records
left behind, the target's log end offsets of every remote topic partition,
and the target's log end offsets of the topics producers will write after
the failover (`delta.py`: where failback starts copying back).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mirrorline.cluster_access import Unreachable
from mirrorline.failover.context import (
    FailoverContext,
    FailoverError,
    Reporter,
)
from mirrorline.failover.lag import FlowLag
from mirrorline.failover.state import (
    RECORDED,
    STOPPED,
    FailoverState,
    Mode,
    archive_state,
    load_state,
    save_state,
)
from mirrorline.operations.failure import EXIT_FAILED, EXIT_USAGE

# How often a wait asks again (status, lag, checkpoints, control records).
POLL_S = 0.5


def state_to_continue(
    ctx: FailoverContext, path: Path, mode: Mode, *, dry_run: bool
) -> FailoverState:
    """The failover recorded in `path` to continue, or a new one.

    A failover that was failed back since is done with: its file is moved
    aside (not in a dry run) and a new failover starts.
    """
    state = load_state(path)
    if state is not None and state.failback is not None and state.failback.finished_ms:
        if not dry_run:
            archive_state(path)
        state = None
    if state is None:
        return FailoverState.new(mode, ctx.flow.source, ctx.flow.target, ctx.config.file)
    if state.flow != ctx.name:
        raise FailoverError(
            f"{path} records a failover of {state.flow}, not {ctx.name}: give another --state-file",
            EXIT_USAGE,
        )
    if state.mode != mode:
        other = "--unplanned" if state.mode == "unplanned" else "--planned"
        raise FailoverError(
            f"{path} records {'an' if state.mode == 'unplanned' else 'a'} {state.mode} failover "
            f"of {ctx.name}{' (finished)' if state.finished else ''}: continue it with {other}, "
            "or move the file away to start anew",
            EXIT_USAGE,
        )
    return state


def save(path: Path, state: FailoverState, dry_run: bool) -> None:
    if not dry_run:
        save_state(path, state)


def stop_flow(
    ctx: FailoverContext,
    state: FailoverState,
    reporter: Reporter,
    *,
    timeout: float,
    last_running_ms: int | None,
    require_driver: bool,
) -> str:
    """Ask for the flow to stop and wait for its status to say so; what happened, in words.

    `last_running_ms` is the time of the latest `running` status seen before
    the request. Without `require_driver`, a flow no driver reports is left
    to its control record.
    """
    control = ctx.wanted()
    if control.state != "stopped":
        ctx.set_state("stopped", current=control)
        reporter.say(
            f"asked the drivers of {ctx.name} to stop it (control topic on {ctx.target.alias})"
        )
    if ctx.replication() is None and not require_driver:
        state.mark(STOPPED)
        return f"no driver reports {ctx.name}: the control record keeps it stopped when one starts"
    with reporter.waiting(f"waiting for {ctx.name} to report stopped") as wait:
        stopped = ctx.reports.wait_for(
            ("stopped",),
            since_ms=last_running_ms,
            timeout=timeout,
            on_wait=lambda r: wait.update(detail=f"status: {r.state if r else 'none'}"),
        )
    if stopped is None:
        last = ctx.replication()
        now = "no status" if last is None else f"{last.state}: {last.reason}"
        if not require_driver:
            state.mark(STOPPED)
            return (
                f"{ctx.name} has not reported stopped within {timeout:.0f}s (last status "
                f"{now}); its control record keeps it stopped"
            )
        raise FailoverError(
            f"{ctx.name} did not report stopped within {timeout:.0f}s (last status "
            f"{now}); its drivers follow the control topic: is one running and reaching "
            f"{ctx.target.alias}? Run the command again to keep waiting",
            EXIT_FAILED,
        )
    state.mark(STOPPED)
    return f"{ctx.name} is stopped ({stopped.reason or 'as asked'})"


def record_offsets(ctx: FailoverContext, state: FailoverState, lag: FlowLag) -> dict[str, Any]:
    """Write the stopped flow's positions into `state`; a summary for the report."""
    state.topics = dict(lag.topics)
    state.progress = dict(lag.progress)
    state.source_end_offsets = None if lag.source_ends is None else dict(lag.source_ends)
    state.left_behind = None if lag.lag is None else lag.lagging()
    on_target = ctx.target.topics()
    remote = [(r, p) for t, r in lag.topics.items() for p in range(on_target.get(r, 0))]
    state.target_end_offsets = ctx.target.end_offsets(remote)
    # Where producers write after the failover: the target's topic named like the source's.
    local = [(t, p) for t in lag.topics if t in on_target for p in range(on_target[t])]
    state.delta_starts = ctx.target.end_offsets(local)
    state.mark(RECORDED)
    return {
        "remote_partitions": len(state.target_end_offsets),
        "records_on_target": sum(state.target_end_offsets.values()),
        "left_behind": state.left_behind_total() if state.left_behind is not None else None,
    }


def source_reachable(ctx: FailoverContext) -> tuple[bool, str]:
    """Whether the source answers now (within its short timeout), and if not, why."""
    try:
        ctx.source.topics()
    except Unreachable as exc:
        return False, str(exc)
    return True, ""


def next_steps(ctx: FailoverContext, state: FailoverState) -> list[str]:
    """What the operator must still do, in order, after a failover."""
    source, target = ctx.flow.source, ctx.flow.target
    pairs = sorted(state.topics.items())
    names = _names([t for t, _ in pairs])
    renamed = [f"{t} -> {r}" for t, r in pairs if t != r]
    if renamed:
        steps = [
            f"Point producers at {target}: they keep their topic names ({names}), which on "
            f"{target} are its own topics, created on first write unless you create them.",
            f"Point consumers at {target}: what {source} held is in {_names(renamed)} (their "
            "groups' offsets are set there); subscribe to those and to the producers' topics.",
        ]
    else:
        steps = [
            f"Point producers at {target}: the same topic names ({names}).",
            f"Point consumers at {target}: the same topic names; their groups resume where "
            "they stopped.",
        ]
    steps.append(
        f"{ctx.name} stays stopped. Later, `mirrorline failback --from {target} --to {source}` "
        f"brings producers and consumers back to {source}, copying only what was written on "
        f"{target} meanwhile; it needs this failover's state file."
    )
    return steps


def offsets_rows(offsets: Mapping[tuple[str, int], int]) -> list[dict[str, Any]]:
    return [{"topic": t, "partition": p, "records": n} for (t, p), n in sorted(offsets.items())]


def _names(names: list[str], most: int = 8) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
