"""The service's settings in the properties file: defaults, parsing and errors with their line."""

from __future__ import annotations

import socket

import pytest

from mirrorline.config import ConfigError, parse_config
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
