"""Metrics over a sliding window: the numbers the REST API, Prometheus and `status` show.

A window (`5m`) ending now is cut into `POINTS` steps of equal length, aligned
on multiples of the step so that two services asked at nearly the same moment
give the same points. Each metric has a value per step (a point) and four
statistics over the window, `min`, `max`, `avg` and `sum`:

- `record-count`, `byte-count`: a point is what was replicated in the step;
  the statistics are over the points, so `sum` is the window's total.
- `record-rate`, `byte-rate`: a point is per second over its step; the
  statistics are over the points, so `avg` is the window's mean rate.
- `replication-latency-ms`, `checkpoint-latency-ms`: a point is the mean
  latency of the step's records (checkpoints); the statistics are over the
  records themselves: fastest, slowest, mean, and the sum of their latencies.
- `replication-records-lag`: a point is the total lag at the step's last
  status; the statistics are over the partitions' newest lag: least, most,
  mean per partition, and `sum` the total lag.

An entity is a flow (cluster metrics: every topic it replicates) or some of a
flow's source topics (topic metrics), possibly of several flows (a downstream
topic that several flows write, with the identity policy). Steps and windows
with nothing in them have no latency or lag: those statistics are None.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mirrorline.config.service_settings import window_text
from mirrorline.service.history import FlowHistory, Latency, Second

POINTS = 60

COUNTS = ("record-count", "byte-count")
RATES = ("record-rate", "byte-rate")
LATENCIES = ("replication-latency-ms", "checkpoint-latency-ms")
LAG = "replication-records-lag"
METRICS: tuple[str, ...] = (*COUNTS, *RATES, *LATENCIES, LAG)


@dataclass(frozen=True)
class Point:
    time_ms: int  # the start of the step
    value: float


@dataclass(frozen=True)
class MetricAnswer:
    metric: str
    window_seconds: int
    step_seconds: int
    min: float | None
    max: float | None
    avg: float | None
    sum: float
    points: tuple[Point, ...]

    @property
    def window(self) -> str:
        return window_text(self.window_seconds)


@dataclass(frozen=True)
class Part:
    """One flow and which of its source topics count (None: all of them)."""

    history: FlowHistory
    topics: frozenset[str] | None = None

    def selected(self, topics: Iterable[str]) -> list[str]:
        return [t for t in topics if self.topics is None or t in self.topics]


@dataclass(frozen=True)
class Steps:
    start_s: int  # first second of the first step
    step_s: int
    count: int

    @classmethod
    def ending_at(cls, now_ms: int, window_s: int, points: int = POINTS) -> Steps:
        step = max(1, window_s // points)
        count = max(1, window_s // step)
        end = (now_ms // 1000 // step + 1) * step  # the step holding `now` is the last
        return cls(end - count * step, step, count)

    def index(self, second: int) -> int | None:
        i = (second - self.start_s) // self.step_s
        return i if 0 <= i < self.count else None

    def time_ms(self, i: int) -> int:
        return (self.start_s + i * self.step_s) * 1000


def aggregate(metric: str, parts: Sequence[Part], window_s: int, now_ms: int) -> MetricAnswer:
    """`metric` of the entity made of `parts`, over the window ending at `now_ms`."""
    steps = Steps.ending_at(now_ms, window_s)
    if metric in COUNTS or metric in RATES:
        return _volume(metric, parts, steps, window_s)
    if metric == "replication-latency-ms":
        return _latency(metric, [_latencies(p.history.seconds, p, steps) for p in parts], steps)
    if metric == "checkpoint-latency-ms":
        return _latency(metric, [_latencies(p.history.checkpoints, p, steps) for p in parts], steps)
    if metric == LAG:
        return _lag(parts, steps)
    raise KeyError(metric)


def _volume(metric: str, parts: Sequence[Part], steps: Steps, window_s: int) -> MetricAnswer:
    values = [0.0] * steps.count
    use_bytes = metric.startswith("byte")
    for part in parts:
        seconds = part.history.seconds
        for topic in part.selected(seconds):
            for second, totals in seconds[topic].items():
                i = steps.index(second)
                if i is not None:
                    values[i] += totals.bytes if use_bytes else totals.records
    if metric in RATES:
        values = [v / steps.step_s for v in values]
    points = tuple(Point(steps.time_ms(i), v) for i, v in enumerate(values))
    return MetricAnswer(
        metric,
        window_s,
        steps.step_s,
        min(values),
        max(values),
        sum(values) / len(values),
        sum(values),
        points,
    )


def _latencies(
    by_topic: dict[str, dict[int, Second]] | dict[str, dict[int, Latency]],
    part: Part,
    steps: Steps,
) -> list[Latency]:
    """Per step, the latencies of the part's topics."""
    out = [Latency() for _ in range(steps.count)]
    for topic in part.selected(by_topic):
        for second, entry in by_topic[topic].items():
            i = steps.index(second)
            latency = entry.latency if isinstance(entry, Second) else entry
            if i is not None and latency is not None:
                out[i].merge(latency)
    return out


def _latency(metric: str, per_part: list[list[Latency]], steps: Steps) -> MetricAnswer:
    window = Latency()
    points = []
    for i in range(steps.count):
        step = Latency()
        for latencies in per_part:
            step.merge(latencies[i])
        if step.count:
            points.append(Point(steps.time_ms(i), step.sum / step.count))
            window.merge(step)
    window_s = steps.count * steps.step_s
    if not window.count:
        return MetricAnswer(metric, window_s, steps.step_s, None, None, None, 0.0, ())
    return MetricAnswer(
        metric,
        window_s,
        steps.step_s,
        float(window.min),
        float(window.max),
        window.sum / window.count,
        float(window.sum),
        tuple(points),
    )


def _lag(parts: Sequence[Part], steps: Steps) -> MetricAnswer:
    last_in_step: dict[int, float] = {}
    newest: dict[tuple[str, str, int], int] = {}
    newest_at = -1
    for part in parts:
        history = part.history
        for time_ms in sorted(history.lags):
            lags = history.lags[time_ms]
            chosen = {tp: lag for tp, lag in lags.items() if part.selected([tp[0]])}
            i = steps.index(time_ms // 1000)
            if i is not None:
                # Several flows: each one's latest total in the step adds up.
                last_in_step[i] = last_in_step.get(i, 0.0) + sum(chosen.values())
        newest_lags = part.history.latest_lags(part.topics)
        if history.lags and max(history.lags) // 1000 >= steps.start_s:
            newest_at = max(newest_at, max(history.lags))
            newest.update({(history.flow, t, p): lag for (t, p), lag in newest_lags.items()})
    window_s = steps.count * steps.step_s
    points = tuple(Point(steps.time_ms(i), v) for i, v in sorted(last_in_step.items()))
    if newest_at < 0 or not newest:
        return MetricAnswer(LAG, window_s, steps.step_s, None, None, None, 0.0, points)
    values = list(newest.values())
    return MetricAnswer(
        LAG,
        window_s,
        steps.step_s,
        float(min(values)),
        float(max(values)),
        sum(values) / len(values),
        float(sum(values)),
        points,
    )
