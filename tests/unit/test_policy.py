"""Replication policies: naming, parsing names back, and loop detection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorline.policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
    is_cycle,
    may_replicate,
)


def test_default_policy_names_and_chains() -> None:
    p = DefaultReplicationPolicy()
    assert p.format_remote_topic("us-west", "topic1") == "us-west.topic1"
    twice = p.format_remote_topic("us-east", p.format_remote_topic("us-west", "topic1"))
    assert twice == "us-east.us-west.topic1"
    assert p.topic_source(twice) == "us-east"
    assert p.upstream_topic(twice) == "us-west.topic1"
    assert p.original_topic(twice) == "topic1"
    assert p.topic_source("topic1") is None
    assert p.upstream_topic("topic1") is None
    assert p.original_topic("topic1") == "topic1"


def test_default_policy_internal_topic_names_match_mm2() -> None:
    p = DefaultReplicationPolicy()
    assert p.heartbeats_topic() == "heartbeats"
    assert p.offset_syncs_topic("east") == "mm2-offset-syncs.east.internal"
    assert p.checkpoints_topic("west") == "west.checkpoints.internal"
    assert p.is_checkpoints_topic("west.checkpoints.internal")
    assert p.is_heartbeats_topic("heartbeats")
    assert p.is_heartbeats_topic("a.b.heartbeats")
    assert not p.is_heartbeats_topic("my-heartbeats")
    for topic in ("__consumer_offsets", ".hidden", "mm2-configs.a.internal", "x-internal"):
        assert p.is_internal_topic(topic), topic
    assert not p.is_internal_topic("orders")


def test_custom_separator_applies_to_remote_and_internal_topics() -> None:
    p = DefaultReplicationPolicy(separator="_")
    assert p.format_remote_topic("east", "orders") == "east_orders"
    assert p.topic_source("east_orders") == "east"
    assert p.offset_syncs_topic("west") == "mm2-offset-syncs_west_internal"
    assert p.checkpoints_topic("west") == "west_checkpoints_internal"
    legacy = DefaultReplicationPolicy(separator="_", internal_topic_separator_enabled=False)
    assert legacy.offset_syncs_topic("west") == "mm2-offset-syncs.west.internal"
    assert legacy.checkpoints_topic("west") == "west.checkpoints.internal"


def test_java_split_edge_cases() -> None:
    p = DefaultReplicationPolicy()
    assert p.topic_source("a.") is None
    assert p.topic_source("a..") is None
    assert p.topic_source(".a") == ""
    assert p.topic_source("a..b") == "a"
    assert p.upstream_topic("a..b") == ".b"


@pytest.mark.parametrize("separator", ["", " ", "a/b", "->"])
def test_bad_separators_are_refused(separator: str) -> None:
    with pytest.raises(ValueError):
        DefaultReplicationPolicy(separator=separator)


def test_identity_policy_keeps_names_but_prefixes_heartbeats() -> None:
    p = IdentityReplicationPolicy(source_cluster_alias="east")
    assert p.format_remote_topic("east", "orders") == "orders"
    assert p.upstream_topic("orders") == "orders"
    assert p.original_topic("orders") == "orders"
    assert p.topic_source("orders") == "east"
    assert IdentityReplicationPolicy().topic_source("orders") is None
    assert p.format_remote_topic("east", "heartbeats") == "east.heartbeats"
    assert p.topic_source("west.heartbeats") == "west"
    assert p.upstream_topic("west.heartbeats") == "heartbeats"
    assert p.offset_syncs_topic("west") == "mm2-offset-syncs.west.internal"
    assert not IdentityReplicationPolicy.detects_cycles_by_name
    assert DefaultReplicationPolicy.detects_cycles_by_name


def test_from_settings_reads_the_flow_settings() -> None:
    settings = {
        "replication.policy.separator": "-",
        "replication.policy.internal.topic.separator.enabled": "false",
        "source.cluster.alias": "east",
    }
    d = DefaultReplicationPolicy.from_settings(settings)
    assert d == DefaultReplicationPolicy(separator="-", internal_topic_separator_enabled=False)
    i = IdentityReplicationPolicy.from_settings(settings)
    assert i.source_cluster_alias == "east"
    assert i.separator == "-"


def test_may_replicate_follows_mm2_rules() -> None:
    p = DefaultReplicationPolicy()
    # Filter says yes, but the topic came from the target: a loop.
    assert not may_replicate(p, "west.orders", target_alias="west", selected=True)
    assert may_replicate(p, "west.orders", target_alias="north", selected=True)
    # Internal topics never go, even when selected.
    assert not may_replicate(p, "__consumer_offsets", target_alias="west", selected=True)
    assert not may_replicate(p, "west.checkpoints.internal", target_alias="x", selected=True)
    # Heartbeats go even when the filter leaves them out, unless turned off.
    assert may_replicate(p, "heartbeats", target_alias="west", selected=False)
    assert may_replicate(p, "north.heartbeats", target_alias="west", selected=False)
    assert not may_replicate(
        p, "heartbeats", target_alias="west", selected=False, heartbeats_replication=False
    )
    # The target's own heartbeats coming back are a loop.
    assert not may_replicate(p, "west.heartbeats", target_alias="west", selected=False)
    assert not may_replicate(p, "orders", target_alias="west", selected=False)


def test_identity_policy_cannot_see_loops_of_ordinary_topics() -> None:
    p = IdentityReplicationPolicy(source_cluster_alias="east")
    assert not is_cycle(p, "orders", "west")
    assert is_cycle(p, "west.heartbeats", "west")


class _LoopingPolicy(ReplicationPolicy):
    """A broken custom policy whose upstream names go round in circles."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return topic

    def topic_source(self, topic: str) -> str | None:
        return "somewhere"

    def upstream_topic(self, topic: str) -> str | None:
        return "b" if topic == "a" else "a"


