"""Checkpoints across two hops: east -> west -> central.

A group reads `orders` on east. The east->west flow checkpoints it and syncs
its offsets to the same group on west (`east.orders`); the west->central flow
checkpoints that group for `west.east.orders` on central. A consumer of the
group on central then reads exactly the records it had not read on east.
"""

from __future__ import annotations

from mirrorline.client import translate_offsets
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    checkpoints_of,
    commit_offsets,
    consume_to_end,
    create_topic,
    produce,
    unique_name,
)
from support.wait import wait_until

PARTITIONS = 2


def test_a_group_is_translated_across_two_hops(three_clusters, spark, tmp_path):
    east, west, central = three_clusters
    topic = unique_name("orders")
    on_west, on_central = f"east.{topic}", f"west.east.{topic}"
    group = unique_name("analytics")
    create_topic(east.bootstrap_servers, topic, PARTITIONS)
    produced = produce(
        east.bootstrap_servers,
        topic,
        [Record(None, f"r{i}".encode(), partition=i % PARTITIONS) for i in range(3_000)],
    )
    read_on_east = {0: 700, 1: 1_234}
    commit_offsets(east.bootstrap_servers, group, topic, read_on_east)
    config = write_config(
        tmp_path / "hops.properties",
        [east, west, central],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "east->west.sync.group.offsets.enabled = true\n"
        "east->west.sync.group.offsets.interval.seconds = 1\n"
        f"west->central.enabled = true\nwest->central.topics = {on_west}\n"
        "emit.checkpoints.interval.seconds = 1\nrefresh.groups.interval.seconds = 1\n",
    )
    with running_driver(config, spark, tmp_path / "work"):
        # The remote topics start empty, so the group's offsets are the same numbers on
        # every hop; what it reads on central below is the real check.
        wait_until(
            lambda: _checkpointed(central, "west", group, on_central) == read_on_east,
            timeout=180,
            what=f"checkpoints of {group} on central for {on_central}",
        )
    # What an application moving to central asks: the group's offsets there.
    found = translate_offsets({"bootstrap.servers": central.bootstrap_servers}, "west", group)
    translated = {p: t.offset for (topic, p), t in found.items() if topic == on_central}
    expected = {
        p: sorted(r.value for r in produced if r.partition == p and r.offset >= read_on_east[p])
        for p in range(PARTITIONS)
    }
    replica = consume_to_end(central.bootstrap_servers, on_central)
    for p in range(PARTITIONS):
        unread = [r.value for r in replica if r.partition == p and r.offset >= translated[p]]
        assert sorted(unread) == expected[p]
        assert len(unread) == len(expected[p])


def _checkpointed(cluster, source: str, group: str, topic: str) -> dict[int, int]:
    """The group's offsets on `source` that the checkpoints on `cluster` carry."""
    found = checkpoints_of(cluster.bootstrap_servers, source, group, topic)
    return {p: c.upstream_offset for p, c in found.items()}
