"""Raw metrics: what every flow's driver writes about itself into the flow's target cluster.

The driver of a flow writes three kinds of samples; the service (and `mirrorline
status`) reads them back and aggregates them over sliding windows. Nothing else
keeps state: a service that starts reads the recent samples and knows what any
other instance knows.

- `batch`: once a batch is committed (its progress saved), per source
  partition: records and bytes written, and the replication latency of its
  records (acknowledgement by the target minus the record's original
  timestamp) as min, max, sum and count. Samples of batches that are replayed
  after a crash are not written twice: only committed batches are sampled.
- `status`: every `emit.metrics.interval.seconds`, the flow's state (running,
  standby, degraded, failed, stopped, starting) and its reason as the driver
  sees it, the active driver, the replicated topics, problems, and per source
  partition the lag in records (source log end offset minus the flow's next
  offset). A driver that stops writes a last one, `stopped`.
- `checkpoints`: after each checkpoint round that wrote checkpoints, per
  (group, topic, partition) the checkpoint latency: from reading the group's
  committed offsets to the checkpoint's acknowledgement.

The topic is `mirrorline.metrics.internal` on each target cluster, one
partition shared by every flow into that cluster, time-retained
(`METRICS_TOPIC_CONFIG`), never replicated (its name ends in `.internal`). Each
record's key is ``{"flow":"east->west","version":1}``; its value is JSON in
UTF-8 with sorted keys and no spaces, and its Kafka timestamp is the sample's
`time_ms`. Every value carries:

- ``version`` (1), ``kind`` (``batch``, ``status``, ``checkpoints``);
- ``flow``, ``source``, ``target``: the flow and its cluster aliases;
- ``driver``: the driver that wrote it (`mirrorline-driver@host:pid`);
- ``time_ms``: when the sample was taken (the driver's clock, epoch ms).

and, by kind:

- batch: ``batch`` (Spark's batch id) and ``partitions``, a list of
  ``{"topic", "remote_topic", "partition", "records", "bytes",
  "latency_count", "latency_sum_ms", "latency_min_ms", "latency_max_ms"}``;
- status: ``state``, ``reason``, ``active_driver`` (null when unknown),
  ``exactly_once``, ``interval_ms`` (when the next status is due),
  ``topics`` (source topic -> remote topic), ``problems`` (a list of texts),
  ``lag``, a list of ``{"topic", "partition", "lag"}``;
- checkpoints: ``checkpoints``, a list of ``{"group", "topic",
  "remote_topic", "partition", "latency_ms"}``.

A sample with many entries is split over several records of at most
`MAX_ENTRIES` entries each (Kafka refuses records over about 1 MB). Readers
skip records of another version and records that are not JSON, so that a newer
format can be written next to this one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, TypeVar

from mirrorline.formats import json_record

METRICS_TOPIC = "mirrorline.metrics.internal"
FORMAT_VERSION = 1
# A day of samples, in hourly segments: the service reads at most its longest window.
METRICS_TOPIC_CONFIG: Mapping[str, str] = {
    "cleanup.policy": "delete",
    "retention.ms": str(24 * 3600 * 1000),
    "segment.ms": str(3600 * 1000),
}
# Most entries (partitions, lags, checkpoints) in one record.
MAX_ENTRIES = 2000

Kind = Literal["batch", "status", "checkpoints"]
_E = TypeVar("_E")
STATES = ("starting", "running", "paused", "standby", "degraded", "failed", "stopped")


@dataclass(frozen=True)
class Origin:
    """Who wrote a sample, about which flow, and when."""

    flow: str
    source: str
    target: str
    driver: str
    time_ms: int


@dataclass(frozen=True)
class PartitionBatch:
    """What one committed batch wrote for one source partition."""

    topic: str
    remote_topic: str
    partition: int
    records: int
    bytes: int
    latency_count: int = 0
    latency_sum_ms: int = 0
    latency_min_ms: int = 0
    latency_max_ms: int = 0


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    lag: int


@dataclass(frozen=True)
class CheckpointLatency:
    group: str
    topic: str
    remote_topic: str
    partition: int
    latency_ms: int


@dataclass(frozen=True)
class BatchSample:
    origin: Origin
    batch: int
    partitions: tuple[PartitionBatch, ...]


@dataclass(frozen=True)
class StatusSample:
    origin: Origin
    state: str
    reason: str = ""
    active_driver: str | None = None
    exactly_once: bool = False
    interval_ms: int = 0
    topics: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    lag: tuple[PartitionLag, ...] = ()


@dataclass(frozen=True)
class CheckpointSample:
    origin: Origin
    checkpoints: tuple[CheckpointLatency, ...]


Sample = BatchSample | StatusSample | CheckpointSample


def metrics_key(flow: str) -> bytes:
    return json_record({"flow": flow, "version": FORMAT_VERSION})


def encode(sample: Sample) -> Iterator[tuple[bytes, bytes]]:
    """The records of a sample: (key, value) pairs, several when it has many entries."""
    key = metrics_key(sample.origin.flow)
    for part in _split(sample):
        yield key, json_record(_value(part))


def decode(value: bytes | None) -> Sample | None:
    """The sample a record holds, or None for another version or a record not of this format."""
    if value is None:
        return None
    try:
        data = json.loads(value)
        if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
            return None
        origin = Origin(
            str(data["flow"]),
            str(data["source"]),
            str(data["target"]),
            str(data["driver"]),
            int(data["time_ms"]),
        )
        kind = data["kind"]
        if kind == "batch":
            return BatchSample(
                origin,
                int(data["batch"]),
                tuple(_entry(PartitionBatch, e) for e in data["partitions"]),
            )
        if kind == "status":
            return StatusSample(
                origin,
                state=str(data["state"]),
                reason=str(data["reason"]),
                active_driver=None if data["active_driver"] is None else str(data["active_driver"]),
                exactly_once=bool(data["exactly_once"]),
                interval_ms=int(data["interval_ms"]),
                topics={str(k): str(v) for k, v in data["topics"].items()},
                problems=tuple(str(p) for p in data["problems"]),
                lag=tuple(_entry(PartitionLag, e) for e in data["lag"]),
            )
        if kind == "checkpoints":
            return CheckpointSample(
                origin, tuple(_entry(CheckpointLatency, e) for e in data["checkpoints"])
            )
    except (TypeError, ValueError, KeyError, AttributeError):
        pass
    return None  # not a record of this format: ignored, never fatal


def _entry(cls: type[_E], data: Mapping[str, Any]) -> _E:
    """An entry of a list, each field converted to the type the dataclass declares."""
    values = {}
    for f in fields(cls):  # type: ignore[arg-type]
        raw = data[f.name]
        values[f.name] = str(raw) if f.type == "str" else int(raw)
    return cls(**values)


def _split(sample: Sample) -> Iterator[Sample]:
    """The sample cut into parts of at most `MAX_ENTRIES` entries (a status keeps
    its fields in every part; only its lag is cut)."""
    entries: Sequence[object]
    if isinstance(sample, BatchSample):
        entries = sample.partitions
    elif isinstance(sample, StatusSample):
        entries = sample.lag
    else:
        entries = sample.checkpoints
    if len(entries) <= MAX_ENTRIES:
        yield sample
        return
    for start in range(0, len(entries), MAX_ENTRIES):
        chunk = tuple(entries[start : start + MAX_ENTRIES])
        if isinstance(sample, BatchSample):
            yield replace(sample, partitions=chunk)  # type: ignore[arg-type]
        elif isinstance(sample, StatusSample):
            yield replace(sample, lag=chunk)  # type: ignore[arg-type]
        else:
            yield replace(sample, checkpoints=chunk)  # type: ignore[arg-type]


def _value(sample: Sample) -> dict[str, Any]:
    o = sample.origin
    value: dict[str, Any] = {
        "version": FORMAT_VERSION,
        "flow": o.flow,
        "source": o.source,
        "target": o.target,
        "driver": o.driver,
        "time_ms": o.time_ms,
    }
    if isinstance(sample, BatchSample):
        value.update(
            kind="batch",
            batch=sample.batch,
            partitions=[_fields(p) for p in sample.partitions],
        )
    elif isinstance(sample, StatusSample):
        value.update(
            kind="status",
            state=sample.state,
            reason=sample.reason,
            active_driver=sample.active_driver,
            exactly_once=sample.exactly_once,
            interval_ms=sample.interval_ms,
            topics=dict(sample.topics),
            problems=list(sample.problems),
            lag=[_fields(p) for p in sample.lag],
        )
    else:
        value.update(kind="checkpoints", checkpoints=[_fields(c) for c in sample.checkpoints])
    return value


def _fields(entry: Any) -> dict[str, Any]:
    return asdict(entry)
