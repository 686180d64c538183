"""Pure parts of the dev clusters: names, ids and broker settings."""

from __future__ import annotations

import base64

import pytest

from mirrorline.devbroker import Layout, NodePorts, new_cluster_id, server_properties
from mirrorline.devsecurity import DevSecurity
from mirrorline.devstate import DevClusterError, checked_aliases
from mirrorline.engine.session import _artifact_name


def test_cluster_ids_are_kafka_uuids():
    ids = {new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    for cluster_id in ids:
        assert len(cluster_id) == 22
        assert not cluster_id.startswith("-"), "would be read as an option by Kafka's tools"
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


@pytest.mark.parametrize(
    "aliases, problem",
    [
        ([], "no cluster aliases"),
        (["east", "east"], "duplicate"),
        (["us east"], "may contain only"),
        (["a.b"], "may contain only"),
    ],
)
def test_bad_aliases_are_refused(aliases, problem):
    with pytest.raises(DevClusterError, match=problem):
        checked_aliases(aliases)


def test_aliases_are_trimmed():
    assert checked_aliases([" east", "west ", ""]) == ["east", "west"]


def _layout(nodes: int) -> Layout:
    ports = tuple(NodePorts(i, 19090 + 2 * i, 19091 + 2 * i) for i in range(1, nodes + 1))
    return Layout("east", "id", "/tmp/x/east", ports)


REPLICATION_KEYS = (
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
    "share.coordinator.state.topic.replication.factor",
    "default.replication.factor",
)
MIN_ISR_KEYS = (
    "transaction.state.log.min.isr",
    "share.coordinator.state.topic.min.isr",
    "min.insync.replicas",
)


def test_broker_settings_fit_a_single_node():
    settings = server_properties(_layout(1), 1)
    assert settings["node.id"] == "1"
    assert settings["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert settings["controller.quorum.voters"] == "1@127.0.0.1:19093"
    assert settings["log.dirs"] == "/tmp/x/east/node-1/data"
    for key in REPLICATION_KEYS + MIN_ISR_KEYS:
        assert settings[key] == "1", key
    assert settings["auto.create.topics.enable"] == "false"
    assert "broker.session.timeout.ms" not in settings  # Kafka's default, as before


@pytest.mark.parametrize("nodes, factor, min_isr", [(2, "2", "1"), (3, "3", "2"), (5, "3", "2")])
def test_several_nodes_are_all_voters_with_own_ports_and_replicated_topics(nodes, factor, min_isr):
    layout = _layout(nodes)
    assert layout.bootstrap_servers == ",".join(
        f"127.0.0.1:{19090 + 2 * i}" for i in range(1, nodes + 1)
    )
    voters = ",".join(f"{i}@127.0.0.1:{19091 + 2 * i}" for i in range(1, nodes + 1))
    for node in range(1, nodes + 1):
        settings = server_properties(layout, node)
        assert settings["process.roles"] == "broker,controller"
        assert settings["node.id"] == str(node)
        assert settings["controller.quorum.voters"] == voters
        assert settings["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{19090 + 2 * node}"
        assert settings["log.dirs"] == f"/tmp/x/east/node-{node}/data"
        assert {settings[k] for k in REPLICATION_KEYS} == {factor}
        assert {settings[k] for k in MIN_ISR_KEYS} == {min_isr}
        assert settings["broker.session.timeout.ms"] == "4000"


def test_layout_survives_its_file():
    layout = _layout(3)
    assert Layout.from_json(layout.to_json()) == layout


@pytest.mark.parametrize(
    "jar, name",
    [
        ("kafka-clients-3.9.0.jar", "kafka-clients"),
        ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "spark-sql-kafka-0-10_2.13"),
        ("commons-pool2-2.12.0.jar", "commons-pool2"),
        ("zstd-jni-1.5.6-10.jar", "zstd-jni"),
        ("jsr305-3.0.0.jar", "jsr305"),
    ],
)
def test_jar_artifact_names_drop_the_version(jar, name, tmp_path):
    assert _artifact_name(tmp_path / jar) == name


def test_secured_brokers_speak_sasl_ssl_only_with_the_authorizer_on(tmp_path):
    security = DevSecurity.of(tmp_path)
    security.ensure()
    settings = security.server_properties("east", "127.0.0.1:19092", 19093, "sasl_ssl")
    assert settings["listeners"] == "SASL_SSL://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert settings["advertised.listeners"] == "SASL_SSL://127.0.0.1:19092"
    assert settings["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert settings["allow.everyone.if.no.acl.found"] == "false"
    assert "StandardAuthorizer" in settings["authorizer.class.name"]
    assert (tmp_path / "security" / "secrets.properties").stat().st_mode & 0o077 == 0
    assert (tmp_path / "security" / "east-broker.pem").stat().st_mode & 0o077 == 0
    # The replication user's password is read through a provider, never written inline.
    lines = "\n".join(security.mm2_properties("east", "sasl_ssl"))
    assert security.password("mirrorline") not in lines
    assert "${file:" in lines
