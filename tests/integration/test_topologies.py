"""Replication topologies: exactly the expected topics and counts everywhere, and no loops."""

from __future__ import annotations

from mirrorline.client import heartbeat_topics, replication_hops, upstream_clusters
from mirrorline.devcluster import DevClusters
from mirrorline.formats import Heartbeat
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

IDENTITY = "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"


def _populate(cluster, topic: str, count: int, partitions: int = 2) -> None:
    create_topic(cluster.bootstrap_servers, topic, partitions=partitions)
    produce(
        cluster.bootstrap_servers,
        topic,
        [
            Record(f"{cluster.alias}-{i}".encode(), b"v", (), None, i % partitions)
            for i in range(count)
        ],
    )


def _counts(cluster, marker: str) -> dict[str, int]:
    """Records per topic, for the topics of this test (their names contain `marker`)."""
    return {
        t: sum(end_offsets(cluster.bootstrap_servers, t).values())
        for t in topic_names(cluster.bootstrap_servers)
        if marker in t and not t.startswith("mm2-") and not t.startswith("mirrorline.")
    }


def _expect(expected: dict, marker: str, timeout: float = 120) -> None:
    """Wait until each cluster holds exactly the expected topics and counts; check they stay."""

    def matches():
        return all(_counts(c, marker) == want for c, want in expected.items())

    def show():
        return {c.alias: _counts(c, marker) for c in expected}

    wait_until(lambda: matches() or None, timeout=timeout, what=f"topics and counts {expected}")
    # A loop would copy a copy within a topic refresh (1-2 s here) and a batch (0.2 s).
    assert_stays(matches, seconds=3, what=f"stable counts (now {show()})")


def _flows(*pairs: str, topics: str) -> str:
    return "".join(f"{p}.enabled = true\n{p}.topics = {topics}\n" for p in pairs)


def test_bidirectional_default_policy(two_clusters, spark, tmp_path):
    east, west = two_clusters
    p = unique_name("bi")
    _populate(east, f"{p}.orders", 100)
    _populate(west, f"{p}.orders", 50)
    config = write_config(
        tmp_path / "c.properties",
        [east, west],
        _flows("east->west", "west->east", topics=f".*{p}.*"),
    )
    with running_driver(config, spark, tmp_path / "w"):
        _expect(
            {
                east: {f"{p}.orders": 100, f"west.{p}.orders": 50},
                west: {f"{p}.orders": 50, f"east.{p}.orders": 100},
            },
            p,
        )


def test_chain_and_fan_out(three_clusters, spark, tmp_path):
    """One driver: a chain east -> west -> central (topics `p`) and a fan-out
    east -> west, east -> central (topics `q`); each flow's filter keeps the other
    shape's topics out of it."""
    east, west, central = three_clusters
    p, q = unique_name("chain"), unique_name("fanout")
    _populate(east, f"{p}.t", 100)
    _populate(east, f"{q}.t", 40)
    config = write_config(
        tmp_path / "c.properties",
        [east, west, central],
        _flows("east->west", topics=f".*{p}.*, .*{q}.*")
        + _flows("west->central", topics=f".*{p}.*")
        + _flows("east->central", topics=f".*{q}.*"),
    )
    with running_driver(config, spark, tmp_path / "w"):
        _expect(
            {
                east: {f"{p}.t": 100},
                west: {f"east.{p}.t": 100},
                central: {f"west.east.{p}.t": 100},
            },
            p,
        )
        _expect({east: {f"{q}.t": 40}, west: {f"east.{q}.t": 40}, central: {f"east.{q}.t": 40}}, q)


def test_ring_of_three_and_one_cluster_stopping(two_clusters, spark, tmp_path):
    east, west = two_clusters
    # A private third cluster, so that stopping it leaves the shared ones alone.
    private = DevClusters(tmp_path / "ring")
    (ring,) = private.up(["ring"], die_with_parent=True)
    try:
        p = unique_name("ring")
        _populate(east, f"{p}.t", 10)
        _populate(west, f"{p}.t", 20)
        _populate(ring, f"{p}.t", 30)
        config = write_config(
            tmp_path / "c.properties",
            [east, west, ring],
            _flows("east->west", "west->ring", "ring->east", topics=f".*{p}.*"),
        )
        with running_driver(config, spark, tmp_path / "w") as driver:
            _expect(
                {
                    east: {f"{p}.t": 10, f"ring.{p}.t": 30, f"ring.west.{p}.t": 20},
                    west: {f"{p}.t": 20, f"east.{p}.t": 10, f"east.ring.{p}.t": 30},
                    ring: {f"{p}.t": 30, f"west.{p}.t": 20, f"west.east.{p}.t": 10},
                },
                p,
            )
            private.stop("ring")
            produce(east.bootstrap_servers, f"{p}.t", [Record(b"after", b"v")] * 5)
            wait_until(
                lambda: _counts(west, p).get(f"east.{p}.t") == 15,
                timeout=60,
                what="east->west to keep flowing while ring is down",
            )
            states = {s.flow: s.state for s in driver.statuses()}
            assert states["east->west"] == "running"
            # Back again: west->ring delivers what it held (and the driver stops between
            # batches, not after abandoning one written to a cluster that is gone).
            private.start("ring", die_with_parent=True)
            _expect(
                {
                    east: {f"{p}.t": 15, f"ring.{p}.t": 30, f"ring.west.{p}.t": 20},
                    west: {f"{p}.t": 20, f"east.{p}.t": 15, f"east.ring.{p}.t": 30},
                    ring: {f"{p}.t": 30, f"west.{p}.t": 20, f"west.east.{p}.t": 15},
                },
                p,
            )
    finally:
        private.down()


