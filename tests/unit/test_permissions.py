"""The least-privilege ACL list follows the flow's configuration."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config import parse_config
from mirrorline.permissions import merged, probe_topic, required_grants

BASE = """clusters = A, B
A.bootstrap.servers = 127.0.0.1:1
B.bootstrap.servers = 127.0.0.1:2
A->B.enabled = true
A->B.topics = orders, pay.*
"""


def grants(extra: str = ""):
    flow = next(iter(parse_config(BASE + extra).enabled_flows()))
    return {(g.cluster, g.resource, g.pattern, g.name): g for g in merged(required_grants(flow))}


def test_source_needs_read_only_access_when_offset_syncs_live_on_the_target():
    on_target = grants("offset-syncs.topic.location = target\nsync.topic.acls.enabled = false\n")
    source = {k: g for k, g in on_target.items() if k[0] == "A"}
    writes = {"WRITE", "CREATE", "ALTER", "ALTER_CONFIGS"}
    assert not any(writes & set(g.operations) for g in source.values())
    assert ("B", "TOPIC", "LITERAL", "mm2-offset-syncs.A.internal") in on_target
    default = grants()
    assert "WRITE" in default[("A", "TOPIC", "LITERAL", "mm2-offset-syncs.B.internal")].operations


def test_topic_patterns_become_literal_and_prefixed_resources_on_both_sides():
    g = grants()
    assert g[("A", "TOPIC", "LITERAL", "orders")].operations == (
        "READ",
        "DESCRIBE",
        "DESCRIBE_CONFIGS",
    )
    assert ("A", "TOPIC", "PREFIXED", "pay") in g
    assert "WRITE" in g[("B", "TOPIC", "LITERAL", "A.orders")].operations
    assert "CREATE" in g[("B", "TOPIC", "PREFIXED", "A.pay")].operations


def test_acl_sync_group_sync_and_transactions():
    g = grants("sync.group.offsets.enabled = true\n")
    assert g[("A", "CLUSTER", "LITERAL", "kafka-cluster")].operations == ("DESCRIBE",)
    assert set(g[("B", "CLUSTER", "LITERAL", "kafka-cluster")].operations) == {"DESCRIBE", "ALTER"}
    assert "READ" in g[("B", "GROUP", "LITERAL", "*")].operations
    assert ("B", "TRANSACTIONAL_ID", "PREFIXED", "mirrorline.") in g
    assert not any(k[1] == "CLUSTER" for k in grants("sync.topic.acls.enabled = false\n"))


def test_probe_topic_is_one_the_source_principal_may_describe():
    flow = next(iter(parse_config(BASE).enabled_flows()))
    assert probe_topic(flow) == "orders"


def test_acls_command_prints_json(tmp_path):
    path = tmp_path / "f.properties"
    path.write_text(BASE)
    result = CliRunner().invoke(app, ["acls", "--config", str(path), "--json"])
    assert result.exit_code == 0, result.output
    names = {(g["cluster"], g["name"]) for g in json.loads(result.output)["grants"]}
    assert ("B", "A.orders") in names and ("B", "heartbeats") in names


def test_takeover_adds_the_reads_of_mm2s_offsets_and_group(tmp_path):
    path = tmp_path / "f.properties"
    path.write_text(BASE + "A->B.offset.storage.topic = mm2-offsets\n")
    plain = CliRunner().invoke(app, ["acls", "--config", str(path), "--json"])
    taken = CliRunner().invoke(app, ["acls", "--config", str(path), "--json", "--takeover"])
    assert taken.exit_code == 0, taken.output
    before = {(g["resource"], g["name"]) for g in json.loads(plain.output)["grants"]}
    after = {
        (g["resource"], g["name"]): g["operations"] for g in json.loads(taken.output)["grants"]
    }
    assert ("TOPIC", "mm2-offsets") not in before
    assert after[("TOPIC", "mm2-offsets")] == ["READ", "DESCRIBE"]
    assert after[("GROUP", "A-mm2")] == ["DESCRIBE"]
