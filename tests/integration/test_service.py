"""The service against a running driver: metrics that add up, two instances and a restart that
agree, checkpointed groups, Prometheus, the identity policy, and a property-based run of the
REST API (real clusters, Spark local mode)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from mirrorline.service.server import Service
from support.driving import running_driver
from support.kafka_io import Record, commit_offsets, create_topic, produce, unique_name
from support.service import (
    get,
    get_ok,
    get_text,
    own_aliases,
    polled_sum,
    running_service,
    write_aliased_config,
)
from support.wait import wait_until

BIG, SMALL = 20_000, 3_000
VALUE = 1024
PARTITIONS = 3


@dataclass
class Replicated:
    """A flow that replicated BIG records into `big` and SMALL into `small`, still running,
    with two services reading its target."""

    src: str
    dst: str
    big: str
    small: str
    first: Service
    second: Service
    config: object
    started_ms: int
    group: str

    def url(self, path: str, service: Service | None = None) -> str:
        return (service or self.first).url + path


def _records(count: int) -> list[Record]:
    return [Record(None, bytes([i % 251]) * VALUE, partition=i % PARTITIONS) for i in range(count)]


@pytest.fixture(scope="module")
def replicated(two_clusters, spark, tmp_path_factory):
    east, west = two_clusters
    tmp = tmp_path_factory.mktemp("service")
    src, dst = own_aliases("src", "dst")
    big, small = unique_name("orders"), unique_name("audit")
    for topic in (big, small):
        create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    started_ms = int(time.time() * 1000)
    produce(east.bootstrap_servers, big, _records(BIG))
    produce(east.bootstrap_servers, small, _records(SMALL))
    group = unique_name("readers")
    commit_offsets(east.bootstrap_servers, group, big, {0: 100, 1: 200, 2: 300})
    config = write_aliased_config(
        tmp / "mm2.properties",
        {src: east, dst: west},
        f"{src}->{dst}.enabled = true\n{src}->{dst}.topics = {big}, {small}\n"
        f"{src}->{dst}.groups = {group}\n"
        "emit.checkpoints.interval.seconds = 1\nrefresh.groups.interval.seconds = 1\n",
    )
    with running_driver(config, spark, tmp / "work"):
        with running_service(config) as first, running_service(config) as second:
            yield Replicated(src, dst, big, small, first, second, config, started_ms, group)


def _metric(r: Replicated, path: str, metric: str, window: str = "15m", service=None) -> dict:
    return get_ok(r.url(f"{path}/{metric}?window={window}", service))


def _topic(r: Replicated, topic: str) -> str:
    return f"/v2/topic-metrics/{r.src}/{r.dst}/{topic}"


def _count(r: Replicated, topic: str) -> float | None:
    """The topic's record-count over 15 minutes, as `polled_sum` reads it."""
    return polled_sum(r.url(f"{_topic(r, topic)}/record-count?window=15m"))


def _wait_replicated(r: Replicated) -> None:
    for topic, count in ((r.big, BIG), (r.small, SMALL)):
        wait_until(
            lambda topic=topic, count=count: _count(r, topic) == count,
            timeout=180,
            what=f"record-count of {topic} to reach {count}",
        )