def test_identity_fan_in_aggregates_into_one_topic(three_clusters, spark, tmp_path):
    east, west, central = three_clusters
    p = unique_name("agg")
    _populate(east, f"{p}.events", 100)
    _populate(west, f"{p}.events", 50)
    config = write_config(
        tmp_path / "c.properties",
        [east, west, central],
        IDENTITY + _flows("east->central", "west->central", topics=f"{p}.*"),
    )
    with running_driver(config, spark, tmp_path / "w"):
        _expect({central: {f"{p}.events": 150}}, p)


def test_identity_bidirectional_never_loops(two_clusters, spark, tmp_path):
    east, west = two_clusters
    p = unique_name("idbi")
    topic = f"{p}.shared"
    create_topic(east.bootstrap_servers, topic, partitions=2)
    create_topic(west.bootstrap_servers, topic, partitions=2)
    app_headers = (("app", b"billing"), ("trace", b"t-1"))
    produce(
        east.bootstrap_servers,
        topic,
        [Record(f"e{i}".encode(), b"v", app_headers) for i in range(100)],
    )
    produce(
        west.bootstrap_servers,
        topic,
        [Record(f"w{i}".encode(), b"v", app_headers) for i in range(50)],
    )
    config = write_config(
        tmp_path / "c.properties",
        [east, west],
        IDENTITY + _flows("east->west", "west->east", topics=topic),
    )
    with running_driver(config, spark, tmp_path / "w"):
        _expect({east: {topic: 150}, west: {topic: 150}}, p)

    for cluster in (east, west):
        records = consume(cluster.bootstrap_servers, topic, expected=150)
        keys = sorted(r.key for r in records)
        assert keys == sorted(
            [f"e{i}".encode() for i in range(100)] + [f"w{i}".encode() for i in range(50)]
        )
        for r in records:  # application headers untouched, provenance added after them
            assert r.headers[:2] == app_headers


def test_rename_format_both_ways_never_loops(two_clusters, spark, tmp_path):
    """Replicator's `topic.rename.format = ${topic}.replica` on A<->B, with nothing in the
    topic lists to keep copies out (MM2's default exclude list has `.*\\.replica`): the
    copies are never copied back, neither as topics nor as records."""
    east, west = two_clusters
    p = unique_name("rename")
    _populate(east, f"{p}.orders", 60)
    _populate(west, f"{p}.orders", 40)
    config = write_config(
        tmp_path / "c.properties",
        [east, west],
        "topic.rename.format = ${topic}.replica\ntopics.exclude = __.*\n"
        "refresh.topics.interval.seconds = 2\n"
        + _flows("east->west", "west->east", topics=f"{p}.*"),
    )
    with running_driver(config, spark, tmp_path / "w"):
        _expect(
            {
                east: {f"{p}.orders": 60, f"{p}.orders.replica": 40},
                west: {f"{p}.orders": 40, f"{p}.orders.replica": 60},
            },
            p,
        )
    copies = consume(west.bootstrap_servers, f"{p}.orders.replica", expected=60)
    assert sorted(r.key for r in copies) == sorted(f"east-{i}".encode() for i in range(60))


def test_heartbeat_topics_are_replicated_across_a_chain(three_clusters, spark, tmp_path):
    """east -> west -> central: east's heartbeats reach central as `west.east.heartbeats`,
    from which the client library tells central's upstream clusters and hops, as MM2's
    `RemoteClusterUtils` does."""
    east, west, central = three_clusters
    p = unique_name("hb")
    beat = Heartbeat("north", "east", 1_700_000_000_000)
    if "heartbeats" not in topic_names(east.bootstrap_servers):
        create_topic(east.bootstrap_servers, "heartbeats")
    produce(east.bootstrap_servers, "heartbeats", [Record(beat.key(), beat.value())])
    config = write_config(
        tmp_path / "c.properties",
        [east, west, central],
        _flows("east->west", "west->central", topics=f"{p}.*"),
    )
    chained = "west.east.heartbeats"
    with running_driver(config, spark, tmp_path / "w"):
        wait_until(
            lambda: (
                chained in topic_names(central.bootstrap_servers)
                and sum(end_offsets(central.bootstrap_servers, chained).values())
                >= sum(end_offsets(east.bootstrap_servers, "heartbeats").values())
            ),
            timeout=90,
            what=f"{chained} on central",
        )
    copies = consume(
        central.bootstrap_servers,
        chained,
        expected=sum(end_offsets(central.bootstrap_servers, chained).values()),
    )
    assert beat in [Heartbeat.decode(r.key, r.value) for r in copies]
    on_central = {"bootstrap.servers": central.bootstrap_servers}
    assert chained in heartbeat_topics(on_central)
    assert {"west", "east"} <= upstream_clusters(on_central)
    # The fewest hops: 2 over west, or 1 where another test's flow from east left a
    # heartbeats topic (`east.heartbeats`, `east.west.heartbeats`) on the shared cluster.
    assert replication_hops(on_central, "east") in (1, 2)
    assert replication_hops(on_central, "west") == 1
