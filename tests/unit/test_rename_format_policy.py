"""`topic.rename.format`: Confluent Replicator's remote topic names as a replication policy."""

from __future__ import annotations

import pytest

from mirrorline.config import ConfigError, parse_config
from mirrorline.policy import RenameFormatPolicy, is_cycle, policy_class

FILE = "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"


def test_names_follow_the_template_and_heartbeats_keep_the_prefix() -> None:
    policy = RenameFormatPolicy(template="dr-${topic}.replica", source_cluster_alias="A")
    assert policy.format_remote_topic("A", "orders") == "dr-orders.replica"
    assert policy.upstream_topic("dr-orders.replica") == "orders"
    assert policy.topic_source("dr-orders.replica") == "A"
    assert policy.upstream_topic("orders") is None
    assert policy.topic_source("orders") is None
    assert policy.original_topic("dr-dr-orders.replica.replica") == "orders"
    # Heartbeats as under every policy, so their loops stay visible by name.
    assert policy.format_remote_topic("A", "heartbeats") == "A.heartbeats"
    assert is_cycle(policy, "B.heartbeats", "B")


def test_names_cannot_show_loops_so_records_carry_provenance_by_cluster() -> None:
    policy = RenameFormatPolicy(template="${topic}.replica", source_cluster_alias="B")
    assert not policy.detects_cycles_by_name
    assert policy.provenance_by_cluster
    assert not is_cycle(policy, "orders.replica", "A")
    # A template of ${topic} alone keeps names, like the identity policy.
    assert RenameFormatPolicy(template="${topic}").format_remote_topic("A", "x") == "x"


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("orders", "exactly once"),
        ("${topic}-${topic}", "exactly once"),
        ("${topic}/copy", "only characters allowed in topic names"),
        ("${cluster}.${topic}", "only characters allowed in topic names"),
    ],
)
def test_bad_templates_are_refused(template: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        RenameFormatPolicy(template=template)


def test_the_configuration_chooses_the_policy_per_flow() -> None:
    config = parse_config(
        FILE + "A->B.enabled = true\nB->A.enabled = true\n"
        "topic.rename.format = ${topic}.replica\nB->A.topic.rename.format = ${topic}.from-b\n",
        environ={},
    )
    assert config.flow("A", "B").remote_topic("orders") == "orders.replica"
    assert config.flow("B", "A").remote_topic("orders") == "orders.from-b"
    assert isinstance(config.flow("A", "B").policy, RenameFormatPolicy)
    assert policy_class("RenameFormatPolicy") is RenameFormatPolicy


def test_a_bad_template_or_two_naming_choices_name_their_lines() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(
            FILE + "A->B.enabled = true\nB->A.enabled = true\n"
            "A->B.topic.rename.format = copy-of-topic\n"
            "B->A.topic.rename.format = ${topic}.b\n"
            "B->A.replication.policy.class = IdentityReplicationPolicy\n",
            environ={},
        )
    message = str(raised.value)
    assert ":6: A->B.topic.rename.format: invalid value 'copy-of-topic'" in message
    assert "${topic} exactly once" in message
    assert (
        ":7: B->A.topic.rename.format: topic.rename.format and replication.policy.class" in message
    )
