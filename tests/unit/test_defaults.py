"""Defaults of every setting, checked against MirrorMaker 2's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mirrorline.config.loader import parse_config
from mirrorline.config.model import FlowConfig
from mirrorline.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS_EXCLUDE,
)
from mirrorline.policy import DefaultReplicationPolicy

MINIMAL = """\
clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""


@pytest.fixture
def flow() -> FlowConfig:
    return parse_config(MINIMAL, source="min.properties", environ={}).flow("A", "B")


MM2_DEFAULTS = {
    "topics": (".*",),
    "topics.exclude": DEFAULT_TOPICS_EXCLUDE,
    "groups": (".*",),
    "groups.exclude": DEFAULT_GROUPS_EXCLUDE,
    "config.properties.exclude": DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    "use.defaults.from": "target",
    "tasks.max": 1,
    "replication.factor": 2,
    "offset.lag.max": 100,
    "offset-syncs.topic.location": "source",
    "offset-syncs.topic.replication.factor": 3,
    "checkpoints.topic.replication.factor": 3,
    "heartbeats.topic.replication.factor": 3,
    "emit.offset-syncs.enabled": True,
    "refresh.topics.enabled": True,
    "refresh.topics.interval.seconds": 600,
    "refresh.groups.enabled": True,
    "refresh.groups.interval.seconds": 600,
    "sync.topic.configs.enabled": True,
    "sync.topic.configs.interval.seconds": 600,
    "sync.topic.acls.enabled": True,
    "sync.topic.acls.interval.seconds": 600,
    "emit.checkpoints.enabled": True,
    "emit.checkpoints.interval.seconds": 60,
    "emit.heartbeats.enabled": True,
    "emit.heartbeats.interval.seconds": 1,
    "emit.metrics.enabled": True,
    "emit.metrics.interval.seconds": 5,
    "sync.group.offsets.enabled": False,
    "sync.group.offsets.interval.seconds": 60,
    "heartbeats.replication.enabled": True,
    "exactly.once.source.support": "disabled",
    "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    "replication.policy.separator": ".",
    "replication.policy.internal.topic.separator.enabled": True,
    "topic.rename.format": "",
    "plugin.path": (),
    "offset.storage.topic": "",
    "group.id": "",
    "forwarding.admin.class": "org.apache.kafka.clients.admin.ForwardingAdmin",
    "errors.tolerance": "none",
    "header.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    "errors.deadletterqueue.topic.name": "",
    "errors.deadletterqueue.topic.replication.factor": 3,
    "max.poll.records": 500,
    "micro-batch.duration.ms": 5000,
    "micro-batch.max.records": 0,
    "data.path.mode": "micro-batch",
    "real-time.batch.ms": 1800000,
}


@pytest.mark.parametrize(("name", "expected"), sorted(MM2_DEFAULTS.items()))
def test_flow_setting_defaults(flow: FlowConfig, name: str, expected: object) -> None:
    setting = flow.setting(name)
    assert setting.value == expected
    assert setting.origin.is_default
    assert setting.origin.where == "default"


def test_every_flow_setting_has_a_tested_default(flow: FlowConfig) -> None:
    untested = (
        set(flow.settings)
        - set(MM2_DEFAULTS)
        - {
            "enabled",
            "start.position",
            "topic.filter.class",
            "group.filter.class",
            "config.property.filter.class",
        }
    )
    assert untested == set()


def test_flows_are_disabled_unless_enabled() -> None:
    config = parse_config(MINIMAL, environ={})
    assert config.flow("A", "B").enabled
    reverse = config.flow("B", "A")
    assert not reverse.enabled
    assert reverse.setting("enabled").origin.is_default
    assert [f.name for f in config.enabled_flows()] == ["A->B"]
    # Heartbeats still go both ways by default, as in MM2.
    assert [f.name for f in config.heartbeat_flows()] == ["A->B", "B->A"]


