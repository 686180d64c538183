"""Secrets never appear in any rendering: repr, str, JSON, messages, `config check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config.errors import ConfigError
from mirrorline.config.jaas import parse_jaas
from mirrorline.config.loader import load_config
from mirrorline.config.model import CLIENT_TYPES, SIDES, MirrorConfig

JAAS_PASSWORD = "jaas-Pa55word-1"
ENV_SERVERS = "hidden-broker.internal:9092"
FILE_KEY_PASSWORD = "file-key-Pa55word-2"
SECRETS = (JAAS_PASSWORD, ENV_SERVERS, FILE_KEY_PASSWORD)

CONFIG = """\
clusters = A, B
A.bootstrap.servers = ${env:A_SERVERS}
B.bootstrap.servers = b:9092
B.security.protocol = SASL_SSL
B.sasl.mechanism = PLAIN
B.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \\
    username="mirror" password="${env:B_PASSWORD}";
B.ssl.keystore.type = PEM
B.ssl.keystore.location = /etc/mirrorline/client.pem
B.ssl.key.password = ${file:secrets.properties:key.password}
A->B.enabled = true
B->A.enabled = true
"""
ENV = {"A_SERVERS": ENV_SERVERS, "B_PASSWORD": JAAS_PASSWORD}


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    (tmp_path / "secrets.properties").write_text(
        f"key.password = {FILE_KEY_PASSWORD}\n", encoding="utf-8"
    )
    path = tmp_path / "mm2.properties"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def renderings(config: MirrorConfig) -> list[str]:
    texts = [str(config), repr(config), json.dumps(config.to_dict())]
    for cluster in config.clusters.values():
        texts += [str(cluster), repr(cluster)]
        texts += [repr(cluster.client_settings(c)) for c in CLIENT_TYPES]
    for flow in config.flows:
        texts += [str(flow), repr(flow), json.dumps(flow.to_dict())]
        texts += [repr(s) for s in flow.settings.values()]
        for side in SIDES:
            for client in CLIENT_TYPES:
                for settings in (
                    flow.client_settings(side, client),
                    flow.java_client_settings(side, client),
                ):
                    texts += [repr(settings), str(settings), json.dumps(settings.to_dict())]
                    texts += [repr(s) for s in settings.settings()]
                    texts += [f"{s}" for s in settings.settings()]
    return texts


def test_the_values_are_really_there_for_the_clients(config_file: Path) -> None:
    config = load_config(config_file, environ=ENV)
    producer = config.flow("A", "B").client_settings("target", "producer")
    assert producer["sasl.password"] == JAAS_PASSWORD
    assert producer["ssl.key.password"] == FILE_KEY_PASSWORD
    assert config.flow("A", "B").client_settings("source", "consumer")["bootstrap.servers"] == (
        ENV_SERVERS
    )


def test_no_rendering_of_the_model_shows_a_secret(config_file: Path) -> None:
    config = load_config(config_file, environ=ENV)
    texts = renderings(config)
    assert any("[hidden]" in t for t in texts)
    for text in texts:
        for secret in SECRETS:
            assert secret not in text
        assert "PlainLoginModule" not in text


def test_values_from_providers_are_hidden_even_under_harmless_names(config_file: Path) -> None:
    config = load_config(config_file, environ=ENV)
    setting = config.flow("A", "B").client_settings("source", "admin").setting("bootstrap.servers")
    assert setting.secret
    assert setting.shown == "[hidden]"
    assert config.clusters["A"].bootstrap_servers == ENV_SERVERS  # readable by code
    assert ENV_SERVERS not in repr(config.clusters["A"])


def test_config_check_output_shows_no_secret(config_file: Path) -> None:
    runner = CliRunner()
    # --timeout 1: the run-time changes are asked of clusters that do not exist.
    for args in ([], ["--all", "--settings"], ["--json"]):
        args = ["--timeout", "1", *args]
        result = runner.invoke(app, ["config", "check", *args, str(config_file)], env=ENV)
        assert result.exit_code == 0, result.output
        assert "[hidden]" in result.output
        for secret in SECRETS:
            assert secret not in result.output


def test_error_messages_show_no_secret(tmp_path: Path) -> None:
    path = tmp_path / "bad.properties"
    path.write_text(
        "clusters = A, B\n"
        "A.bootstrap.servers = a:9092\n"
        "B.bootstrap.servers = b:9092\n"
        "A->B.enabled = true\n"
        "offset.lag.max = ${env:LAG}\n"
        "A.security.protocol = ${env:PROTOCOL}\n"
        'B.sasl.jaas.config = com.example.Custom required secret="' + JAAS_PASSWORD + '";\n'
        "B.ssl.keystore.password = " + FILE_KEY_PASSWORD + "\n"
        "B.ssl.keystore.location = /etc/ks.jks\n"
        "B.security.protocol = SSL\n",
        encoding="utf-8",
    )
    env = {"LAG": ENV_SERVERS, "PROTOCOL": JAAS_PASSWORD + "x"}
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=env)
    assert len(caught.value.issues) == 4
    messages = [str(caught.value), *(str(i) for i in caught.value.issues)]
    messages.append(json.dumps([i.to_dict() for i in caught.value.issues]))
    for args in ([], ["--json"]):
        result = CliRunner().invoke(app, ["config", "check", *args, str(path)], env=env)
        assert result.exit_code == 2
        messages.append(result.output)
    for message in messages:
        for secret in SECRETS:
            assert secret not in message
    assert "invalid value [hidden]" in str(caught.value)


def test_jaas_entries_hide_their_options() -> None:
    entry = parse_jaas(f'x.PlainLoginModule required username="u" password="{JAAS_PASSWORD}";')
    assert JAAS_PASSWORD not in repr(entry)
    assert "password" in repr(entry)
