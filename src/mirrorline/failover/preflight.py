"""Pre-flight checks of a planned failover: is the flow in a state worth failing over from?

Before anything changes, the command looks at the flow from outside, the
way `mirrorline status` does, and says what it finds:

- the flow is enabled in the configuration and nobody asked for it to be
  paused or stopped (the control topic);
- a driver leads it and reports `running` (its raw metrics on the target,
  read through `service.monitor.Monitor`);
- the consumer groups it checkpoints (their offsets are what moves to the
  target), and that checkpoints are on;
- whether its control loops are current: a loop that failed since its last
  success is reported by the driver (`<loop> failed: ...`), a source topic the
  filter selects but the flow has not published yet means the topic refresh
  has not run since the topic appeared, a remote topic with fewer partitions
  than its source means the same for a partition increase, and the age of
  the latest checkpoint is compared with its interval.

The first two decide (`failed`): there is nothing to fail over from without
them. What is stale is a `warning`: the operator decides whether to wait for
the next round or go on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from mirrorline.service.replications import Replication

Verdict = Literal["ok", "warning", "failed"]

# The driver names a failed loop "<loop> failed: <error>" in its problems.
_LOOPS = (
    "topic refresh",
    "topic config sync",
    "topic ACL sync",
    "consumer group refresh",
    "checkpoints",
    "group offset sync",
)


@dataclass(frozen=True)
class Check:
    name: str
    verdict: Verdict
    detail: str

    @property
    def failed(self) -> bool:
        return self.verdict == "failed"

    def to_dict(self) -> dict[str, str]:
        return {"check": self.name, "verdict": self.verdict, "detail": self.detail}


@dataclass(frozen=True)
class FlowFacts:
    """What the pre-flight checks look at, gathered by the caller."""

    flow: str
    enabled: bool
    config_file: str
    wanted_state: str  # what the control topic asks for: running, paused, stopped
    replication: Replication | None  # None: no driver has ever reported the flow
    groups: Sequence[str]  # the source's consumer groups the flow checkpoints
    checkpoints_enabled: bool
    checkpoint_interval_s: float | None
    refresh_interval_s: float | None
    selected: Mapping[str, int]  # source topics the filter selects now -> partitions
    published: Mapping[str, str]  # source topic -> remote topic, as the flow publishes
    target_partitions: Mapping[str, int]  # topic on the target -> partitions
    now_ms: int


def evaluate(facts: FlowFacts) -> list[Check]:
    """Every check's verdict, in the order an operator reads them."""
    checks = [_enabled(facts), _driver(facts)]
    checks.append(_groups(facts))
    checks.append(_loops(facts))
    checks.append(_topic_refresh(facts))
    checks.append(_checkpoint_age(facts))
    return checks


def _enabled(facts: FlowFacts) -> Check:
    if not facts.enabled:
        return Check(
            "flow enabled",
            "failed",
            f"{facts.flow} is not enabled in {facts.config_file}: set {facts.flow}.enabled = true "
            "and run a driver with it",
        )
    if facts.wanted_state != "running":
        return Check(
            "flow enabled",
            "failed",
            f"{facts.flow} is {facts.wanted_state} by an operator's request (control topic): "
            "resume it first",
        )
    return Check("flow enabled", "ok", f"{facts.flow} is enabled")


def _driver(facts: FlowFacts) -> Check:
    r = facts.replication
    if r is None:
        return Check(
            "driver", "failed", f"no driver has reported {facts.flow}: start `mirrorline driver`"
        )
    reason = f" ({r.reason})" if r.reason else ""
    if r.state != "running" or not r.active_driver:
        return Check(
            "driver",
            "failed",
            f"{facts.flow} is {r.state}{reason}; a failover needs a driver leading it and "
            "replicating",
        )
    return Check("driver", "ok", f"{r.active_driver} leads {facts.flow} and reports running")


def _groups(facts: FlowFacts) -> Check:
    if not facts.checkpoints_enabled:
        if facts.groups:
            return Check(
                "consumer groups",
                "warning",
                f"{len(facts.groups)} groups ({_names(facts.groups)}) but emit.checkpoints."
                "enabled is false: their offsets cannot be translated",
            )
        return Check("consumer groups", "ok", "checkpoints are off and no group is selected")
    if not facts.groups:
        return Check(
            "consumer groups", "warning", "the flow checkpoints no consumer group on the source"
        )
    return Check(
        "consumer groups", "ok", f"{len(facts.groups)} checkpointed: {_names(facts.groups)}"
    )


def _loops(facts: FlowFacts) -> Check:
    problems = facts.replication.problems if facts.replication is not None else ()
    failing = [p for p in problems if any(p.startswith(f"{loop} failed") for loop in _LOOPS)]
    if failing:
        return Check("control loops", "warning", "stale: " + "; ".join(failing))
    return Check("control loops", "ok", "no control loop reports a failure")


def _topic_refresh(facts: FlowFacts) -> Check:
    every = _every(facts.refresh_interval_s)
    missing = sorted(t for t in facts.selected if t not in facts.published)
    short = sorted(
        f"{remote} ({facts.target_partitions.get(remote, 0)} of {facts.selected[topic]})"
        for topic, remote in facts.published.items()
        if topic in facts.selected
        and facts.target_partitions.get(remote, 0) < facts.selected[topic]
    )
    stale = []
    if missing:
        stale.append(f"not replicated yet: {_names(missing)}")
    if short:
        stale.append(f"fewer partitions on the target: {_names(short)}")
    if stale:
        return Check(
            "topic refresh",
            "warning",
            f"stale ({'; '.join(stale)}); the next topic refresh{every} creates them",
        )
    return Check(
        "topic refresh", "ok", f"{len(facts.published)} topics replicated, each on the target"
    )


def _checkpoint_age(facts: FlowFacts) -> Check:
    r = facts.replication
    if not facts.checkpoints_enabled or not facts.groups:
        return Check("checkpoints", "ok", "nothing to checkpoint")
    if r is None or r.last_checkpoint_ms is None:
        return Check("checkpoints", "warning", "no checkpoint written yet")
    age_s = max(0, facts.now_ms - r.last_checkpoint_ms) / 1000
    interval = facts.checkpoint_interval_s or 0
    if interval and age_s > interval:
        # Checkpoints are written when a group's offset moves: an old one may be current.
        return Check(
            "checkpoints",
            "warning",
            f"the latest checkpoint is {age_s:.0f}s old (interval {interval:.0f}s): current "
            "only if no group committed since",
        )
    return Check("checkpoints", "ok", f"the latest checkpoint is {age_s:.0f}s old")


def _every(seconds: float | None) -> str:
    return f" (every {seconds:.0f}s)" if seconds else ""


def _names(names: Sequence[str], most: int = 10) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
