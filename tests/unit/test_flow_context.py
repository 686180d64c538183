"""A flow's typed settings and shared clients, as its parts receive them."""

from __future__ import annotations

import pytest

from mirrorline.config.flow_settings import FlowSettings, LoopIntervals, PaceSettings
from mirrorline.config.loader import parse_config
from mirrorline.flow_context import FlowContext
from mirrorline.kafka import KafkaOperationError

BASE = """\
clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""


def _flow(extra: str = ""):
    return parse_config(BASE + extra, source="t.properties", environ={}).flow("A", "B")


def test_defaults_are_mm2s_with_types_a_checker_follows():
    settings = FlowSettings.of(_flow())
    assert settings == FlowSettings(
        replication_factor=2,
        offset_syncs_replication_factor=3,
        checkpoints_replication_factor=3,
        heartbeats_replication_factor=3,
        offset_lag_max=100,
        max_poll_records=500,
        micro_batch=PaceSettings(duration_s=5.0, max_records=None),
        tasks_max=None,
        exactly_once=False,
        tolerate_refusals=False,
        dead_letter_topic=None,
        dead_letter_replication_factor=3,
        emit_offset_syncs=True,
        real_time_batch_ms=None,
        intervals=LoopIntervals(
            refresh_topics=600.0,
            refresh_groups=600.0,
            sync_topic_configs=600.0,
            sync_topic_acls=600.0,
            emit_checkpoints=60.0,
            emit_heartbeats=1.0,
            emit_metrics=5.0,
            sync_group_offsets=None,
        ),
    )


def test_configured_values_override_the_defaults():
    settings = FlowSettings.of(
        _flow(
            "A->B.tasks.max = 1\n"  # set, even to the default: the flow coalesces
            "replication.factor = -1\n"
            "exactly.once.source.support = enabled\n"
            "errors.tolerance = all\n"
            "errors.deadletterqueue.topic.name = refused\n"
            "emit.checkpoints.enabled = false\n"
            "sync.group.offsets.enabled = true\n"
            "sync.group.offsets.interval.seconds = 5\n"
            "A->B.max.poll.records = 700\n"
            "micro-batch.duration.ms = 2500\n"
            "A->B.micro-batch.max.records = 9000\n"
        )
    )
    assert settings.tasks_max == 1
    assert settings.replication_factor == -1
    assert settings.exactly_once and settings.tolerate_refusals
    assert settings.dead_letter_topic == "refused"
    assert settings.intervals.emit_checkpoints is None
    assert settings.intervals.sync_group_offsets == 5.0
    assert settings.max_poll_records == 700
    assert settings.micro_batch == PaceSettings(duration_s=2.5, max_records=9000)


def test_real_time_batches_only_in_real_time_mode():
    assert FlowSettings.of(_flow("real-time.batch.ms = 9000\n")).real_time_batch_ms is None
    real_time = _flow("A->B.data.path.mode = real-time\nreal-time.batch.ms = 9000\n")
    assert FlowSettings.of(real_time).real_time_batch_ms == 9000


def test_the_context_shares_one_set_of_clients_per_cluster_and_closes_them_once():
    context = FlowContext(_flow("offset-syncs.topic.location = target\n"))
    assert (context.source.alias, context.target.alias) == ("A", "B")
    assert context.offset_syncs is context.target
    assert context.source.consumer_settings["bootstrap.servers"] == "a:9092"
    assert context.target.producer_settings["bootstrap.servers"] == "b:9092"
    context.close()
    with pytest.raises(KafkaOperationError, match="clients of cluster B are closed"):
        _ = context.target.admin


def test_spark_gets_the_source_consumers_settings_without_those_it_manages():
    context = FlowContext(_flow("A.consumer.auto.offset.reset = latest\n"))
    options = context.spark_source_options()
    assert options["kafka.bootstrap.servers"] == "a:9092"
    assert not any(key.endswith(("auto.offset.reset", "group.id")) for key in options)
    # Spark's consumer reads across the WAN: its receive window is the OS's (autotuned).
    assert options["kafka.receive.buffer.bytes"] == "-1"
    sized = FlowContext(_flow("A.consumer.receive.buffer.bytes = 4194304\n"))
    assert sized.spark_source_options()["kafka.receive.buffer.bytes"] == "4194304"
