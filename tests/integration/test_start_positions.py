"""Where a flow starts on partitions without progress: latest, explicit offsets, a time."""

from __future__ import annotations

import time
from contextlib import contextmanager

from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    consume,
    create_topic,
    end_offsets,
    produce,
    topic_names,
    unique_name,
)
from support.wait import assert_stays, wait_until


def _remote_count(cluster, topic: str) -> int:
    if topic not in topic_names(cluster.bootstrap_servers):
        return -1
    return sum(end_offsets(cluster.bootstrap_servers, topic).values())


@contextmanager
def _running_from(two_clusters, spark, tmp_path, topic: str, position: str):
    east, west = two_clusters
    config = write_config(
        tmp_path / f"{abs(hash(position))}.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        f"east->west.start.position = {position}\n",
    )
    with running_driver(config, spark, tmp_path / "w") as driver:
        wait_until(
            lambda: driver.statuses()[0].topics == (topic,),
            timeout=60,
            what="the query to start",
        )
        yield driver


def test_latest_skips_what_was_there_before(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic = unique_name("latest")
    create_topic(east.bootstrap_servers, topic, partitions=2)
    produce(
        east.bootstrap_servers, topic, [Record(b"old", b"x", (), None, i % 2) for i in range(100)]
    )
    with _running_from(two_clusters, spark, tmp_path, topic, "latest"):
        produce(
            east.bootstrap_servers,
            topic,
            [Record(b"new", b"y", (), None, i % 2) for i in range(30)],
        )
        wait_until(lambda: _remote_count(west, f"east.{topic}") == 30, timeout=60, what="30 new")
        assert_stays(lambda: _remote_count(west, f"east.{topic}") == 30, seconds=3, what="only new")
    assert {r.key for r in consume(west.bootstrap_servers, f"east.{topic}", expected=30)} == {
        b"new"
    }


def test_explicit_offsets_and_earliest_for_the_rest(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic = unique_name("explicit")
    create_topic(east.bootstrap_servers, topic, partitions=2)
    produce(
        east.bootstrap_servers,
        topic,
        [Record(f"{i}".encode(), b"v", (), None, i % 2) for i in range(100)],
    )
    with _running_from(two_clusters, spark, tmp_path, topic, f"{topic}:0:40"):
        # Partition 0 from offset 40 (10 of its 50), partition 1 from its beginning (50).
        wait_until(
            lambda: _remote_count(west, f"east.{topic}") == 60, timeout=60, what="60 records"
        )
    by_partition = end_offsets(west.bootstrap_servers, f"east.{topic}")
    assert by_partition == {0: 10, 1: 50}


def test_timestamp_starts_at_the_first_record_at_or_after_it(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic = unique_name("since")
    create_topic(east.bootstrap_servers, topic, partitions=1)
    now = int(time.time() * 1000)
    produce(
        east.bootstrap_servers,
        topic,
        [Record(f"{i}".encode(), b"v", (), now - 60_000 + i * 1000) for i in range(50)],
    )
    since = now - 60_000 + 20 * 1000  # the 21st record's time
    with _running_from(two_clusters, spark, tmp_path, topic, str(since)):
        wait_until(
            lambda: _remote_count(west, f"east.{topic}") == 30, timeout=60, what="30 records"
        )
    keys = [r.key for r in consume(west.bootstrap_servers, f"east.{topic}", expected=30)]
    assert keys == [f"{i}".encode() for i in range(20, 50)]
