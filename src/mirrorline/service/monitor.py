"""The service's answers: replications, metrics over windows and checkpointed groups.

A `Monitor` reads the target clusters of a configuration (`service.clusters`,
by default the target of every enabled flow), one `TargetCollector` each, and
answers from what they have read. The REST API, Prometheus and `mirrorline
status` all ask it, so they give the same numbers.

The replications it knows into a cluster are the configuration's enabled
flows into it and every flow between the configuration's clusters that wrote
raw metrics there (a driver may run another file of the same deployment).
Aliases are the deployment's names for its clusters: flows written under
other aliases are not reported. Unknown names raise `NotFound`, which lists
what exists.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from mirrorline.config.model import MirrorConfig
from mirrorline.config.service_settings import ServiceSettings, window_text
from mirrorline.service.aggregate import METRICS, MetricAnswer, Part, aggregate
from mirrorline.service.collector import TargetCollector, sources_for
from mirrorline.service.replications import Replication, replication
from mirrorline.service.target_view import CheckpointEntry, TargetView


class NotFound(LookupError):
    """A name the service does not know; `known` lists the names it does."""

    def __init__(self, what: str, name: str, known: Sequence[str]) -> None:
        super().__init__(f"unknown {what} {name!r}")
        self.what = what
        self.name = name
        self.known = list(known)


@dataclass(frozen=True)
class GroupCheckpoint:
    group: str
    topic: str  # on the target
    partition: int
    upstream_offset: int
    downstream_offset: int  # the translated offset
    metadata: str
    written_ms: int


class Monitor:
    """Reads the target clusters and answers about their incoming flows (see the module)."""

    def __init__(self, config: MirrorConfig, settings: ServiceSettings) -> None:
        self.config = config
        self.settings = settings
        self.collectors: dict[str, TargetCollector] = {}
        for alias in settings.clusters:
            cluster = config.clusters[alias]
            self.collectors[alias] = TargetCollector(
                alias,
                admin_settings=cluster.client_settings("admin"),
                consumer_settings=cluster.client_settings("consumer"),
                sources=sources_for(
                    (f for f in config.flows if f.target == alias), config.clusters
                ),
                history_s=settings.history_s,
            )

    def start(self) -> None:
        for collector in self.collectors.values():
            collector.start()

    def catch_up(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(
            c.catch_up(max(0.0, deadline - time.monotonic())) for c in self.collectors.values()
        )

    def close(self) -> None:
        for collector in self.collectors.values():
            collector.close()

    # -- replications ------------------------------------------------------------------

    def replications(self) -> list[Replication]:
        now = _now_ms()
        found: list[Replication] = []
        for alias, collector in self.collectors.items():
            flows = self._flows_into(alias, collector.view)

            def of(v: TargetView, flows: dict[str, str] = flows) -> list[Replication]:
                return [replication(v, f, s, now) for f, s in flows.items()]

            found += collector.view.read(of)
        return sorted(found, key=lambda r: (r.source, r.target))

    def replication(self, source: str, target: str) -> Replication:
        flow, view = self._flow(source, target)
        now = _now_ms()
        return view.read(lambda v: replication(v, flow, source, now))

    # -- metrics -----------------------------------------------------------------------

    def cluster_metric(self, source: str, target: str, metric: str, window: str) -> MetricAnswer:
        flow, view = self._flow(source, target)
        return self._aggregate(view, [(flow, None)], metric, window)

    def topic_metric(
        self, source: str, target: str, topic: str, metric: str, window: str
    ) -> MetricAnswer:
        """Metrics of source topic `topic` of the flow `source->target`."""
        flow, view = self._flow(source, target)
        topics = view.read(lambda v: _topics_of(v, flow))
        if topic not in topics:
            raise NotFound(f"topic of {flow}", topic, sorted(topics))
        return self._aggregate(view, [(flow, frozenset({topic}))], metric, window)

    def downstream_metric(self, target: str, topic: str, metric: str, window: str) -> MetricAnswer:
        """Metrics of topic `topic` on `target`: every flow that writes it, by the published
        pairs (so the identity policy's unchanged names work)."""
        view = self._view(target)
        writers = view.read(lambda v: _writers(v, topic))
        if not writers:
            remote = view.read(
                lambda v: sorted({r for f in v.histories for r in _topics_of(v, f).values()})
            )
            raise NotFound(f"replicated topic on {target}", topic, remote)
        return self._aggregate(
            view, [(f, frozenset(t)) for f, t in writers.items()], metric, window
        )

    def window_seconds(self, window: str) -> int:
        known = {window_text(w): w for w in self.settings.windows}
        if window not in known:
            raise NotFound("window", window, list(known))
        return known[window]

    def topic_totals(self) -> dict[tuple[str, str, str], tuple[int, int]]:
        """(source, target, source topic) -> (records, bytes) read since the service started."""
        totals: dict[tuple[str, str, str], tuple[int, int]] = {}
        for collector in self.collectors.values():

            def of(v: TargetView) -> dict[tuple[str, str, str], tuple[int, int]]:
                return {
                    (h.source, h.target, topic): (counts[0], counts[1])
                    for h in v.histories.values()
                    for topic, counts in h.totals.items()
                }

            totals.update(collector.view.read(of))
        return totals

    # -- groups ------------------------------------------------------------------------

    def groups(self, source: str, target: str) -> list[GroupCheckpoint]:
        flow, view = self._flow(source, target)
        entries: dict[tuple[str, str, int], CheckpointEntry] = view.read(
            lambda v: dict(v.checkpoints.get(flow, {}))
        )
        return [
            GroupCheckpoint(
                c.group,
                c.topic,
                c.partition,
                c.upstream_offset,
                c.downstream_offset,
                c.metadata,
                e.written_ms,
            )
            for e in (entries[k] for k in sorted(entries))
            for c in (e.checkpoint,)
        ]

    # -- helpers -----------------------------------------------------------------------

    def _aggregate(
        self,
        view: TargetView,
        chosen: list[tuple[str, frozenset[str] | None]],
        metric: str,
        window: str,
    ) -> MetricAnswer:
        if metric not in METRICS:
            raise NotFound("metric", metric, METRICS)
        window_s = self.window_seconds(window)
        now = _now_ms()

        def answer(v: TargetView) -> MetricAnswer:
            parts = [Part(v.histories[f], t) for f, t in chosen if f in v.histories]
            return aggregate(metric, parts, window_s, now)

        return view.read(answer)

    def _view(self, target: str) -> TargetView:
        collector = self.collectors.get(target)
        if collector is None:
            raise NotFound("target cluster", target, list(self.collectors))
        return collector.view

    def _flow(self, source: str, target: str) -> tuple[str, TargetView]:
        view = self._view(target)
        flow = f"{source}->{target}"
        flows = self._flows_into(target, view)
        if flow not in flows:
            raise NotFound("replication", flow, sorted(flows))
        return flow, view

    def _flows_into(self, target: str, view: TargetView) -> dict[str, str]:
        """Flow name -> source alias, of the flows into `target` the service knows."""
        flows = {f.name: f.source for f in self.config.enabled_flows() if f.target == target}
        flows.update(view.read(lambda v: {n: h.source for n, h in v.histories.items()}))
        return flows


def _topics_of(view: TargetView, flow: str) -> dict[str, str]:
    """Source topic -> remote topic of a flow: published, reported, or seen in samples."""
    history = view.histories.get(flow)
    topics = dict(history.remote_topics) if history is not None else {}
    topics.update(view.published.get(flow, {}))
    return topics


def _writers(view: TargetView, remote: str) -> dict[str, set[str]]:
    """Flow -> its source topics written to `remote` on the view's cluster."""
    writers: dict[str, set[str]] = {}
    for flow in set(view.histories) | set(view.published):
        for topic, name in _topics_of(view, flow).items():
            if name == remote:
                writers.setdefault(flow, set()).add(topic)
    return writers


def _now_ms() -> int:
    return int(time.time() * 1000)
