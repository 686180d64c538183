"""A flow's settings as typed fields, for the code that acts on them.

`FlowConfig.value(name)` answers any setting by name with a value of type
`Any`: right for tools that list every setting with its origin, wrong for the
driver, where a misspelt name or a forgotten `int(...)` shows only at run
time. `FlowSettings.of(flow)` reads, once, every flow setting that the
driver's parts act on, checks the type each parser promised, and hands them
out as fields (`settings.offset_lag_max`) that a type checker follows.

Intervals are in seconds, None when the loop is disabled (`<loop>.enabled =
false`). Replication factors keep Kafka's `-1` for the broker's default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from mirrorline.config.model import FlowConfig

__all__ = ["FlowSettings", "LoopIntervals", "PaceSettings"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class LoopIntervals:
    """How often each control loop of a flow runs, in seconds; None: not at all."""

    refresh_topics: float | None
    refresh_groups: float | None
    sync_topic_configs: float | None
    sync_topic_acls: float | None
    emit_checkpoints: float | None
    emit_heartbeats: float | None
    emit_metrics: float | None
    sync_group_offsets: float | None


@dataclass(frozen=True)
class PaceSettings:
    """How a flow sizes its micro-batches (`engine.batch_pace`)."""

    duration_s: float  # micro-batch.duration.ms: how long a backlog batch aims to take
    max_records: int | None  # micro-batch.max.records; None: no bound but the duration


@dataclass(frozen=True)
class FlowSettings:
    """The typed settings of one flow (see the module's docstring)."""

    replication_factor: int  # remote topics and Mirrorline's own topics on the target
    offset_syncs_replication_factor: int
    checkpoints_replication_factor: int
    heartbeats_replication_factor: int
    offset_lag_max: int  # an offset sync at least every this many records
    max_poll_records: int  # most records one poll of a source consumer hands out
    # How micro-batches are sized (`engine.batch_pace`).
    micro_batch: PaceSettings
    # Most Spark tasks per batch when `tasks.max` is set; None: the executors' task slots.
    tasks_max: int | None
    exactly_once: bool  # exactly.once.source.support = enabled
    tolerate_refusals: bool  # errors.tolerance = all
    dead_letter_topic: str | None  # None: refused records are not kept
    dead_letter_replication_factor: int
    emit_offset_syncs: bool
    # data.path.mode = real-time: how long a batch lasts (ms); None: micro-batches.
    real_time_batch_ms: int | None
    intervals: LoopIntervals

    @classmethod
    def of(cls, flow: FlowConfig) -> FlowSettings:
        """Read `flow`'s settings; a value of an unexpected type is a `TypeError` naming it."""
        tasks = flow.setting("tasks.max")
        return cls(
            replication_factor=_typed(flow, "replication.factor", int),
            offset_syncs_replication_factor=_typed(
                flow, "offset-syncs.topic.replication.factor", int
            ),
            checkpoints_replication_factor=_typed(
                flow, "checkpoints.topic.replication.factor", int
            ),
            heartbeats_replication_factor=_typed(flow, "heartbeats.topic.replication.factor", int),
            offset_lag_max=_typed(flow, "offset.lag.max", int),
            max_poll_records=_typed(flow, "max.poll.records", int),
            micro_batch=PaceSettings(
                duration_s=_typed(flow, "micro-batch.duration.ms", int) / 1000,
                max_records=_typed(flow, "micro-batch.max.records", int) or None,
            ),
            tasks_max=None if tasks.origin.is_default else _typed(flow, "tasks.max", int),
            exactly_once=_typed(flow, "exactly.once.source.support", str) == "enabled",
            tolerate_refusals=_typed(flow, "errors.tolerance", str) == "all",
            dead_letter_topic=_typed(flow, "errors.deadletterqueue.topic.name", str) or None,
            dead_letter_replication_factor=_typed(
                flow, "errors.deadletterqueue.topic.replication.factor", int
            ),
            emit_offset_syncs=_typed(flow, "emit.offset-syncs.enabled", bool),
            real_time_batch_ms=(
                _typed(flow, "real-time.batch.ms", int)
                if _typed(flow, "data.path.mode", str) == "real-time"
                else None
            ),
            intervals=LoopIntervals(
                refresh_topics=_seconds(flow, "refresh.topics"),
                refresh_groups=_seconds(flow, "refresh.groups"),
                sync_topic_configs=_seconds(flow, "sync.topic.configs"),
                sync_topic_acls=_seconds(flow, "sync.topic.acls"),
                emit_checkpoints=_seconds(flow, "emit.checkpoints"),
                emit_heartbeats=_seconds(flow, "emit.heartbeats"),
                emit_metrics=_seconds(flow, "emit.metrics"),
                sync_group_offsets=_seconds(flow, "sync.group.offsets"),
            ),
        )


def _typed(flow: FlowConfig, name: str, kind: type[_T]) -> _T:
    value = flow.value(name)
    # bool is an int in Python: a flag where a number is expected is a mistake too.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(
            f"flow {flow.name}: setting {name} is {type(value).__name__}, expected {kind.__name__}"
        )
    return value


def _seconds(flow: FlowConfig, loop: str) -> float | None:
    interval = flow.interval(loop)
    return interval.total_seconds() if interval is not None else None
