"""The service's settings in the properties file: defaults, parsing and errors with their line."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config import ConfigError, load_config, parse_config
from mirrorline.config.service_settings import ServiceSettings, parse_window, window_text

BASE = (
    "clusters = a, b, c\n"
    "a.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\nc.bootstrap.servers = c:9092\n"
    "a->b.enabled = true\nc->b.enabled = true\na->c.enabled = true\n"
)


def test_defaults_report_every_target_of_an_enabled_flow():
    settings = ServiceSettings.of(parse_config(BASE))
    assert settings.clusters == ("b", "c")  # in the order of the flows
    assert (settings.host, settings.port) == ("127.0.0.1", 6670)
    assert settings.windows == (60, 300, 900, 3600) and settings.history_s == 3600
    assert settings.remote_clusters == () and settings.base_path == ""
    assert settings.advertised("127.0.0.1") == "127.0.0.1"
    assert settings.advertised("0.0.0.0") == socket.getfqdn()


def test_set_values_are_typed_and_shown_in_the_configuration():
    config = parse_config(
        BASE + "service.clusters = b\nservice.port = 7000\nservice.windows = 30s, 2h, 5m\n"
        "service.remote.clusters = c\nservice.advertised.host = mon.example\n"
        "service.base.path = /mirrorline/\n"
    )
    settings = ServiceSettings.of(config)
    assert settings.clusters == ("b",) and settings.remote_clusters == ("c",)
    assert settings.windows == (30, 300, 7200)
    assert settings.advertised("0.0.0.0") == "mon.example"
    assert settings.base_path == "/mirrorline"
    assert config.to_dict()["service"]["service.port"]["value"] == 7000


def test_every_mistake_is_reported_with_its_line():
    with pytest.raises(ConfigError) as raised:
        parse_config(
            BASE + "service.port = http\nservice.windows = 5 minutes\n"
            "service.clusters = b, nowhere\nservice.colour = blue\nservice.base.path = api\n"
        )
    text = str(raised.value)
    assert "8: service.port: invalid value 'http'" in text
    assert "9: service.windows: invalid value '5 minutes'" in text
    assert "10: service.clusters: 'nowhere' is not a cluster alias" in text
    assert "11: service.colour: unknown service setting" in text
    assert "12: service.base.path: invalid value 'api': 'api' must start with '/'" in text


def test_windows_are_written_the_short_way():
    assert [window_text(parse_window(w)) for w in ("60s", "5m", "60m", "90s", "2h")] == [
        "1m",
        "5m",
        "1h",
        "90s",
        "2h",
    ]
    with pytest.raises(ValueError, match="between 10s and 24h"):
        parse_window("5s")


# -- securing the service ----------------------------------------------------------------

SECURED = (
    "service.tls.certificate = tls/service.pem\n"
    "service.tls.key = tls/service-key.pem\n"
    "service.tls.key.password = ${env:KEY_PASSWORD}\n"
    "service.auth.users.file = users\n"
    "service.auth.tokens.file = /etc/mirrorline/tokens\n"
    "service.remote.clusters = c\n"
    "service.remote.auth.username = gateway\n"
    "service.remote.auth.password = gateway-pa55word\n"
    "service.remote.tls.ca = ca.pem\n"
)


def test_without_security_settings_the_service_is_plain_http_and_open():
    settings = ServiceSettings.of(parse_config(BASE))
    security = settings.security
    assert security.tls is None and not security.authenticates
    assert settings.advertised_protocol == "http"
    assert security.remote.username == "" and security.remote.ca is None


def test_security_settings_are_typed_with_paths_read_from_the_files_directory(tmp_path):
    path = tmp_path / "mm2.properties"
    path.write_text(BASE + SECURED)
    config = load_config(path, environ={"KEY_PASSWORD": "key-pa55word"})
    settings = ServiceSettings.of(config)
    security = settings.security
    assert security.tls is not None
    assert security.tls.certificate == tmp_path / "tls" / "service.pem"
    assert security.tls.key_password == "key-pa55word"
    assert security.users_file == tmp_path / "users"
    assert security.tokens_file == Path("/etc/mirrorline/tokens")
    assert security.authenticates and settings.advertised_protocol == "https"
    assert security.remote.username == "gateway" and security.remote.ca == tmp_path / "ca.pem"
    for shown in (repr(settings), json.dumps(config.to_dict())):
        assert "key-pa55word" not in shown and "gateway-pa55word" not in shown


def test_an_explicit_advertised_protocol_wins(tmp_path):
    config = parse_config(
        BASE + SECURED.replace("${env:KEY_PASSWORD}", "x") + "service.advertised.protocol = http\n"
    )
    assert ServiceSettings.of(config).advertised_protocol == "http"


def test_settings_that_contradict_each_other_are_all_reported():
    config = parse_config(
        BASE + "service.tls.certificate = c.pem\n"
        "service.remote.auth.username = gateway\n"
        "service.remote.auth.token = mlt_secret-token\n"
    )
    with pytest.raises(ConfigError) as raised:
        ServiceSettings.of(config)
    text = str(raised.value)
    assert "8: service.tls.certificate: set without service.tls.key" in text
    assert "9: service.remote.auth.username: set without service.remote.auth.password" in text
    assert "10: service.remote.auth.token: set together with service.remote.auth.username" in text
    assert "mlt_secret-token" not in text


def test_a_key_written_into_the_file_is_refused_without_being_shown():
    with pytest.raises(ConfigError) as raised:
        parse_config(BASE + "service.tls.key = -----BEGIN PRIVATE KEY-----MIIEvQ\n")
    text = str(raised.value)
    assert "service.tls.key: invalid value [hidden]: write the path of a PEM file" in text
    assert "MIIEvQ" not in text


def test_config_check_hides_the_service_secrets(tmp_path):
    path = tmp_path / "mm2.properties"
    path.write_text(BASE + SECURED.replace("${env:KEY_PASSWORD}", "key-pa55word"))
    result = CliRunner().invoke(app, ["config", "check", "--json", str(path)])
    assert result.exit_code == 0, result.output
    service = json.loads(result.output)["service"]
    assert service["service.remote.auth.password"]["value"] == "[hidden]"
    assert service["service.tls.key.password"]["value"] == "[hidden]"
    assert service["service.remote.auth.username"]["value"] == "gateway"
    assert "key-pa55word" not in result.output and "gateway-pa55word" not in result.output
