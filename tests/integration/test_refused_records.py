"""A record the target refuses stops the flow with a status that says exactly which and why."""

from __future__ import annotations

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from support.driving import running_driver, write_config
from support.kafka_io import Record, create_topic, end_offsets, produce, topic_names, unique_name
from support.wait import wait_until


def test_oversized_record_stops_the_flow_with_a_precise_status(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic = unique_name("big")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic)
    config = write_config(
        tmp_path / "c.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        # The target's own limit must stay: do not copy max.message.bytes.
        "config.properties.exclude = max\\\\.message\\\\.bytes\n",
    )
    produce(east.bootstrap_servers, topic, [Record(b"small", b"x" * 100)] * 3)
    with running_driver(config, spark, tmp_path / "w") as driver:
        wait_until(
            lambda: (
                remote in topic_names(west.bootstrap_servers)
                and end_offsets(west.bootstrap_servers, remote) == {0: 3}
            ),
            timeout=60,
            what="the first records",
        )
        admin = AdminClient({"bootstrap.servers": west.bootstrap_servers})
        limit = ConfigEntry(
            "max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET
        )
        resource = ConfigResource(ResourceType.TOPIC, remote, incremental_configs=[limit])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)
        produce(east.bootstrap_servers, topic, [Record(b"big", b"y" * 50_000)])

        status = wait_until(
            lambda: (lambda s: s if s.state == "failed" else None)(driver.statuses()[0]),
            timeout=90,
            what="the flow to fail on the oversized record",
        )
    assert f"{remote}[0]" in status.reason
    assert "source offset 3" in status.reason
    assert "too large" in status.reason.lower()
    # Nothing after the refused record was written, and the three before it stay.
    assert end_offsets(west.bootstrap_servers, remote) == {0: 3}
