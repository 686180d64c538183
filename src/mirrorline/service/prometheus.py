"""The service's numbers in Prometheus's format, computed at each scrape from the same data.

- `mirrorline_replicated_records_total`, `mirrorline_replicated_bytes_total`
  (labels `source`, `target`, `topic`): counters of what the service has read
  since it started (it starts with its longest window of history, so a
  restarted service starts lower: Prometheus's `rate()` and `increase()` read
  that as a counter reset);
- over the shortest window (`service.windows`), per topic: record and byte
  rates, replication latency (`stat` = avg or max), checkpoint latency (avg),
  and the replication lag in records (the newest, summed over partitions);
- per replication: `mirrorline_replication_state` (1 for the current state),
  `mirrorline_replication_healthy` (1 or 0) and the times of the last heartbeat
  and checkpoint, in seconds.

A Grafana dashboard built on them: `docs/grafana-dashboard.json`.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mirrorline.config.service_settings import window_text
from mirrorline.service.aggregate import MetricAnswer
from mirrorline.service.monitor import Monitor, NotFound
from mirrorline.service.replications import Replication

STATES = (
    "starting",
    "running",
    "paused",
    "standby",
    "degraded",
    "failed",
    "stopped",
    "unknown",
)
#: Every sample name `/metrics` has (counters with their `_total`), for dashboards to check against.
METRIC_NAMES: tuple[str, ...] = (
    "mirrorline_replicated_records_total",
    "mirrorline_replicated_bytes_total",
    "mirrorline_record_rate",
    "mirrorline_byte_rate",
    "mirrorline_replication_latency_ms",
    "mirrorline_checkpoint_latency_ms",
    "mirrorline_replication_records_lag",
    "mirrorline_replication_state",
    "mirrorline_replication_healthy",
    "mirrorline_last_heartbeat_timestamp_seconds",
    "mirrorline_last_checkpoint_timestamp_seconds",
)
_TOPIC = ["source", "target", "topic"]
_FLOW = ["source", "target"]


class MetricsCollector(Collector):
    """Builds every metric family from a `Monitor` at scrape time."""

    def __init__(self, monitor: Monitor) -> None:
        self._monitor = monitor

    def collect(self) -> Iterator[Metric]:
        monitor = self._monitor
        window = window_text(monitor.settings.windows[0])
        records = CounterMetricFamily(
            "mirrorline_replicated_records", "Records replicated, per topic.", labels=_TOPIC
        )
        volume = CounterMetricFamily(
            "mirrorline_replicated_bytes", "Bytes replicated (keys and values).", labels=_TOPIC
        )
        totals = monitor.topic_totals()
        for (source, target, topic), (count, size) in sorted(totals.items()):
            records.add_metric([source, target, topic], count)
            volume.add_metric([source, target, topic], size)
        yield records
        yield volume
        yield from self._windowed(window, sorted(totals))
        yield from self._replications(monitor.replications())

    def _windowed(self, window: str, topics: list[tuple[str, str, str]]) -> Iterator[Metric]:
        about = f"over the last {window}"
        rates = {
            "record-rate": GaugeMetricFamily(
                "mirrorline_record_rate", f"Records per second {about}.", labels=_TOPIC
            ),
            "byte-rate": GaugeMetricFamily(
                "mirrorline_byte_rate", f"Bytes per second {about}.", labels=_TOPIC
            ),
        }
        latency = GaugeMetricFamily(
            "mirrorline_replication_latency_ms",
            f"Replication latency {about} (stat: avg or max).",
            labels=[*_TOPIC, "stat"],
        )
        checkpoints = GaugeMetricFamily(
            "mirrorline_checkpoint_latency_ms", f"Mean checkpoint latency {about}.", labels=_TOPIC
        )
        lag = GaugeMetricFamily(
            "mirrorline_replication_records_lag",
            "Records not replicated yet (source log end minus next offset), newest.",
            labels=_TOPIC,
        )
        for source, target, topic in topics:
            labels = [source, target, topic]

            def metric(
                name: str, source: str = source, target: str = target, topic: str = topic
            ) -> MetricAnswer:
                return self._monitor.topic_metric(source, target, topic, name, window)

            try:
                for name, family in rates.items():
                    family.add_metric(labels, metric(name).avg or 0.0)
                rl = metric("replication-latency-ms")
                if rl.avg is not None and rl.max is not None:
                    latency.add_metric([*labels, "avg"], rl.avg)
                    latency.add_metric([*labels, "max"], rl.max)
                cl = metric("checkpoint-latency-ms")
                if cl.avg is not None:
                    checkpoints.add_metric(labels, cl.avg)
                lg = metric("replication-records-lag")
                if lg.max is not None:
                    lag.add_metric(labels, lg.sum)
            except NotFound:
                continue  # the topic left the flow since the totals were read
        yield from (*rates.values(), latency, checkpoints, lag)

    def _replications(self, replications: list[Replication]) -> Iterator[Metric]:
        state = GaugeMetricFamily(
            "mirrorline_replication_state",
            "1 for the replication's state.",
            labels=[*_FLOW, "state"],
        )
        healthy = GaugeMetricFamily(
            "mirrorline_replication_healthy", "1 when the replication is healthy.", labels=_FLOW
        )
        heartbeat = GaugeMetricFamily(
            "mirrorline_last_heartbeat_timestamp_seconds", "The newest heartbeat.", labels=_FLOW
        )
        checkpoint = GaugeMetricFamily(
            "mirrorline_last_checkpoint_timestamp_seconds", "The newest checkpoint.", labels=_FLOW
        )
        for r in replications:
            flow = [r.source, r.target]
            for name in STATES:
                state.add_metric([*flow, name], 1.0 if r.state == name else 0.0)
            healthy.add_metric(flow, 1.0 if r.health == "healthy" else 0.0)
            if r.last_heartbeat_ms is not None:
                heartbeat.add_metric(flow, r.last_heartbeat_ms / 1000)
            if r.last_checkpoint_ms is not None:
                checkpoint.add_metric(flow, r.last_checkpoint_ms / 1000)
        yield from (state, healthy, heartbeat, checkpoint)
