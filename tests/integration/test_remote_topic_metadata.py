"""Remote-topic metadata on a real cluster: publication, removal, restart, and its readers.

Flows use aliases of this test's own (`src<id>`, `dst<id>` for the east and
west clusters), so the entries read back are this test's alone.
"""

from __future__ import annotations

import uuid

from mirrorline import client
from mirrorline.control.remote_topics import (
    METADATA_TOPIC,
    RemoteTopicPublisher,
    read_remote_topics,
)
from mirrorline.flow_context import FlowContext
from mirrorline.kafka import read_to_end
from support.kafka_io import admin, create_topic, delete_topics, topic_names
from support.own_flow import own_flow


def test_publishes_changes_only_and_removes_topics_no_longer_replicated(two_clusters):
    east, west = two_clusters
    _, flow = own_flow(east, west)
    settings = {"bootstrap.servers": west.bootstrap_servers}
    src = flow.source

    publisher = RemoteTopicPublisher(FlowContext(flow))
    try:
        assert publisher.publish({"orders": 3, "audit": 1}) == 2
        assert read_remote_topics(settings)[flow.name] == {
            "orders": f"{src}.orders",
            "audit": f"{src}.audit",
        }
        assert publisher.publish({"orders": 4, "audit": 1}) == 0  # more partitions: same pair
        assert publisher.publish({"orders": 4}) == 1  # audit is no longer replicated
        assert read_remote_topics(settings)[flow.name] == {"orders": f"{src}.orders"}
    finally:
        publisher.close()

    # A restarted driver reads what is published: nothing to write when nothing changed,
    # and what changed while it was away is corrected.
    restarted = RemoteTopicPublisher(FlowContext(flow))
    try:
        assert restarted.publish({"orders": 4}) == 0
        assert restarted.publish({}) == 1
    finally:
        restarted.close()
    assert flow.name not in read_remote_topics(settings)

    # The records themselves: compacted topic, one partition, tombstones for removals.
    meta = admin(west.bootstrap_servers).list_topics(METADATA_TOPIC, timeout=10)
    assert len(meta.topics[METADATA_TOPIC].partitions) == 1
    ours = [
        (m.key(), m.value())
        for m in read_to_end(settings, METADATA_TOPIC)
        if f'"flow":"{flow.name}"'.encode() in m.key()
    ]
    assert [value is None for _, value in ours] == [False, False, True, True]
    assert ours[0][1].startswith(b'{"remote_topic":"')


def test_remote_topics_of_an_identity_flow_are_found_through_the_metadata(two_clusters):
    east, west = two_clusters
    config, flow = own_flow(east, west, "replication.policy.class = IdentityReplicationPolicy\n")
    settings = {"bootstrap.servers": west.bootstrap_servers}
    kept, missing = f"orders-{uuid.uuid4().hex[:6]}", f"gone-{uuid.uuid4().hex[:6]}"
    create_topic(west.bootstrap_servers, kept)  # the identity-named copy on the target
    publisher = RemoteTopicPublisher(FlowContext(flow))
    try:
        publisher.publish({kept: 1, missing: 1})  # `missing` has no copy on the target
        assert flow.remote_topic(kept) == kept

        assert kept in client.remote_topics(settings)
        assert client.remote_topics(settings, flow.source) == {kept}
        assert kept not in client.remote_topics(settings, "elsewhere")
        # An operator's tool built from the configuration sees the same.
        from_config = client.MirrorClient.from_config(config, flow.target)
        assert from_config.remote_topics(flow.source) == {kept}
    finally:
        publisher.publish({})
        publisher.close()
        delete_topics(west.bootstrap_servers, [kept])


def test_a_cluster_without_metadata_reads_as_empty(two_clusters):
    """The reader does not create the topic; a cluster no flow published to answers {}."""
    east, _ = two_clusters
    topic = f"no-metadata-{uuid.uuid4().hex[:6]}.internal"
    assert read_remote_topics({"bootstrap.servers": east.bootstrap_servers}, topic=topic) == {}
    assert topic not in topic_names(east.bootstrap_servers)