def test_topic_and_cluster_metrics_add_up(replicated):
    r = replicated
    _wait_replicated(r)
    big = _topic(r, r.big)
    assert _metric(r, big, "byte-count")["sum"] == BIG * VALUE
    lag = wait_until(
        lambda: (m := _metric(r, big, "replication-records-lag"))["max"] == 0 and m,
        timeout=60,
        what="the lag of the topic to reach 0",
    )
    assert lag["sum"] == 0 and lag["points"], lag

    latency = _metric(r, big, "replication-latency-ms")
    age_ms = int(time.time() * 1000) - r.started_ms
    assert 0 <= latency["min"] <= latency["avg"] <= latency["max"] <= age_ms, latency
    assert latency["sum"] == pytest.approx(latency["avg"] * BIG, rel=1e-6)

    rate = _metric(r, big, "record-rate", window="5m")
    assert rate["avg"] == pytest.approx(BIG / 300)  # the window's mean rate
    assert len(rate["points"]) == 60 and rate["step_seconds"] == 5

    cluster = f"/v2/cluster-metrics/{r.src}/{r.dst}"
    for metric in ("record-count", "byte-count"):
        per_topic = sum(_metric(r, _topic(r, t), metric)["sum"] for t in (r.big, r.small))
        assert _metric(r, cluster, metric)["sum"] == per_topic
    assert _metric(r, cluster, "record-count")["sum"] == BIG + SMALL

    replication = get_ok(r.url(f"/v2/replications/{r.src}/{r.dst}"))
    assert replication["state"] == "running" and replication["health"] == "healthy"
    assert replication["reason"] == "" and replication["active_driver"]
    assert replication["topics"] == {r.big: f"{r.src}.{r.big}", r.small: f"{r.src}.{r.small}"}

    exported = get_text(r.url("/metrics"))
    labels = f'source="{r.src}",target="{r.dst}",topic="{r.big}"'
    assert _sample(exported, "mirrorline_replicated_records_total", labels) == BIG
    assert _sample(exported, "mirrorline_replicated_bytes_total", labels) == BIG * VALUE
    assert _sample(exported, "mirrorline_replication_records_lag", labels) == 0


def _sample(exported: str, name: str, labels: str) -> float:
    """The value of one sample in Prometheus's text format."""
    found = re.search(rf"^{name}{{{re.escape(labels)}}} (\S+)$", exported, re.MULTILINE)
    assert found, f"{name}{{{labels}}} not exported"
    return float(found.group(1))


def test_checkpointed_groups_with_their_translated_offsets(replicated):
    r = replicated
    _wait_replicated(r)

    def checkpointed():
        doc = get_ok(r.url(f"/v2/groups/{r.src}/{r.dst}"))
        return [g for g in doc["groups"] if g["group"] == r.group and len(g["partitions"]) == 3]

    [group] = wait_until(checkpointed, timeout=60, what=f"checkpoints of {r.group}")
    offsets = {p["partition"]: p for p in group["partitions"]}
    for partition, committed in {0: 100, 1: 200, 2: 300}.items():
        entry = offsets[partition]
        assert entry["topic"] == f"{r.src}.{r.big}"
        # A fresh remote topic holds the same offsets: the translation is the identity.
        assert entry["upstream_offset"] == entry["downstream_offset"] == committed
        assert 0 <= entry["age_ms"] < 120_000
    # The checkpoint's latency reaches the service with the flow's next raw metrics.
    latency = wait_until(
        lambda: (
            (m := _metric(r, _topic(r, r.big), "checkpoint-latency-ms"))["min"] is not None and m
        ),
        timeout=30,
        what="the checkpoint latency",
    )
    assert 0 <= latency["min"] <= latency["max"] < 10_000, latency
    assert get_ok(r.url(f"/v2/replications/{r.src}/{r.dst}"))["last_checkpoint_ms"]


def _comparable(r: Replicated, service: Service) -> dict:
    """What two services must answer alike (the lag's points move with each status)."""
    [replication] = [
        x
        for x in get_ok(r.url("/v2/replications?scope=local", service))["replications"]
        if x["source"] == r.src
    ]
    replication.pop("served_by")
    answers: dict = {"replication": replication}
    for topic in (r.big, r.small):
        for metric in ("record-count", "byte-count", "replication-latency-ms"):
            answers[(topic, metric)] = _metric(r, _topic(r, topic), metric, service=service)
        lag = _metric(r, _topic(r, topic), "replication-records-lag", service=service)
        answers[(topic, "lag")] = (lag["min"], lag["max"], lag["sum"])
    return answers


def test_two_instances_and_a_restarted_one_agree(replicated):
    r = replicated
    _wait_replicated(r)
    # Read both within one status interval, a few times: the status sample they show moves.
    agreed = wait_until(
        lambda: _comparable(r, r.first) == _comparable(r, r.second) or None,
        timeout=30,
        what="both services to give the same answers",
    )
    assert agreed
    with running_service(r.config) as restarted:
        restarted.monitor.catch_up(30)
        wait_until(
            lambda: _comparable(r, r.first) == _comparable(r, restarted) or None,
            timeout=30,
            what="a restarted service to give the same answers",
        )