def test_walking_a_broken_policy_terminates() -> None:
    p = _LoopingPolicy()
    assert not is_cycle(p, "a", "target")
    assert p.original_topic("a") in {"a", "b"}


ALIASES = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8),
    min_size=2,
    max_size=6,
    unique=True,
)
LOCAL_TOPICS = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=20
).filter(lambda t: not DefaultReplicationPolicy().is_internal_topic(t))


@given(aliases=ALIASES, topic=LOCAL_TOPICS, data=st.data())
def test_default_policy_format_then_parse_round_trips(
    aliases: list[str], topic: str, data: st.DataObject
) -> None:
    p = DefaultReplicationPolicy()
    hops = data.draw(st.lists(st.sampled_from(aliases), min_size=1, max_size=5))
    name = topic
    for alias in hops:
        remote = p.format_remote_topic(alias, name)
        assert p.topic_source(remote) == alias
        assert p.upstream_topic(remote) == name
        name = remote
    assert p.original_topic(name) == topic


@given(aliases=ALIASES, data=st.data())
def test_identity_policy_format_then_parse_round_trips(
    aliases: list[str], data: st.DataObject
) -> None:
    source = data.draw(st.sampled_from(aliases))
    p = IdentityReplicationPolicy(source_cluster_alias=source)
    topic = data.draw(LOCAL_TOPICS.filter(lambda t: not t.endswith("heartbeats")))
    remote = p.format_remote_topic(source, topic)
    assert remote == topic
    assert p.topic_source(remote) == source
    assert p.original_topic(remote) == topic
    heartbeat = p.format_remote_topic(source, "heartbeats")
    assert p.topic_source(heartbeat) == source
    assert p.upstream_topic(heartbeat) == "heartbeats"
    assert p.is_heartbeats_topic(heartbeat)


def _walk(policy_for: object, aliases: list[str], topic: str, data: st.DataObject) -> None:
    """Replicate a topic along a random walk of up to 5 hops, checking every decision."""
    origin = data.draw(st.sampled_from(aliases))
    visited = [origin]
    name = topic
    for _ in range(5):
        here = visited[-1]
        target = data.draw(st.sampled_from([a for a in aliases if a != here]))
        policy = policy_for(here)  # type: ignore[operator]
        allowed = may_replicate(policy, name, target_alias=target, selected=True)
        if target in visited:
            assert not allowed, f"{name!r} would go back into {target!r} via {visited}"
            return
        assert allowed, f"{name!r} refused into new cluster {target!r} via {visited}"
        name = policy.format_remote_topic(here, name)
        visited.append(target)


