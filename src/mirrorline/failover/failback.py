"""Failback B->A after a failover A->B: copy back only the delta, then fail over planned.

After a failover A->B, producers write to B, into the topics named like A's
(`orders` on B: B's own topic under the default policy, the remote topic
itself under the identity policy). Everything B held of them at failover is
already on A; what was written since is the **delta**. The failover recorded
where each of those partitions ended (`delta_starts` in its state file).

The protocol:

1. **check** (`delta.py`) that B still holds every recorded offset (log
   start <= recorded). If not, the records between are on neither cluster
   and only `--full-resync` (start at B's log start) can go on.
2. **start the reverse flow B->A at the recorded offsets**, so that it copies
   the delta alone: stop it (`ControlStore.set_state`, control topic on A),
   write a position request (`ControlStore.request_positions`), wait until a
   driver leading B->A has saved it as the flow's progress (the request is
   gone from the control topic), then set it running. Partitions B->A already
   has progress for (it ran before, or an earlier run of this command got
   that far) are left where they are: requesting an older offset would copy
   records twice.
3. **planned failover B->A** (`planned.run_planned`, its own state file): the
   operator stops producers on B; the command waits for lag 0, stops B->A,
   and moves the groups to A. A group's offsets on B come back exactly: on
   the topics B->A replicates through its checkpoints, on the copies of A's
   topics (`A.orders` on B) through the inverse of A->B's offset runs.
4. **resume A->B**: it continues from its progress at failover, so it
   copies what producers write to A from now on; the records B->A brought to
   A are not copied back (the default policy's names show their origin, the
   identity policy's provenance headers do).

The failover's state file records the failback, so that running the command
again continues, and a finished failback says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirrorline.control.control_store import ControlStore
from mirrorline.failover.context import (
    FailoverContext,
    FailoverError,
    Options,
    Reporter,
)
from mirrorline.failover.delta import DeltaCheck, check_delta
from mirrorline.failover.planned import run_planned
from mirrorline.failover.state import (
    FailbackRecord,
    FailoverState,
    archive_state,
    load_state,
    now_ms,
    save_state,
    state_file_name,
)
from mirrorline.operations.failure import EXIT_FAILED, EXIT_USAGE

Partition = tuple[str, int]


@dataclass(frozen=True)
class FailbackOptions:
    state_path: Path  # the failover's (A->B) state file
    reverse_state_path: Path  # the planned failover B->A's
    dry_run: bool = False
    full_resync: bool = False
    force: bool = False
    timeout: float = 300.0


def run_failback(
    back: FailoverContext, options: FailbackOptions, reporter: Reporter
) -> dict[str, Any]:
    """Fail back over the flow `back` (B->A) after the recorded failover A->B; the report."""
    home, away = back.flow.target, back.flow.source
    failover = _failover(back, options)
    report: dict[str, Any] = {
        "ok": False,
        "command": "failback",
        "flow": back.name,
        "source": away,
        "target": home,
        "dry_run": options.dry_run,
        "full_resync": options.full_resync,
        "state_file": str(options.state_path),
        "already_done": False,
    }
    if failover.failback is not None and failover.failback.finished_ms:
        reporter.say(f"the failback to {home} is already done ({options.state_path})")
        report.update(ok=True, already_done=True)
        report["next_steps"] = _next_steps(back, failover)
        return report
    if not back.flow.enabled:
        raise FailoverError(
            f"{back.name} is not enabled in {back.config.file}: set {back.name}.enabled = true "
            f"(it copies the delta back to {home}) and run a driver with that file",
            EXIT_USAGE,
        )
    checks = _delta_checks(back, failover, options, reporter)
    report["delta"] = [c.to_dict() for c in checks]
    report["delta_records"] = sum(c.delta or 0 for c in checks)
    if options.dry_run:
        report["plan"] = _plan(back, checks)
        report["ok"] = True
        return report
    if failover.failback is None or failover.failback.full_resync != options.full_resync:
        failover.failback = FailbackRecord(now_ms(), full_resync=options.full_resync)
    positions = _start_positions(back, checks, failover, options, reporter)
    report["positions"] = [[t, p, o] for (t, p), o in sorted(positions.items())]
    _run(back, options, reporter)
    planned = Options(options.reverse_state_path, force=options.force, timeout=options.timeout)
    report["failover"] = run_planned(back, planned, reporter)
    report["failover"].pop("next_steps", None)  # the failback's own say what comes next
    failover.failback.finished_ms = now_ms()
    save_state(options.state_path, failover)
    if options.reverse_state_path.exists():
        archive_state(options.reverse_state_path)
    original = f"{home}->{away}"
    store = ControlStore(back.source.clients())
    try:
        store.set_state(original, "running", timeout=back.source.timeout)
    finally:
        store.close()
    reporter.say(f"resumed {original}: {away} is a replica of {home} again")
    report.update(ok=True, finished=True, next_steps=_next_steps(back, failover))
    return report


def _failover(back: FailoverContext, options: FailbackOptions) -> FailoverState:
    home, away = back.flow.target, back.flow.source
    failover = load_state(options.state_path)
    if failover is None:
        raise FailoverError(
            f"no failover {home}->{away} is recorded in {options.state_path}: failback needs "
            "the state file its failover wrote (--state-file)",
            EXIT_FAILED,
        )
    if (failover.source, failover.target) != (home, away):
        raise FailoverError(
            f"{options.state_path} records a failover of {failover.flow}, not {home}->{away}",
            EXIT_USAGE,
        )
    if not failover.finished:
        raise FailoverError(
            f"the failover {failover.flow} recorded in {options.state_path} is not finished: "
            f"run `mirrorline failover --from {home} --to {away} --{failover.mode}` again first",
            EXIT_FAILED,
        )
    return failover


def _delta_checks(
    back: FailoverContext,
    failover: FailoverState,
    options: FailbackOptions,
    reporter: Reporter,
) -> list[DeltaCheck]:
    """Per partition of the topics producers wrote on B: can the delta alone be copied?"""
    flow = back.effective_flow()
    on_away = back.source.topics()
    topics = sorted(t for t in failover.topics if t in on_away)
    ignored = [t for t in topics if not flow.should_replicate_topic(t)]
    for topic in ignored:
        reporter.say(
            f"{back.name} does not replicate {topic}: what was written to it on "
            f"{back.flow.source} stays there (check {back.name}.topics)",
            "yellow",
        )
    partitions = [(t, p) for t in topics if t not in ignored for p in range(on_away[t])]
    ends = back.source.end_offsets(partitions)
    starts = back.source.start_offsets(partitions)
    recorded = {tp: o for tp, o in failover.delta_starts.items() if tp in ends}
    checks = check_delta(recorded, starts, ends, full_resync=options.full_resync)
    gone = [c.reason() for c in checks if not c.ok]
    if gone:
        raise FailoverError(
            f"{back.flow.source} no longer holds everything written since the failover: the "
            "delta cannot be copied alone. --full-resync copies everything "
            f"{back.flow.source} holds of these partitions instead (records already on "
            f"{back.flow.target} are copied again)",
            EXIT_FAILED,
            gone,
        )
    return checks


def _start_positions(
    back: FailoverContext,
    checks: list[DeltaCheck],
    failover: FailoverState,
    options: FailbackOptions,
    reporter: Reporter,
) -> dict[Partition, int]:
    """Have the reverse flow start at the checked offsets; the offsets requested."""
    assert failover.failback is not None
    progress = back.positions.progress()
    kept = {(c.topic, c.partition) for c in checks if (c.topic, c.partition) in progress}
    if kept:
        reporter.say(
            f"{back.name} already has progress for {len(kept)} partitions: left where it is",
            "yellow",
        )
    wanted = {
        (c.topic, c.partition): c.start
        for c in checks
        if c.start is not None and (c.topic, c.partition) not in kept
    }
    failover.failback.positions = dict(wanted)
    save_state(options.state_path, failover)
    if not wanted:
        return wanted
    control = back.wanted()
    if control.state != "stopped":
        back.set_state("stopped", current=control)
    pending = control.positions
    if pending is None or dict(pending.offsets) != wanted:
        pending = back.request_positions(wanted)
    reporter.say(
        f"asked {back.name} to start at the offsets recorded at failover "
        f"({len(wanted)} partitions); a driver leading {back.name} applies them: run one "
        f"with {back.config.file} if none does"
    )
    with reporter.waiting(f"waiting for a driver of {back.name} to apply the start offsets") as w:
        saved = back.control.wait_saved(
            back.name,
            pending.id,
            options.timeout,
            on_wait=lambda: w.update(detail="position request pending"),
        )
    if not saved:
        raise FailoverError(
            f"no driver applied the start offsets of {back.name} within "
            f"{options.timeout:.0f}s: run a driver with {back.name} enabled, then run "
            "this command again",
            EXIT_FAILED,
        )
    return wanted


def _run(back: FailoverContext, options: FailbackOptions, reporter: Reporter) -> None:
    """Set the reverse flow running and wait until a driver reports it so."""
    control = back.wanted()
    if control.state != "running":
        back.set_state("running", current=control)
    with reporter.waiting(f"waiting for {back.name} to run") as wait:
        running = back.reports.wait_for(
            ("running",),
            since_ms=None,
            timeout=options.timeout,
            on_wait=lambda r: wait.update(detail=f"status: {r.state if r else 'none'}"),
        )
    if running is None:
        last = back.replication()
        raise FailoverError(
            f"{back.name} does not report running after {options.timeout:.0f}s "
            f"(last status: {last.state if last else 'no status'}); run the command again "
            "once it does",
            EXIT_FAILED,
        )


def _plan(back: FailoverContext, checks: list[DeltaCheck]) -> list[str]:
    away, home = back.flow.source, back.flow.target
    delta = sum(c.delta or 0 for c in checks)
    return [
        f"start {back.name} at the offsets recorded at failover: {len(checks)} partitions, "
        f"{delta} records written on {away} since",
        f"planned failover {back.name}: wait for lag 0 (stop producers on {away}), stop "
        f"{back.name}, move the consumer groups to {home}",
        f"resume {home}->{away}",
    ]


def _next_steps(back: FailoverContext, failover: FailoverState) -> list[str]:
    away, home = back.flow.source, back.flow.target
    copies = sorted({back.flow.remote_topic(t) for t in failover.topics} - set(failover.topics))
    steps = [
        f"Point producers at {home} again: the same topic names "
        f"({', '.join(sorted(failover.topics)) or 'none'}).",
        f"Point consumers at {home}: their groups resume where they stopped on {away}"
        + (f"; what was written on {away} meanwhile is in {', '.join(copies)}" if copies else "")
        + ".",
    ]
    return steps


def reverse_state_path(state_path: Path, away: str, home: str) -> Path:
    """The planned failover B->A's state file, beside the failover's."""
    return state_path.with_name(state_file_name(away, home))
