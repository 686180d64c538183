"""The client's reading of topic names (hops, upstream clusters) and its policy choice."""

from __future__ import annotations

import pytest

from mirrorline.client import (
    MirrorClient,
    TranslatedOffset,
    as_topic_partitions,
    count_hops,
    policy_of_cluster,
    topic_sources,
)
from mirrorline.config import parse_config
from mirrorline.policy import DefaultReplicationPolicy, IdentityReplicationPolicy

DEFAULT = DefaultReplicationPolicy()
IDENTITY = IdentityReplicationPolicy()

BASE = """
clusters = east, west, central
east.bootstrap.servers = 127.0.0.1:1
west.bootstrap.servers = 127.0.0.1:2
central.bootstrap.servers = 127.0.0.1:3
east->west.enabled = true
central->west.enabled = true
"""


def test_sources_nearest_first():
    assert topic_sources(DEFAULT, "heartbeats") == []
    assert topic_sources(DEFAULT, "east.heartbeats") == ["east"]
    assert topic_sources(DEFAULT, "central.east.heartbeats") == ["central", "east"]


def test_a_name_that_loops_is_followed_once():
    assert topic_sources(DEFAULT, "a.b.a.heartbeats") == ["a", "b"]


def test_hops_count_clusters_on_the_way_as_mm2_does():
    assert count_hops(DEFAULT, "east.heartbeats", "east") == 1
    assert count_hops(DEFAULT, "central.east.heartbeats", "east") == 2
    assert count_hops(DEFAULT, "central.east.heartbeats", "central") == 1
    assert count_hops(DEFAULT, "central.east.heartbeats", "west") == -1
    assert count_hops(DEFAULT, "heartbeats", "east") == -1
    # MM2 gives up at the first repeated cluster, before reaching c.
    assert count_hops(DEFAULT, "a.b.a.c.heartbeats", "c") == -1


def test_identity_policy_still_reads_heartbeats_names():
    assert count_hops(IDENTITY, "central.east.heartbeats", "east") == 2
    assert topic_sources(IDENTITY, "orders") == []


def test_custom_separator():
    policy = DefaultReplicationPolicy(separator="_")
    assert topic_sources(policy, "central_east_heartbeats") == ["central", "east"]


def test_translated_offsets_as_topic_partitions_for_commit():
    offsets = {
        ("east.orders", 1): TranslatedOffset(40, "m", 42),
        ("east.orders", 0): TranslatedOffset(7),
    }
    parts = as_topic_partitions(offsets)
    assert [(p.topic, p.partition, p.offset, p.metadata) for p in parts] == [
        ("east.orders", 0, 7, ""),
        ("east.orders", 1, 40, "m"),
    ]


def test_policy_of_the_flows_into_the_cluster():
    config = parse_config(BASE + "replication.policy.separator = _\n")
    assert policy_of_cluster(config, "west") == DefaultReplicationPolicy(separator="_")


def test_identity_policy_of_a_cluster_knows_no_single_source():
    text = BASE + "replication.policy.class = IdentityReplicationPolicy\n"
    policy = policy_of_cluster(parse_config(text), "west")
    assert isinstance(policy, IdentityReplicationPolicy)
    assert policy.source_cluster_alias is None
    assert policy.topic_source("orders") is None


def test_flows_into_a_cluster_with_different_policies_need_a_choice():
    text = BASE + "central->west.replication.policy.class = IdentityReplicationPolicy\n"
    with pytest.raises(ValueError, match="different replication policies.*policy="):
        policy_of_cluster(parse_config(text), "west")


def test_disabled_flows_do_not_decide_when_enabled_ones_exist():
    text = BASE + "west->east.replication.policy.class = IdentityReplicationPolicy\n"
    assert policy_of_cluster(parse_config(text), "west") == DefaultReplicationPolicy()


def test_client_from_config_uses_the_cluster_settings_and_names_it():
    client = MirrorClient.from_config(parse_config(BASE), "central")
    assert client.where == "cluster central (127.0.0.1:3)"
    assert client.policy == DefaultReplicationPolicy()


def test_client_from_config_names_an_unknown_alias():
    with pytest.raises(ValueError, match="'north' is not defined.*east, west, central"):
        MirrorClient.from_config(parse_config(BASE), "north")