@given(aliases=ALIASES, topic=LOCAL_TOPICS, data=st.data())
def test_default_policy_never_replicates_back_into_a_visited_cluster(
    aliases: list[str], topic: str, data: st.DataObject
) -> None:
    _walk(lambda _here: DefaultReplicationPolicy(), aliases, topic, data)


@given(aliases=ALIASES, data=st.data())
def test_identity_policy_never_replicates_heartbeats_back_into_a_visited_cluster(
    aliases: list[str], data: st.DataObject
) -> None:
    _walk(
        lambda here: IdentityReplicationPolicy(source_cluster_alias=here),
        aliases,
        "heartbeats",
        data,
    )


CUSTOM_MODULE = '''
from dataclasses import dataclass
from mirrorline.policy import DefaultReplicationPolicy


@dataclass(frozen=True)
class SuffixPolicy(DefaultReplicationPolicy):
    """Names remote topics <topic>-from-<alias>, reading its suffix from the flow settings."""

    marker: str = "-from-"

    @classmethod
    def from_settings(cls, settings):
        return cls(marker=settings.get("replication.policy.suffix.marker", "-from-"))

    def format_remote_topic(self, source_alias, topic):
        return f"{topic}{self.marker}{source_alias}"

    def topic_source(self, topic):
        head, found, alias = topic.rpartition(self.marker)
        return alias if found else None

    def upstream_topic(self, topic):
        head, found, alias = topic.rpartition(self.marker)
        return head if found else None


class NotAPolicy:
    pass
'''


@pytest.fixture
def custom_module(tmp_path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "acme_policies.py").write_text(CUSTOM_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "acme_policies"


def test_java_class_names_map_to_the_built_in_policies() -> None:
    from mirrorline.policy import policy_class

    assert policy_class("org.apache.kafka.connect.mirror.DefaultReplicationPolicy") is (
        DefaultReplicationPolicy
    )
    assert policy_class(" org.apache.kafka.connect.mirror.IdentityReplicationPolicy ") is (
        IdentityReplicationPolicy
    )
    assert policy_class("mirrorline.policy:IdentityReplicationPolicy") is IdentityReplicationPolicy
    assert policy_class("mirrorline.policy.DefaultReplicationPolicy") is DefaultReplicationPolicy


def test_custom_policy_classes_load_by_import_path(custom_module: str) -> None:
    from mirrorline.policy import policy_class

    cls = policy_class(f"{custom_module}:SuffixPolicy")
    policy = cls.from_settings({"replication.policy.suffix.marker": "__"})
    assert policy.format_remote_topic("east", "orders") == "orders__east"
    assert policy.topic_source("orders__east") == "east"
    assert is_cycle(policy, "orders__east", "east")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("com.example.NoSuchPolicy", "cannot import module 'com.example'"),
        ("mirrorline.policy:NoSuchPolicy", "is not a ReplicationPolicy subclass"),
        ("mirrorline.policy:ReplicationPolicy", "does not implement every abstract method"),
        ("JustAName", "is not an import path"),
    ],
)
def test_unusable_policy_class_names(name: str, fragment: str) -> None:
    from mirrorline.policy import PolicyClassError, policy_class

    with pytest.raises(PolicyClassError, match=fragment):
        policy_class(name)


def test_a_class_that_is_not_a_policy_is_refused(custom_module: str) -> None:
    from mirrorline.policy import PolicyClassError, policy_class

    with pytest.raises(PolicyClassError, match="not a ReplicationPolicy subclass"):
        policy_class(f"{custom_module}:NotAPolicy")


def test_custom_policy_through_the_configuration(custom_module: str) -> None:
    from mirrorline.config import parse_config

    config = parse_config(
        "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"
        "A->B.enabled = true\n"
        f"replication.policy.class = {custom_module}:SuffixPolicy\n"
        "A->B.replication.policy.suffix.marker = .via.\n",
        environ={},
    )
    flow = config.flow("A", "B")
    assert flow.remote_topic("orders") == "orders.via.A"
    assert flow.setting("replication.policy.suffix.marker").origin.line == 6
    assert config.flow("B", "A").remote_topic("orders") == "orders-from-B"
    assert not flow.should_replicate_topic("orders.via.B")
    assert flow.should_replicate_topic("orders")
