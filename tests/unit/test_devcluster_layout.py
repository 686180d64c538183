"""Pure parts of the dev clusters: names, ids and broker settings."""

from __future__ import annotations

import base64

import pytest

from mirrorline.devbroker import Layout, new_cluster_id, server_properties
from mirrorline.devcluster import DevClusterError, _checked_aliases
from mirrorline.devsecurity import DevSecurity
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
        _checked_aliases(aliases)


def test_aliases_are_trimmed():
    assert _checked_aliases([" east", "west ", ""]) == ["east", "west"]


def test_broker_settings_fit_a_single_node():
    layout = Layout("east", "127.0.0.1:19092", 19093, "id", "/tmp/x/east")
    settings = server_properties(layout)
    assert settings["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert settings["controller.quorum.voters"] == "1@127.0.0.1:19093"
    assert settings["log.dirs"] == "/tmp/x/east/data"
    for key in (
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "default.replication.factor",
    ):
        assert settings[key] == "1", key
    assert settings["auto.create.topics.enable"] == "false"


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
    settings = security.server_properties("east", "127.0.0.1:19092", 19093)
    assert settings["listeners"] == "SASL_SSL://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert settings["advertised.listeners"] == "SASL_SSL://127.0.0.1:19092"
    assert settings["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert settings["allow.everyone.if.no.acl.found"] == "false"
    assert "StandardAuthorizer" in settings["authorizer.class.name"]
    assert (tmp_path / "security" / "secrets.properties").stat().st_mode & 0o077 == 0
    assert (tmp_path / "security" / "east-broker.pem").stat().st_mode & 0o077 == 0
    # The replication user's password is read through a provider, never written inline.
    lines = "\n".join(security.mm2_properties("east"))
    assert security.password("mirrorline") not in lines
    assert "${file:" in lines
