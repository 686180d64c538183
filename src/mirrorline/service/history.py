"""What the service knows of one flow: its recent raw metrics, folded into per-second totals.

Samples (`raw_metrics`) arrive in the order the metrics topic holds them. A
batch sample adds its records, bytes and latencies to the second it was taken
in, per source topic; a checkpoint sample adds its latencies the same way; a
status sample is kept as the latest of its driver, and its lag per source
partition is kept by time. Whatever is older than the service's longest window
is forgotten (`evict`), so memory stays bounded however busy the flow is: at
most one entry per topic and second.

The running totals (`totals`) are not forgotten: they count every record the
service has read since it started, for Prometheus's counters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mirrorline.raw_metrics import (
    BatchSample,
    CheckpointSample,
    PartitionBatch,
    Sample,
    StatusSample,
)


@dataclass
class Latency:
    """Latencies folded together: count, sum, min and max, in ms."""

    count: int = 0
    sum: int = 0
    min: int = 0
    max: int = 0

    def add(self, count: int, total: int, lowest: int, highest: int) -> None:
        if count <= 0:
            return
        self.min = lowest if self.count == 0 else min(self.min, lowest)
        self.max = highest if self.count == 0 else max(self.max, highest)
        self.count += count
        self.sum += total

    def merge(self, other: Latency) -> None:
        self.add(other.count, other.sum, other.min, other.max)


@dataclass
class Second:
    """What one topic of a flow replicated in one second."""

    records: int = 0
    bytes: int = 0
    latency: Latency | None = None

    def add(self, p: PartitionBatch) -> None:
        self.records += p.records
        self.bytes += p.bytes
        if p.latency_count:
            if self.latency is None:
                self.latency = Latency()
            self.latency.add(p.latency_count, p.latency_sum_ms, p.latency_min_ms, p.latency_max_ms)


class FlowHistory:
    """One flow's recent samples (see the module); not thread-safe: the store locks."""

    def __init__(self, flow: str, source: str, target: str) -> None:
        self.flow = flow
        self.source = source
        self.target = target
        # Source topic -> second -> totals.
        self.seconds: dict[str, dict[int, Second]] = {}
        # Source topic -> second -> checkpoint latencies.
        self.checkpoints: dict[str, dict[int, Latency]] = {}
        # Sample time -> (topic, partition) -> lag; split samples merge by their time.
        self.lags: dict[int, dict[tuple[str, int], int]] = {}
        self.statuses: dict[str, StatusSample] = {}  # the latest of each driver
        self.remote_topics: dict[str, str] = {}  # source topic -> remote topic, as reported
        self.totals: dict[str, list[int]] = {}  # source topic -> [records, bytes] ever read
        self.last_checkpoint_ms: int | None = None

    def add(self, sample: Sample) -> None:
        second = sample.origin.time_ms // 1000
        if isinstance(sample, BatchSample):
            for p in sample.partitions:
                self.seconds.setdefault(p.topic, {}).setdefault(second, Second()).add(p)
                self.remote_topics[p.topic] = p.remote_topic
                total = self.totals.setdefault(p.topic, [0, 0])
                total[0] += p.records
                total[1] += p.bytes
        elif isinstance(sample, StatusSample):
            before = self.statuses.get(sample.origin.driver)
            if before is None or before.origin.time_ms <= sample.origin.time_ms:
                self.statuses[sample.origin.driver] = sample
            if sample.lag:
                entry = self.lags.setdefault(sample.origin.time_ms, {})
                entry.update({(lag.topic, lag.partition): lag.lag for lag in sample.lag})
            self.remote_topics.update(sample.topics)
        else:
            self._add_checkpoints(second, sample)

    def _add_checkpoints(self, second: int, sample: CheckpointSample) -> None:
        for c in sample.checkpoints:
            latency = self.checkpoints.setdefault(c.topic, {}).setdefault(second, Latency())
            latency.add(1, c.latency_ms, c.latency_ms, c.latency_ms)
            self.remote_topics.setdefault(c.topic, c.remote_topic)
        self.last_checkpoint_ms = max(self.last_checkpoint_ms or 0, sample.origin.time_ms)

    def evict(self, before_ms: int) -> None:
        """Forget samples taken before `before_ms` (the totals stay)."""
        oldest = before_ms // 1000
        for by_topic in (self.seconds, self.checkpoints):
            for topic in list(by_topic):
                by_second = by_topic[topic]
                for second in [s for s in by_second if s < oldest]:
                    del by_second[second]
        # The newest lag is kept even when old: it is the flow's lag until the next one.
        times = sorted(self.lags)
        for t in times[:-1]:
            if t < before_ms:
                del self.lags[t]

    def current_status(self) -> StatusSample | None:
        """The status that speaks for the flow: the newest of a driver that leads it (not
        standing by, not stopped with the driver), else the newest of any driver.

        A flow an operator stopped is reported `stopped` by its leader, which
        speaks for it; a driver that exits reports `stopped` too, without leading.
        """
        statuses = sorted(self.statuses.values(), key=lambda s: s.origin.time_ms)
        active = [s for s in statuses if s.state != "standby" and _leads(s)]
        if active:
            return active[-1]
        return statuses[-1] if statuses else None

    def latest_lags(self, topics: Iterable[str] | None = None) -> Mapping[tuple[str, int], int]:
        """Per partition, the newest lag known (of `topics`; None: every topic)."""
        if not self.lags:
            return {}
        newest = self.lags[max(self.lags)]
        if topics is None:
            return dict(newest)
        wanted = set(topics)
        return {tp: lag for tp, lag in newest.items() if tp[0] in wanted}


def _leads(status: StatusSample) -> bool:
    return status.state != "stopped" or status.active_driver == status.origin.driver
