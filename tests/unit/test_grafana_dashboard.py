"""docs/grafana-dashboard.json asks Prometheus only for metrics the service exports.

`METRIC_NAMES` (mirrorline.service.prometheus) lists them; it is checked here
against what the collector really yields, so neither the list nor the
dashboard can drift from `/metrics`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mirrorline.service.aggregate import MetricAnswer, Point
from mirrorline.service.prometheus import METRIC_NAMES, MetricsCollector
from mirrorline.service.replications import Replication

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana-dashboard.json"
METRIC = re.compile(r"\bmirrorline_[a-z0-9_]+\b")


def _queries(node: Any) -> Iterator[str]:
    """Every PromQL text in the dashboard: panels' `expr` and variables' queries."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "definition") and isinstance(value, str):
                yield value
            else:
                yield from _queries(value)
    elif isinstance(node, list):
        for item in node:
            yield from _queries(item)


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def test_every_query_names_only_exported_metrics():
    queries = list(_queries(_dashboard()))
    assert len(queries) >= 10, "the dashboard has hardly any queries"
    for query in queries:
        named = set(METRIC.findall(query))
        assert named, f"no Mirrorline metric in {query!r}"
        assert named <= set(METRIC_NAMES), f"{query!r} names {sorted(named - set(METRIC_NAMES))}"


def test_the_dashboard_covers_the_main_metrics_and_uses_the_datasource_input():
    dashboard = _dashboard()
    assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    named = {m for q in _queries(dashboard) for m in METRIC.findall(q)}
    for metric in (
        "mirrorline_replicated_records_total",
        "mirrorline_replication_records_lag",
        "mirrorline_replication_latency_ms",
        "mirrorline_replication_state",
        "mirrorline_last_heartbeat_timestamp_seconds",
    ):
        assert metric in named, f"no panel shows {metric}"
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
            for target in panel["targets"]:
                assert target["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]


class _Monitor:
    """Just what MetricsCollector reads: one topic of one flow, with every metric present."""

    settings = SimpleNamespace(windows=(60,))

    def topic_totals(self) -> dict[tuple[str, str, str], tuple[int, int]]:
        return {("east", "west", "orders"): (10, 1000)}

    def topic_metric(
        self, source: str, target: str, topic: str, metric: str, window: str
    ) -> MetricAnswer:
        return MetricAnswer(metric, 60, 1, 1.0, 2.0, 1.5, 3.0, (Point(0, 1.0),))

    def replications(self) -> list[Replication]:
        return [
            Replication(
                "east",
                "west",
                "running",
                "healthy",
                "",
                last_heartbeat_ms=1_000,
                last_checkpoint_ms=2_000,
            )
        ]


def test_metric_names_are_what_the_collector_exports():
    collector = MetricsCollector(_Monitor())  # type: ignore[arg-type]
    exported = {sample.name for family in collector.collect() for sample in family.samples}
    assert exported == set(METRIC_NAMES)