def test_default_objects(flow: FlowConfig) -> None:
    assert flow.policy == DefaultReplicationPolicy()
    assert flow.start_position.kind == "earliest"
    assert flow.topic_filter.matches("orders")
    assert not flow.topic_filter.matches("__consumer_offsets")
    assert not flow.group_filter.matches("console-consumer-1")
    assert not flow.config_property_filter.should_replicate("min.insync.replicas")
    assert flow.offset_syncs_cluster == "A"
    assert flow.offset_syncs_topic == "mm2-offset-syncs.B.internal"
    assert flow.checkpoints_topic == "A.checkpoints.internal"
    assert flow.heartbeats_topic == "heartbeats"


def test_intervals(flow: FlowConfig) -> None:
    assert flow.interval("refresh.topics") == timedelta(minutes=10)
    assert flow.interval("emit.heartbeats") == timedelta(seconds=1)
    assert flow.interval("emit.metrics") == timedelta(seconds=5)
    assert flow.interval("emit.checkpoints") == timedelta(minutes=1)
    assert flow.interval("sync.group.offsets") is None  # disabled by default
    with pytest.raises(KeyError):
        flow.interval("nonsense")


def test_offset_syncs_on_the_target() -> None:
    config = parse_config(MINIMAL + "offset-syncs.topic.location = target\n", environ={})
    flow = config.flow("A", "B")
    assert flow.offset_syncs_cluster == "B"
    assert flow.offset_syncs_topic == "mm2-offset-syncs.A.internal"


def test_client_role_defaults(flow: FlowConfig) -> None:
    source_consumer = flow.client_settings("source", "consumer")
    assert source_consumer["isolation.level"] == "read_uncommitted"
    assert source_consumer["auto.offset.reset"] == "earliest"
    assert source_consumer["enable.auto.commit"] == "false"
    assert source_consumer["client.id"] == "mirrorline|A->B|source-consumer"
    assert source_consumer.setting("isolation.level").origin.is_default
    # The client that crosses the WAN lets the OS size (autotune) its receive window.
    assert flow.java_client_settings("source", "consumer")["receive.buffer.bytes"] == "-1"
    assert source_consumer["socket.receive.buffer.bytes"] == "0"
    assert "receive.buffer.bytes" not in flow.java_client_settings("target", "consumer")
    target_producer = flow.client_settings("target", "producer")
    assert target_producer["acks"] == "all"
    assert target_producer["enable.idempotence"] == "true"
    assert "isolation.level" not in flow.client_settings("target", "consumer")
    assert flow.client_settings("source", "admin")["bootstrap.servers"] == "a:9092"
    assert flow.client_settings("target", "admin")["bootstrap.servers"] == "b:9092"


def test_every_client_reconnects_within_a_second_unless_configured() -> None:
    flow = parse_config(MINIMAL, environ={}).flow("A", "B")
    for side in ("source", "target"):
        for client in ("consumer", "producer", "admin"):
            settings = flow.client_settings(side, client)
            assert settings["reconnect.backoff.max.ms"] == "1000", (side, client)
            assert settings.setting("reconnect.backoff.max.ms").origin.is_default
    # Spark's Kafka source (a Java consumer) gets the same value.
    assert flow.java_client_settings("source", "consumer")["reconnect.backoff.max.ms"] == "1000"
    configured = parse_config(
        MINIMAL + "target.producer.reconnect.backoff.max.ms = 5000\n", environ={}
    ).flow("A", "B")
    assert configured.client_settings("target", "producer")["reconnect.backoff.max.ms"] == "5000"
    assert configured.client_settings("target", "admin")["reconnect.backoff.max.ms"] == "1000"


def test_unknown_setting_names_are_refused(flow: FlowConfig) -> None:
    with pytest.raises(KeyError, match="not a flow setting"):
        flow.setting("offset.lag.maximum")


@pytest.mark.parametrize("key", ["admin.timeout.ms", "A->B.consumer.poll.timeout.ms"])
def test_mm2_timeouts_mirrorline_has_no_use_for_load_with_a_note(key: str) -> None:
    config = parse_config(MINIMAL + f"{key} = 30000\n", source="mm2.properties", environ={})
    name = key.removeprefix("A->B.")
    with pytest.raises(KeyError):
        config.flow("A", "B").setting(name)
    (warning,) = config.warnings
    assert warning.setting == key
    assert warning.message.startswith(
        "ignored: an MM2 setting accepted for compatibility; it has no effect in Mirrorline"
    )