def test_unknown_names_are_404_listing_what_exists(replicated):
    r = replicated
    status, doc = get(r.url(f"/v2/topic-metrics/{r.src}/{r.dst}/nope/record-count"))
    assert status == 404 and r.big in doc["known"], doc
    status, doc = get(r.url(f"/v2/cluster-metrics/{r.src}/{r.dst}/no-such-metric"))
    assert status == 404 and "record-count" in doc["known"], doc
    status, doc = get(r.url(f"/v2/cluster-metrics/{r.src}/{r.dst}/record-count?window=7m"))
    assert status == 404 and doc["known"] == ["1m", "5m", "15m", "1h"], doc
    status, doc = get(r.url(f"/v2/replications/nowhere/{r.dst}"))
    assert status == 404 and f"{r.src}->{r.dst}" in doc["known"], doc
    status, doc = get(r.url("/v2/groups/a/nowhere"))
    assert status == 404 and doc["known"] == [r.dst], doc


def test_status_command_prints_the_flows(replicated):
    r = replicated
    _wait_replicated(r)
    done = subprocess.run(
        [sys.executable, "-m", "mirrorline", "status", "-c", str(r.config), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    import json

    [flow] = json.loads(done.stdout)["flows"]
    assert flow["flow"] == f"{r.src}->{r.dst}" and flow["state"] == "running"
    assert flow["lag"] == 0 and flow["topics"] == 2 and flow["active_driver"]

    human = subprocess.run(
        [sys.executable, "-m", "mirrorline", "status", "-c", str(r.config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert human.returncode == 0 and re.search(r"running", human.stdout), human.stdout


def test_openapi_document_is_valid(replicated):
    document = get_ok(replicated.url("/openapi.json"))
    validate(document)
    paths = set(document["paths"])
    assert {
        "/v2/replications",
        "/v2/replications/{source}/{target}",
        "/v2/cluster-metrics/{source}/{target}/{metric}",
        "/v2/topic-metrics/{source}/{target}/{upstreamTopic}/{metric}",
        "/v2/topic-metrics/{target}/{downstreamTopic}/{metric}",
        "/v2/groups/{source}/{target}",
        "/health",
    } <= paths


def test_no_generated_request_makes_the_api_fail(replicated):
    """Property-based (schemathesis): requests generated from the OpenAPI document, with
    names, windows and metrics of every kind, never get a 5xx, and every answer matches
    the document."""
    schema = schemathesis.openapi.from_url(replicated.url("/openapi.json"))
    checks = [not_a_server_error, response_schema_conformance, status_code_conformance]
    calls = 0
    for found in schema.get_all_operations():
        operation = found.ok()

        @given(operation.as_strategy())
        @settings(
            max_examples=60,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def call(case):
            nonlocal calls
            case.call_and_validate(checks=checks)
            calls += 1

        call()
    assert calls > 100


def test_identity_policy_topic_metrics_by_downstream_name(two_clusters, spark, tmp_path):
    east, west = two_clusters
    src, dst = own_aliases("src", "dst")
    topic = unique_name("payments")
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    produce(east.bootstrap_servers, topic, _records(2_000))
    config = write_aliased_config(
        tmp_path / "mm2.properties",
        {src: east, dst: west},
        f"{src}->{dst}.enabled = true\n{src}->{dst}.topics = {topic}\n"
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n",
    )
    with running_driver(config, spark, tmp_path / "work"), running_service(config) as service:
        downstream = f"{service.url}/v2/topic-metrics/{dst}/{topic}"
        wait_until(
            lambda: polled_sum(f"{downstream}/record-count?window=15m") == 2_000,
            timeout=180,
            what="record-count by downstream name to reach 2000",
        )
        assert get_ok(f"{downstream}/byte-count?window=15m")["sum"] == 2_000 * VALUE
        upstream = get_ok(
            f"{service.url}/v2/topic-metrics/{src}/{dst}/{topic}/record-count?window=15m"
        )
        assert upstream["sum"] == 2_000
        status, doc = get(f"{service.url}/v2/topic-metrics/{dst}/not-{topic}/record-count")
        assert status == 404 and topic in doc["known"], doc
