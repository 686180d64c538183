"""The dev clusters are real, independent Kafka clusters with the features Mirrorline uses."""

from __future__ import annotations

from confluent_kafka import Producer

from support.kafka_io import (
    Record,
    consume,
    create_topic,
    produce,
    recent_timestamp,
    topic_names,
    unique_name,
)
from support.wait import wait_until


def test_clusters_are_independent(two_clusters):
    east, west = two_clusters
    topic = unique_name("only-east")
    create_topic(east.bootstrap_servers, topic)
    assert topic in topic_names(east.bootstrap_servers)
    assert topic not in topic_names(west.bootstrap_servers)
    assert east.cluster_id != west.cluster_id
    assert east.bootstrap_servers != west.bootstrap_servers


def test_round_trip_keeps_keys_headers_timestamps_and_null_values(two_clusters):
    east, _ = two_clusters
    topic = unique_name("roundtrip")
    create_topic(east.bootstrap_servers, topic, partitions=2)
    sent = [
        Record(b"k1", b"v1", (("trace", b"abc"), ("empty", b"")), recent_timestamp(4), 0),
        Record(b"k2", None, (("tombstone", b"yes"),), recent_timestamp(3), 0),
        Record(None, b"no-key", (), recent_timestamp(2), 1),
        Record(
            b"k3",
            b"",
            (("dup", b"1"), ("dup", b"2"), ("null-header", None)),
            recent_timestamp(60_000),
            1,
        ),
    ]
    produce(east.bootstrap_servers, topic, sent)

    received = consume(east.bootstrap_servers, topic, expected=len(sent))

    by_partition = sorted(received, key=lambda r: (r.partition, r.offset))
    assert by_partition == sent  # key, value, headers (order, duplicates, nulls), timestamp
    assert [r.value for r in received if r.key == b"k2"] == [None]


def _transactional_producer(bootstrap: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique_name("txn")})
    producer.init_transactions(30)
    return producer


def test_committed_transaction_visible_aborted_not(two_clusters):
    east, _ = two_clusters
    topic = unique_name("txn")
    create_topic(east.bootstrap_servers, topic)
    producer = _transactional_producer(east.bootstrap_servers)

    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, key=b"committed", value=str(i).encode())
    producer.commit_transaction(30)

    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, key=b"aborted", value=str(i).encode())
    producer.flush(30)
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(topic, key=b"committed", value=b"after-abort")
    producer.commit_transaction(30)

    committed = consume(east.bootstrap_servers, topic, expected=4)
    assert [(r.key, r.value) for r in committed] == [
        (b"committed", b"0"),
        (b"committed", b"1"),
        (b"committed", b"2"),
        (b"committed", b"after-abort"),
    ]
    # The aborted records were really written: an uncommitted reader sees them.
    everything = consume(
        east.bootstrap_servers, topic, expected=6, isolation_level="read_uncommitted"
    )
    assert sorted(r.key for r in everything).count(b"aborted") == 2


def test_compacted_topic_keeps_latest_value_per_key(two_clusters):
    east, _ = two_clusters
    topic = unique_name("compacted")
    create_topic(
        east.bootstrap_servers,
        topic,
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "100",
            "min.compaction.lag.ms": "0",
        },
    )
    keys = [f"k{i}".encode() for i in range(5)]
    for version in range(4):
        produce(east.bootstrap_servers, topic, [Record(k, f"v{version}".encode()) for k in keys])

    def compacted():
        # Each append after segment.ms rolls the active segment, making the older ones
        # eligible for cleaning; the "roll" records themselves are not checked.
        produce(east.bootstrap_servers, topic, [Record(b"roll", b"x")])
        records = consume(east.bootstrap_servers, topic, expected=10**9, timeout=1)
        data = [r for r in records if r.key != b"roll"]
        return data if len(data) == len(keys) else None

    data = wait_until(compacted, timeout=90, what="the log cleaner to compact the topic")
    assert {r.key: r.value for r in data} == {k: b"v3" for k in keys}


def test_a_port_taken_by_another_cluster_meanwhile_starts_the_cluster_again(
    two_clusters, tmp_path, monkeypatch
):
    """A port picked free can be taken before the node's JVM binds it. Here the first
    pick is the port of a running cluster's broker: that broker answers on it, but as
    another cluster, so the new node is not taken for started; it fails to bind, and
    the cluster starts again on other ports."""
    from mirrorline import devcluster
    from mirrorline.devcluster import DevClusters

    east, _ = two_clusters
    taken = east.nodes[0].port
    picks: list[int] = []

    def first_pick_taken(stack):
        picks.append(taken if not picks else devcluster_reserve(stack))
        return picks[-1]

    devcluster_reserve = devcluster.reserve_port
    monkeypatch.setattr(devcluster, "reserve_port", first_pick_taken)
    said: list[str] = []
    dev = DevClusters(tmp_path / "dev")
    try:
        (started,) = dev.up(["retried"], die_with_parent=True, progress=said.append)
        assert taken not in started.nodes[0].own_ports
        assert any("was taken; starting again on other ports" in line for line in said), said
        topic = unique_name("after-retry")
        create_topic(started.bootstrap_servers, topic)
        assert topic in topic_names(started.bootstrap_servers)
        assert topic not in topic_names(east.bootstrap_servers)
    finally:
        dev.down()
