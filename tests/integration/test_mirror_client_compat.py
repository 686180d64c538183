"""`mirrorline.client` gives MM2's answers (`RemoteClusterUtils`, `MirrorClient`) on a real cluster.

The west cluster is made to look like the target of two upstream clusters
with aliases of this test's own, `a<id>` (one hop) and `b<id>` (two hops,
through `a<id>`): heartbeats topics, a remote topic and a checkpoints topic
holding checkpoints written with `formats.Checkpoint`. Both clients are then
asked the same questions. The topics are removed afterwards, so that later
flows out of the shared cluster do not replicate these heartbeats topics.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer

from mirrorline import client
from mirrorline.formats import Checkpoint
from mirrorline.kafka import KafkaOperationError
from support.kafka_io import Record, create_topic, delete_topics, produce
from support.mm2_java import (
    java_checkpoint_topics,
    java_heartbeat_topics,
    java_remote_topics,
    java_replication_hops,
    java_translate_offsets,
    java_upstream_clusters,
)


@pytest.fixture
def upstream(two_clusters):
    """West as the target of `a` (directly) and `b` (through `a`); yields (a, b, topic)."""
    _, west = two_clusters
    suffix = uuid.uuid4().hex[:6]
    a, b = f"a{suffix}", f"b{suffix}"
    remote = f"{a}.orders"
    topics = [f"{a}.heartbeats", f"{a}.{b}.heartbeats", remote, f"orders{suffix}"]
    for topic in topics:
        create_topic(west.bootstrap_servers, topic, partitions=2 if topic == remote else 1)
    checkpoints = f"{a}.checkpoints.internal"
    create_topic(west.bootstrap_servers, checkpoints, config={"cleanup.policy": "compact"})
    yield a, b, remote
    delete_topics(west.bootstrap_servers, [*topics, checkpoints])


def _write_checkpoints(bootstrap: str, source_alias: str, checkpoints: list[Checkpoint]) -> None:
    records = [Record(c.key(), c.value()) for c in checkpoints]
    produce(bootstrap, f"{source_alias}.checkpoints.internal", records)


def test_translate_offsets_agrees_with_remote_cluster_utils(two_clusters, upstream):
    _, west = two_clusters
    a, _, remote = upstream
    group, other = f"billing-{uuid.uuid4().hex[:6]}", f"audit-{uuid.uuid4().hex[:6]}"
    _write_checkpoints(
        west.bootstrap_servers,
        a,
        [
            Checkpoint(group, remote, 0, 10, 8, "first"),
            Checkpoint(group, remote, 1, 20, 19, ""),
            Checkpoint(other, remote, 0, 99, 98, ""),
            Checkpoint(group, remote, 0, 15, 13, "later"),  # the latest per partition wins
        ],
    )
    settings = {"bootstrap.servers": west.bootstrap_servers}

    ours = client.translate_offsets(settings, a, group)

    assert ours == {
        (remote, 0): client.TranslatedOffset(13, "later", 15),
        (remote, 1): client.TranslatedOffset(19, "", 20),
    }
    assert {k: t.offset for k, t in ours.items()} == java_translate_offsets(
        west.bootstrap_servers, a, group
    )
    assert client.translate_offsets(settings, a, "no-such-group") == {}
    # No checkpoints topic at all: no checkpoints (MM2 waits for its timeout instead).
    assert client.translate_offsets(settings, f"none{uuid.uuid4().hex[:6]}", group) == {}

    # The result commits as is, metadata included, for a group about to start on west.
    consumer = Consumer({"bootstrap.servers": west.bootstrap_servers, "group.id": group})
    try:
        consumer.commit(offsets=client.as_topic_partitions(ours), asynchronous=False)
        committed = consumer.committed(client.as_topic_partitions(ours), timeout=10)
    finally:
        consumer.close()
    assert [(p.partition, p.offset, p.metadata) for p in committed] == [
        (0, 13, "later"),
        (1, 19, ""),
    ]


def test_topic_questions_agree_with_mirror_client(two_clusters, upstream):
    _, west = two_clusters
    a, b, remote = upstream
    bootstrap = west.bootstrap_servers
    settings = {"bootstrap.servers": bootstrap}

    heartbeats = client.heartbeat_topics(settings)
    assert {f"{a}.heartbeats", f"{a}.{b}.heartbeats"} <= heartbeats
    assert heartbeats == java_heartbeat_topics(bootstrap)

    upstream_clusters = client.upstream_clusters(settings)
    assert {a, b} <= upstream_clusters
    assert upstream_clusters == java_upstream_clusters(bootstrap)

    for alias, hops in ((a, 1), (b, 2), ("nowhere", -1)):
        assert client.replication_hops(settings, alias) == hops
        assert java_replication_hops(bootstrap, alias) == hops

    checkpoints = client.checkpoint_topics(settings)
    assert f"{a}.checkpoints.internal" in checkpoints
    assert checkpoints == java_checkpoint_topics(bootstrap)

    from_a = {remote, f"{a}.heartbeats", f"{a}.{b}.heartbeats"}
    assert client.remote_topics(settings, a) == from_a == java_remote_topics(bootstrap, a)
    # Over all sources Mirrorline may know more (remote topics published by
    # identity-policy flows), never less. MM2 takes Mirrorline's own internal
    # topics (`mirrorline.progress.internal`...) for remote topics of a cluster
    # named "mirrorline": those are left out.
    theirs = {t for t in java_remote_topics(bootstrap) if not t.startswith("mirrorline.")}
    assert theirs <= client.remote_topics(settings)


def test_a_cluster_that_does_not_answer_is_named():
    silent = client.MirrorClient({"bootstrap.servers": "127.0.0.1:1"}, cluster="dr", timeout=2)
    with pytest.raises(KafkaOperationError, match=r"cluster dr \(127.0.0.1:1\) does not answer"):
        silent.upstream_clusters()
