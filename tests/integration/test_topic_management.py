"""Remote topics follow the source (creation, partitions, configs); failures stay per topic."""

from __future__ import annotations

from confluent_kafka.admin import (
    ConfigResource,
    ConfigSource,
    NewPartitions,
    ResourceType,
)

from mirrorline.admin_client import AdminClient
from support.driving import running_driver, write_config
from support.kafka_io import Record, create_topic, end_offsets, produce, topic_names, unique_name
from support.wait import wait_until


def _topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
    entries = admin.describe_configs([resource])[resource].result(30)
    return {name: entry.value for name, entry in entries.items()}


def _alter(bootstrap: str, topic: str, **configs: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    entries = [
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
        for k, v in configs.items()
    ]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def test_new_topics_partitions_and_configs_follow_the_source(two_clusters, spark, tmp_path):
    east, west = two_clusters
    prefix = unique_name("live")
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {prefix}\\..*\n",
    )
    early = f"{prefix}.early"
    create_topic(east.bootstrap_servers, early, partitions=1)

    with running_driver(config, spark, tmp_path / "work") as driver:
        wait_until(
            lambda: driver.statuses()[0].topics == (early,),
            timeout=60,
            what="the first topic",
        )
        # A topic created while the driver runs, with a config of its own.
        late = f"{prefix}.late"
        create_topic(
            east.bootstrap_servers,
            late,
            partitions=3,
            config={"retention.ms": "86400000", "min.insync.replicas": "1"},
        )
        produce(east.bootstrap_servers, late, [Record(b"k", b"v", (), None, p) for p in range(3)])
        remote = f"east.{late}"
        wait_until(
            lambda: (
                sum(end_offsets(west.bootstrap_servers, remote).values()) == 3
                if remote in topic_names(west.bootstrap_servers)
                else False
            ),
            timeout=60,
            what="the new topic's records on the target",
        )
        copied = _topic_config(west.bootstrap_servers, remote)
        assert copied["retention.ms"] == "86400000"

        # More partitions at the source: the target gets them and their records.
        source_admin = AdminClient({"bootstrap.servers": east.bootstrap_servers})
        source_admin.create_partitions([NewPartitions(late, 5)])[late].result(30)
        wait_until(
            lambda: len(end_offsets(east.bootstrap_servers, late)) == 5,
            timeout=30,
            what="source partitions",
        )
        produce(east.bootstrap_servers, late, [Record(b"n", b"v", (), None, p) for p in (3, 4)])
        wait_until(
            lambda: (lambda ends: len(ends) == 5 and ends[3] == 1 and ends[4] == 1)(
                end_offsets(west.bootstrap_servers, remote)
            ),
            timeout=60,
            what="records in the new partitions on the target",
        )

        # A config change at the source reaches the target; an excluded property does not.
        _alter(east.bootstrap_servers, late, retention_ms="3600000", min_insync_replicas="1")
        wait_until(
            lambda: _topic_config(west.bootstrap_servers, remote)["retention.ms"] == "3600000",
            timeout=60,
            what="retention.ms on the target",
        )

    target = _topic_config(west.bootstrap_servers, remote)
    source = _topic_config(east.bootstrap_servers, late)
    # min.insync.replicas is excluded by default: the target keeps its own value.
    assert source["min.insync.replicas"] == "1"
    target_admin = AdminClient({"bootstrap.servers": west.bootstrap_servers})
    target_entries = target_admin.describe_configs([ConfigResource(ResourceType.TOPIC, remote)])
    (entries,) = [f.result(30) for f in target_entries.values()]
    copied_override = (
        entries["min.insync.replicas"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    )
    assert not copied_override, "an excluded property was copied"
    assert target["retention.ms"] == "3600000"


def test_a_topic_that_cannot_be_created_is_reported_and_others_flow(two_clusters, spark, tmp_path):
    east, west = two_clusters
    prefix = unique_name("bad")
    # 249 characters is Kafka's limit: the remote name "east.<name>" exceeds it.
    too_long = (prefix + ".x" + "y" * 300)[:249]
    fine = f"{prefix}.fine"
    create_topic(east.bootstrap_servers, too_long)
    create_topic(east.bootstrap_servers, fine)
    produce(east.bootstrap_servers, fine, [Record(b"k", f"{i}".encode()) for i in range(10)])
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {prefix}\\..*\n",
    )
    with running_driver(config, spark, tmp_path / "work") as driver:
        wait_until(
            lambda: (
                end_offsets(west.bootstrap_servers, f"east.{fine}").get(0) == 10
                if f"east.{fine}" in topic_names(west.bootstrap_servers)
                else False
            ),
            timeout=60,
            what="the good topic's records",
        )
        status = wait_until(
            lambda: (lambda s: s if s.problems else None)(driver.statuses()[0]),
            timeout=30,
            what="a problem in the flow status",
        )
    assert status.state == "running"
    assert status.topics == (fine,)
    (problem,) = status.problems
    assert f"east.{too_long}" in problem and "create" in problem
