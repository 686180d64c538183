"""The REST API's documents, as pydantic models: they are the OpenAPI schema too."""

from __future__ import annotations

from pydantic import BaseModel, Field

from mirrorline.service.aggregate import MetricAnswer
from mirrorline.service.monitor import GroupCheckpoint
from mirrorline.service.replications import Replication


class ErrorDoc(BaseModel):
    """Every 4xx answer: what is wrong, and the names that exist when a name is unknown."""

    error: str
    known: list[str] | None = Field(default=None, description="The names that exist, for a 404.")


class VerificationDoc(BaseModel):
    """The flow's last `mirrorline verify` (kept on its target cluster)."""

    verdict: str = Field(description="identical or different")
    started_ms: int
    finished_ms: int
    checked: int = Field(description="Source records compared.")
    differences: int = Field(description="missing + extra + different + misplaced")
    missing: int
    extra: int
    different: int
    misplaced: int
    not_yet_copied: int = Field(description="Source offsets past the flow's progress.")
    not_covered: int = Field(description="Source offsets before the flow's first run.")
    since: str | None = None
    until: str | None = None
    topics: str | None = Field(default=None, description="The --topics selection; null: all.")


class ReplicationDoc(BaseModel):
    source: str
    target: str
    state: str = Field(
        description="starting, running, paused, standby, degraded, failed, stopped or unknown"
    )
    health: str = Field(description="healthy, warning, unhealthy or inactive")
    reason: str = Field(description="Why the replication is in this state; empty when running.")
    active_driver: str | None = Field(
        default=None, description="The driver that replicates the flow."
    )
    reported_by: str | None = Field(default=None, description="The driver whose status this is.")
    status_time_ms: int | None = Field(
        default=None, description="When that driver reported (epoch ms)."
    )
    last_heartbeat_ms: int | None = None
    last_checkpoint_ms: int | None = None
    exactly_once: bool = False
    topics: dict[str, str] = Field(
        default_factory=dict, description="Replicated source topics and their remote names."
    )
    problems: list[str] = Field(default_factory=list)
    last_verification: VerificationDoc | None = Field(
        default=None, description="The last `mirrorline verify` of the flow; null: none."
    )
    served_by: str = Field(description="The service that answered (remote querying).")
    unreachable: bool = Field(
        default=False, description="True when the remote service that serves it did not answer."
    )

    @classmethod
    def of(cls, r: Replication, served_by: str) -> ReplicationDoc:
        return cls.model_validate({**vars(r), "served_by": served_by})


class ServiceDoc(BaseModel):
    """A service that answered (or not) for the replications listed with it."""

    id: str
    url: str
    targets: list[str]
    local: bool
    reachable: bool
    error: str = ""


class ReplicationsDoc(BaseModel):
    replications: list[ReplicationDoc]
    services: list[ServiceDoc]


class PointDoc(BaseModel):
    time_ms: int = Field(description="Start of the step (epoch ms).")
    value: float


class MetricDoc(BaseModel):
    metric: str
    window: str
    window_seconds: int
    step_seconds: int
    min: float | None
    max: float | None
    avg: float | None
    sum: float
    points: list[PointDoc]

    @classmethod
    def of(cls, a: MetricAnswer) -> MetricDoc:
        return cls.model_validate(a, from_attributes=True)


class PartitionCheckpointDoc(BaseModel):
    topic: str = Field(description="The topic's name on the target.")
    partition: int
    upstream_offset: int = Field(description="The group's committed offset on the source.")
    downstream_offset: int = Field(description="That offset translated for the target.")
    metadata: str
    age_ms: int = Field(description="How long ago the checkpoint was written.")


class GroupDoc(BaseModel):
    group: str
    partitions: list[PartitionCheckpointDoc]
    newest_age_ms: int


class GroupsDoc(BaseModel):
    source: str
    target: str
    groups: list[GroupDoc]

    @classmethod
    def of(cls, source: str, target: str, entries: list[GroupCheckpoint], now_ms: int) -> GroupsDoc:
        by_group: dict[str, list[GroupCheckpoint]] = {}
        for e in entries:
            by_group.setdefault(e.group, []).append(e)
        groups = [
            GroupDoc(
                group=group,
                partitions=[
                    PartitionCheckpointDoc(
                        topic=e.topic,
                        partition=e.partition,
                        upstream_offset=e.upstream_offset,
                        downstream_offset=e.downstream_offset,
                        metadata=e.metadata,
                        age_ms=max(0, now_ms - e.written_ms),
                    )
                    for e in items
                ],
                newest_age_ms=max(0, now_ms - max(e.written_ms for e in items)),
            )
            for group, items in sorted(by_group.items())
        ]
        return cls(source=source, target=target, groups=groups)


class WindowsDoc(BaseModel):
    """The windows metrics can be asked over, shortest first, and the one used when none is."""

    windows: list[str] = Field(description="Like 1m, 5m, 15m, 1h.")
    default: str


class ClusterHealthDoc(BaseModel):
    alias: str
    reachable: bool
    error: str
    caught_up: bool


class HealthDoc(BaseModel):
    status: str = Field(description="ok, loading (still reading history) or degraded")
    clusters: list[ClusterHealthDoc]
