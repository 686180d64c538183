"""A replication (flow) as the service reports it: its state, health and the reason for both.

The state comes from the drivers' status samples (`FlowHistory.current_status`),
checked against what the service sees itself:

- the target cluster does not answer the service: `degraded` (the drivers
  cannot write there either), with the cluster's error and the last state a
  driver reported;
- no driver has reported for `stale_after_ms` (three status intervals plus
  ten seconds): `unknown`, with how long and what the last report said; a
  flow whose last report is `stopped` stays `stopped`;
- otherwise the reported state and reason: `starting`, `running`, `standby`
  (no driver leads it; the reason names the active one when known),
  `degraded` (a cluster does not answer the driver), `failed`, `stopped`.

Health sums the state up for dashboards and alerts: `healthy` (running, no
problem), `warning` (running with problems, starting, standby), `unhealthy`
(degraded, failed, unknown: also a flow no driver has reported), `inactive`
(stopped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mirrorline.raw_metrics import StatusSample
from mirrorline.service.target_view import TargetView

STALE_GRACE_MS = 10_000
DEFAULT_INTERVAL_MS = 5_000


@dataclass(frozen=True)
class Replication:
    source: str
    target: str
    state: str
    health: str
    reason: str
    active_driver: str | None = None
    reported_by: str | None = None  # the driver whose status this is
    status_time_ms: int | None = None
    last_heartbeat_ms: int | None = None
    last_checkpoint_ms: int | None = None
    exactly_once: bool = False
    topics: dict[str, str] = field(default_factory=dict)  # source topic -> remote topic
    problems: tuple[str, ...] = ()
    last_verification: dict[str, Any] | None = None  # `VerificationSummary.to_dict()`

    @property
    def flow(self) -> str:
        return f"{self.source}->{self.target}"


def replication(view: TargetView, flow: str, source: str, now_ms: int) -> Replication:
    """The replication `flow` (into `view`'s cluster) as of `now_ms`; call under `view.read`."""
    history = view.histories.get(flow)
    status = history.current_status() if history is not None else None
    state, reason = _state(view, status, now_ms)
    checkpoints = view.checkpoints.get(flow, {})
    last_checkpoint = max((e.written_ms for e in checkpoints.values()), default=None)
    topics = view.published.get(flow) or (dict(status.topics) if status is not None else {})
    verification = view.verifications.get(flow)
    return Replication(
        source=source,
        target=view.alias,
        state=state,
        health=health_of(state, status),
        reason=reason,
        active_driver=_active_driver(status),
        reported_by=status.origin.driver if status is not None else None,
        status_time_ms=status.origin.time_ms if status is not None else None,
        last_heartbeat_ms=view.heartbeats.get(flow),
        last_checkpoint_ms=last_checkpoint,
        exactly_once=status.exactly_once if status is not None else False,
        topics=dict(sorted(topics.items())),
        problems=status.problems if status is not None else (),
        last_verification=verification.to_dict() if verification is not None else None,
    )


def health_of(state: str, status: StatusSample | None) -> str:
    if state == "running":
        return "warning" if status is not None and status.problems else "healthy"
    if state in ("starting", "standby"):
        return "warning"
    if state in ("degraded", "failed", "unknown"):
        return "unhealthy"
    return "inactive"  # paused or stopped


def _state(view: TargetView, status: StatusSample | None, now_ms: int) -> tuple[str, str]:
    last = _last_report(status, now_ms)
    if not view.verdict.reachable:
        return "degraded", (
            f"target cluster {view.alias} does not answer the service: {view.verdict.error}"
            + (f"; {last}" if last else "")
        )
    if status is None:
        if not view.caught_up:
            return "unknown", "the service is still reading the cluster's metrics"
        return "unknown", "no driver has reported this flow within the service's history"
    if status.state == "stopped":
        return "stopped", status.reason
    stale_after = 3 * (status.interval_ms or DEFAULT_INTERVAL_MS) + STALE_GRACE_MS
    if now_ms - status.origin.time_ms > stale_after:
        silent = (now_ms - status.origin.time_ms) // 1000
        return "unknown", f"no driver has reported for {silent}s; {last}"
    return status.state, status.reason


def _last_report(status: StatusSample | None, now_ms: int) -> str:
    if status is None:
        return ""
    age = max(0, now_ms - status.origin.time_ms) // 1000
    reason = f" ({status.reason})" if status.reason else ""
    return f"{status.origin.driver} reported {status.state}{reason} {age}s ago"


def _active_driver(status: StatusSample | None) -> str | None:
    if status is None:
        return None
    return status.active_driver or (status.origin.driver if status.state != "standby" else None)
