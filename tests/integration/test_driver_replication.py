"""`mirrorline driver` replicates faithfully, resumes from the target, and writes exact syncs;
`mirrorline verify` proves the copy identical through the flow's runs."""

from __future__ import annotations

import gc
import json
import shutil

from confluent_kafka import Consumer, Producer
from typer.testing import CliRunner

from mirrorline.admin_client import AdminClient
from mirrorline.cli.main import app
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    by_partition,
    consume,
    create_topic,
    end_offsets,
    produce,
    read_offset_syncs,
    unique_name,
    varied_records,
)
from support.wait import wait_until

PARTITIONS = 6


def _records(count: int, seed: int, start: int = 0) -> list[Record]:
    return varied_records(count, seed, PARTITIONS, start)


def _wait_for_count(bootstrap, topic, count, timeout=180):
    def arrived():
        return sum(end_offsets(bootstrap, topic).values()) >= count

    wait_until(arrived, timeout=timeout, what=f"{count} records in {topic}")


def test_replicates_identically_and_resumes_after_restart_and_lost_checkpoints(
    two_clusters, spark, tmp_path
):
    east, west = two_clusters
    topic = unique_name("orders")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n",
    )
    first = produce(east.bootstrap_servers, topic, _records(100_000, seed=1))

    with running_driver(config, spark, tmp_path / "work") as driver:
        _wait_for_count(west.bootstrap_servers, remote, 100_000)
        status = driver.statuses()[0]
        assert status.state == "running" and status.topics == (topic,)

    # Same partition, key, value (nulls kept), headers and timestamp, in order.
    copied = consume(west.bootstrap_servers, remote, expected=100_000, timeout=120)
    assert by_partition(copied) == by_partition(first)

    # Offset syncs (MM2 layout, on the source) point at the real copies.
    syncs = [
        s
        for s in read_offset_syncs(east.bootstrap_servers, "mm2-offset-syncs.west.internal")
        if s.topic == topic
    ]
    assert syncs, "no offset syncs written"
    source_at = {(r.partition, r.offset): r for r in first}
    target_at = {(r.partition, r.offset): r for r in copied}
    for sync in syncs:
        original = source_at[(sync.partition, sync.upstream_offset)]
        copy = target_at[(sync.partition, sync.downstream_offset)]
        assert (copy.key, copy.value, copy.headers, copy.timestamp) == (
            original.key,
            original.value,
            original.headers,
            original.timestamp,
        )

    # A graceful restart continues without loss.
    second = produce(east.bootstrap_servers, topic, _records(10_000, seed=2, start=100_000))
    with running_driver(config, spark, tmp_path / "work"):
        _wait_for_count(west.bootstrap_servers, remote, 110_000)

    # Losing the Spark checkpoint directory changes nothing: progress lives in Kafka.
    shutil.rmtree(tmp_path / "work", ignore_errors=True)
    third = produce(east.bootstrap_servers, topic, _records(10_000, seed=3, start=110_000))
    with running_driver(config, spark, tmp_path / "work"):
        _wait_for_count(west.bootstrap_servers, remote, 120_000)

    everything = consume(west.bootstrap_servers, remote, expected=120_000, timeout=120)
    assert len(everything) == 120_000, "duplicates or losses across restarts"
    assert by_partition(everything) == by_partition(first + second + third)

    # `mirrorline verify` proves the same through the flow's own runs and progress.
    result = CliRunner().invoke(
        app, ["verify", "-c", str(config), "-s", "east", "-t", "west", "--topics", topic, "--json"]
    )
    report = json.loads(result.stdout)
    assert result.exit_code == 0, report
    assert report["verdict"] == "identical"
    assert report["totals"]["checked"] == 120_000
    assert report["totals"]["not_yet_copied"] == report["totals"]["not_covered"] == 0


def test_offset_syncs_on_the_target_when_configured(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic = unique_name("synctarget")
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    sent = produce(east.bootstrap_servers, topic, _records(2_000, seed=5))
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "east->west.offset-syncs.topic.location = target\n",
    )
    with running_driver(config, spark, tmp_path / "work"):
        _wait_for_count(west.bootstrap_servers, f"east.{topic}", 2_000)

    syncs = [
        s
        for s in read_offset_syncs(west.bootstrap_servers, "mm2-offset-syncs.east.internal")
        if s.topic == topic
    ]
    assert syncs, "no offset syncs on the target"
    copies = consume(west.bootstrap_servers, f"east.{topic}", expected=2_000)
    source_at = {(r.partition, r.offset): r.value for r in sent}
    target_at = {(r.partition, r.offset): r.value for r in copies}
    for sync in syncs:
        assert (
            source_at[(sync.partition, sync.upstream_offset)]
            == target_at[(sync.partition, sync.downstream_offset)]
        )


def _open_clients() -> list:
    """The librdkafka clients of this process that still hold their threads."""
    gc.collect()
    return [
        o
        for o in gc.get_objects()
        if isinstance(o, (Producer, Consumer)) or (isinstance(o, AdminClient) and not o._closed)
    ]


def test_a_stopped_driver_leaves_no_kafka_client_behind(two_clusters, spark, tmp_path):
    """Its parts end their clients as they stop, not when they are dropped: a client left
    open keeps reconnecting to its cluster for as long as the process lives."""
    east, west = two_clusters
    topic = unique_name("clients")
    create_topic(east.bootstrap_servers, topic, PARTITIONS)
    produce(east.bootstrap_servers, topic, _records(10, seed=7))
    before = {id(o) for o in _open_clients()}
    config = write_config(
        tmp_path / "c.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n",
    )
    with running_driver(config, spark, tmp_path / "w") as driver:
        _wait_for_count(west.bootstrap_servers, f"east.{topic}", 10)
    left = [type(o).__name__ for o in _open_clients() if id(o) not in before]
    assert left == [], f"clients still open after the driver stopped: {left}"
    assert driver.statuses()  # the stopped driver (and its parts) is still referenced
