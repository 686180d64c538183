"""The settings of `mirrorline service` (and `mirrorline status`), in the same file as the flows.

They are global (no cluster or flow prefix) and start with `service.`:

    service.clusters = west, central     # whose flows it reports (default: every target)
    service.port = 6670
    service.windows = 1m, 5m, 15m, 60m
    service.remote.clusters = apac       # remote querying: services advertised there

and those that protect it (TLS, users, tokens, remote credentials), declared
in `service_security`. `ServiceSettings.of(config)` hands them out typed.
Parsing happens when the file is loaded, so that `config check` reports a
wrong value with its line like any other setting; settings that contradict
each other (a certificate without its key) are reported by `of`.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mirrorline.config.model import MirrorConfig
from mirrorline.config.service_security import SECURITY_SPECS, ServiceSecurity
from mirrorline.config.settings import SettingSpec
from mirrorline.config.values import parse_int, parse_list

__all__ = ["SERVICE_SETTINGS", "ServiceSettings", "parse_window", "window_text"]

PREFIX = "service."
_WINDOW = re.compile(r"(\d+)\s*(s|m|h)")
_UNIT_S = {"s": 1, "m": 60, "h": 3600}


def parse_window(text: str) -> int:
    """A window such as `5m`, `90s` or `1h`, in seconds (at least 10 s, at most a day)."""
    match = _WINDOW.fullmatch(text.strip().lower())
    if match is None:
        raise ValueError(f"{text.strip()!r} is no window: write it like 30s, 5m or 1h")
    seconds = int(match.group(1)) * _UNIT_S[match.group(2)]
    if not 10 <= seconds <= 24 * 3600:
        raise ValueError(f"window {text.strip()} must be between 10s and 24h")
    return seconds


def window_text(seconds: int) -> str:
    """The shortest way of writing a window: 60 -> `1m`, 3600 -> `1h`, 90 -> `90s`."""
    for unit in ("h", "m"):
        if seconds % _UNIT_S[unit] == 0:
            return f"{seconds // _UNIT_S[unit]}{unit}"
    return f"{seconds}s"


def _windows(text: str) -> tuple[int, ...]:
    windows = tuple(sorted({parse_window(w) for w in parse_list(text)}))
    if not windows:
        raise ValueError("list at least one window, like 1m, 5m, 15m, 60m")
    return windows


def _protocol(text: str) -> str:
    word = text.strip().lower()
    if word not in ("", "http", "https"):
        raise ValueError("expected http or https (or nothing: https when service.tls is set)")
    return word


def _path(text: str) -> str:
    path = text.strip().rstrip("/")
    if path and not path.startswith("/"):
        raise ValueError(f"{text.strip()!r} must start with '/'")
    return path


_SPECS = [
    SettingSpec(
        "service.clusters",
        "",
        parse_list,
        "Clusters whose incoming flows the service reports (their raw metrics, heartbeats, "
        "checkpoints and metadata are read there). Empty: the target of every enabled flow.",
    ),
    SettingSpec("service.host", "127.0.0.1", str.strip, "Address the REST API listens on."),
    SettingSpec(
        "service.port", "6670", lambda t: parse_int(t, minimum=1, maximum=65535), "Its port."
    ),
    SettingSpec(
        "service.windows",
        "1m, 5m, 15m, 60m",
        _windows,
        "Sliding windows metrics are aggregated over; the longest is the history read at start.",
    ),
    SettingSpec(
        "service.advertised.host",
        "",
        str.strip,
        "Host name other services reach this one at (remote querying). Empty: service.host, "
        "or this machine's name when that is a wildcard address.",
    ),
    SettingSpec(
        "service.advertised.protocol",
        "",
        _protocol,
        "Protocol other services reach this one with. Empty: https when the service has a "
        "certificate (service.tls.certificate), else http.",
    ),
    SettingSpec(
        "service.base.path",
        "",
        _path,
        "Path the API is served under behind a proxy (advertised to other services).",
    ),
    SettingSpec(
        "service.remote.clusters",
        "",
        parse_list,
        "Clusters where other Mirrorline services advertise themselves: their replications "
        "are served here too, fetched on demand (remote querying).",
    ),
    *SECURITY_SPECS,
]

#: Every service setting, by name.
SERVICE_SETTINGS: dict[str, SettingSpec] = {spec.name: spec for spec in _SPECS}


@dataclass(frozen=True)
class ServiceSettings:
    """The typed settings of the service (see the module)."""

    clusters: tuple[str, ...]  # the target clusters it reports on
    host: str
    port: int
    windows: tuple[int, ...]  # seconds, shortest first
    advertised_protocol: str
    advertised_host: str  # as set; empty: see `advertised`
    base_path: str
    remote_clusters: tuple[str, ...]
    security: ServiceSecurity = ServiceSecurity()

    @classmethod
    def of(cls, config: MirrorConfig) -> ServiceSettings:
        values: Mapping[str, Any] = {
            name: config.service[name].value if name in config.service else spec.parse(spec.default)
            for name, spec in SERVICE_SETTINGS.items()
        }
        clusters = tuple(values["service.clusters"]) or tuple(
            dict.fromkeys(f.target for f in config.enabled_flows())
        )
        security = ServiceSecurity.of(config.service)
        protocol = values["service.advertised.protocol"] or (
            "https" if security.tls is not None else "http"
        )
        return cls(
            clusters=clusters,
            host=values["service.host"],
            port=values["service.port"],
            windows=values["service.windows"],
            advertised_protocol=protocol,
            advertised_host=values["service.advertised.host"],
            base_path=values["service.base.path"],
            remote_clusters=tuple(values["service.remote.clusters"]),
            security=security,
        )

    def advertised(self, host: str) -> str:
        """The host other services reach the service at, when it listens on `host`:
        `service.advertised.host`, else `host`, or this machine's name for a wildcard."""
        if self.advertised_host:
            return self.advertised_host
        return socket.getfqdn() if host in ("0.0.0.0", "::", "") else host

    @property
    def history_s(self) -> int:
        """How far back samples are read and kept: the longest window."""
        return self.windows[-1]
