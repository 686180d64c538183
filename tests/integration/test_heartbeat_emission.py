"""Heartbeats on real clusters: written by enabled and disabled flows, replicated, read by MM2.

The flows use aliases of their own (`east<id>`, `west<id>` for the east and
west clusters), so their heartbeats, progress and remote topics are this
test's alone; the `heartbeats` topics are removed before and after, so that
later tests' flows out of these shared clusters find none to replicate.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType

from mirrorline.formats import Heartbeat
from support.driving import running_driver
from support.kafka_io import admin, consume, delete_topics, end_offsets, topic_names
from support.mm2_java import java_format_topic
from support.wait import wait_until

UNREACHABLE = "127.0.0.1:1"  # nothing listens there: connections are refused at once


@pytest.fixture
def aliases(two_clusters):
    east, west = two_clusters
    suffix = uuid.uuid4().hex[:6]
    names = f"east{suffix}", f"west{suffix}"
    doomed = {east.bootstrap_servers: ["heartbeats"]}
    doomed[west.bootstrap_servers] = ["heartbeats", f"{names[0]}.heartbeats"]
    for bootstrap, topics in doomed.items():
        delete_topics(bootstrap, topics)
    yield names
    for bootstrap, topics in doomed.items():
        delete_topics(bootstrap, topics)


def _heartbeats(bootstrap: str, topic: str) -> list[tuple[Heartbeat, int]]:
    """Every heartbeat in `topic` with its record's timestamp."""
    if topic not in topic_names(bootstrap):
        return []
    expected = sum(end_offsets(bootstrap, topic).values())
    records = consume(bootstrap, topic, expected=expected)
    return [(Heartbeat.decode(r.key, r.value), r.timestamp) for r in records]


def _pairs(bootstrap: str, topic: str) -> set[tuple[str, str]]:
    return {(h.source_alias, h.target_alias) for h, _ in _heartbeats(bootstrap, topic)}


def test_enabled_and_disabled_flows_emit_heartbeats_that_flows_replicate(
    two_clusters, aliases, spark, tmp_path
):
    east, west = two_clusters
    e, w = aliases
    config = tmp_path / "mm2.properties"
    config.write_text(
        f"clusters = {e}, {w}, nowhere\n"
        f"{e}.bootstrap.servers = {east.bootstrap_servers}\n"
        f"{w}.bootstrap.servers = {west.bootstrap_servers}\n"
        f"nowhere.bootstrap.servers = {UNREACHABLE}\n"
        "replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\n"
        "heartbeats.topic.replication.factor = 1\n"
        "checkpoints.topic.replication.factor = 1\n"
        "refresh.topics.interval.seconds = 1\n"
        # Only heartbeats match: they are replicated whatever the filter says.
        f"{e}->{w}.enabled = true\n"
        f"{e}->{w}.topics = no-topic-is-called-this\n"
        # {w}->{e} stays disabled: it only emits heartbeats into {e}.
    )
    remote = f"{e}.heartbeats"

    with running_driver(config, spark, tmp_path / "work") as driver:
        wait_until(
            lambda: {(e, w), ("nowhere", w)} <= _pairs(west.bootstrap_servers, "heartbeats"),
            timeout=60,
            what=f"heartbeats of {e}->{w} and nowhere->{w} in {w}'s heartbeats topic",
        )
        wait_until(
            lambda: {(w, e), ("nowhere", e)} <= _pairs(east.bootstrap_servers, "heartbeats"),
            timeout=60,
            what=f"heartbeats of the disabled flow {w}->{e} in {e}'s heartbeats topic",
        )
        wait_until(
            lambda: (w, e) in _pairs(west.bootstrap_servers, remote),
            timeout=120,
            what=f"{e}'s heartbeats replicated to {w} as {remote}",
        )
        # Flows into the unreachable cluster fail, with the reason, and hold up nothing
        # (a beat gives up after a few seconds: the first failure may still be coming).
        unreachable = (f"{e}->nowhere", f"{w}->nowhere")
        wait_until(
            lambda: all(s.failing for s in driver.heartbeat_statuses() if s.flow in unreachable),
            timeout=60,
            what="the heartbeats into the unreachable cluster reported as failing",
        )
        statuses = {s.flow: s for s in driver.heartbeat_statuses()}
        for flow in unreachable:
            assert "Connection refused" in statuses[flow].error, statuses[flow]
            assert statuses[flow].emitted == 0
        for flow in (f"{e}->{w}", f"{w}->{e}", f"nowhere->{e}", f"nowhere->{w}"):
            assert statuses[flow].emitted > 0 and not statuses[flow].failing, statuses[flow]

    # One partition, compacted, as MM2 creates it; record time = heartbeat time.
    west_admin = admin(west.bootstrap_servers)
    topic_meta = west_admin.list_topics("heartbeats", timeout=10)
    assert len(topic_meta.topics["heartbeats"].partitions) == 1
    resource = ConfigResource(ResourceType.TOPIC, "heartbeats")
    described = west_admin.describe_configs([resource])[resource].result(10)
    assert described["cleanup.policy"].value == "compact"
    beats = _heartbeats(west.bootstrap_servers, "heartbeats")
    assert all(beat.timestamp == timestamp for beat, timestamp in beats)

    # MM2's own formatter reads every record, local and replicated.
    local = java_format_topic(west.bootstrap_servers, "heartbeats", "heartbeat")
    assert len(local) == len(beats)
    assert any(f"sourceClusterAlias={e}, targetClusterAlias={w}," in line for line in local)
    replicated = java_format_topic(west.bootstrap_servers, remote, "heartbeat")
    assert any(f"sourceClusterAlias={w}, targetClusterAlias={e}," in line for line in replicated)
