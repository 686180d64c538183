"""What a flow reports about itself: its status, its latest batch, and the wording of both.

The driver shows `FlowStatus` every few seconds and the service serves it, so
each state comes with a reason an operator can act on: a cluster that does not
answer is named with librdkafka's own words (`with_outages`), and a failure
says Mirrorline's message rather than a page of Spark stack trace (`summarise`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mirrorline.control.checkpointing import CheckpointStats
from mirrorline.engine.gaps import RecordGap
from mirrorline.engine.health import ClusterVerdict


@dataclass(frozen=True)
class BatchStats:
    """One micro-batch, as the driver saw it once the executors' results were in."""

    batch_id: int
    records: int
    bytes: int
    partitions: int
    max_age_ms: int
    duration_ms: int
    finished_at_ms: int


@dataclass(frozen=True)
class FlowStatus:
    """What an operator needs to know about a flow, with the reason when it is not well."""

    flow: str
    # starting | running | standby | degraded (a cluster does not answer) | failed | stopped
    state: str
    reason: str = ""
    topics: tuple[str, ...] = ()
    partitions: int = 0
    records: int = 0
    bytes: int = 0
    problems: tuple[str, ...] = ()
    last_batch: BatchStats | None = None
    exactly_once: bool = False
    clusters: tuple[ClusterVerdict, ...] = ()  # latest verdict on source and target
    gaps: tuple[RecordGap, ...] = ()  # the latest source records lost before replication
    # Running totals since the driver started, by name, as metrics exporters read them.
    counters: Mapping[str, int] = field(default_factory=dict)
    # The latest records the target refused (errors.tolerance = all), newest last.
    refusals: tuple[str, ...] = ()
    checkpoints: CheckpointStats | None = None  # None when emit.checkpoints is disabled
    translation_runs: int = 0  # runs in the translation store (control.translation)
    translation_load_ms: int | None = None  # how long the store took to load at start
    # The driver that replicates the flow (this one when it leads); None while unknown.
    active_driver: str | None = None


def with_outages(state: str, reason: str, clusters: tuple[ClusterVerdict, ...]) -> tuple[str, str]:
    """The flow's state and reason, saying so when a cluster it needs does not answer."""
    down = "; ".join(str(v) for v in clusters if not v.reachable)
    if not down or state == "stopped":
        return state, reason
    if state == "failed":
        return state, f"{down}; retrying as soon as it answers ({reason})"
    if state == "starting":
        return state, f"{down}; the flow starts when it answers"
    return "degraded", f"{down}; replication resumes by itself when it answers"


def summarise(error: str) -> str:
    """The useful line of a Spark/Python error: Mirrorline's own message when there is one."""
    for line in error.splitlines():
        for marker in ("DeliveryFailed: ", "KafkaOperationError: "):
            if marker in line:
                return line.split(marker, 1)[1].strip()
    first = error.strip().splitlines()[0] if error.strip() else "unknown error"
    return first[:500]
