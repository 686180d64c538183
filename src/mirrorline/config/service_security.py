"""The settings that protect `mirrorline service`: TLS, who may call it, how it calls others.

    service.tls.certificate = /etc/mirrorline/service.pem      # the chain, PEM
    service.tls.key = /etc/mirrorline/service-key.pem          # its private key, PEM
    service.tls.key.password = ${env:SERVICE_KEY_PASSWORD}     # if the key is encrypted
    service.auth.users.file = /etc/mirrorline/users            # HTTP basic
    service.auth.tokens.file = /etc/mirrorline/tokens          # bearer tokens
    service.remote.auth.username = gateway                     # what a gateway sends
    service.remote.auth.password = ${file:secrets.properties:gateway}
    service.remote.tls.ca = /etc/mirrorline/ca.pem             # whom it trusts

Authentication is on as soon as a users or a tokens file is set. The files
themselves (their format, their hashes) are `mirrorline.service.credentials`'
business; here they are only paths, relative ones read from the directory of
the configuration file that names them (as `${file:...}` does). Passwords and
tokens are secrets: the configuration shows them as `[hidden]`, and the
typed objects below never print them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirrorline.config.errors import ConfigError, ConfigIssue
from mirrorline.config.model import Setting
from mirrorline.config.settings import SettingSpec

__all__ = ["SECURITY_SPECS", "RemoteAccessSettings", "ServiceSecurity", "TlsSettings"]


def _file_path(text: str) -> str:
    path = text.strip()
    if "\n" in path or "-----BEGIN" in path:
        raise ValueError("write the path of a PEM file, not its content")
    return path


def _secret(text: str) -> str:
    return text.strip()


SECURITY_SPECS = [
    SettingSpec(
        "service.tls.certificate",
        "",
        _file_path,
        "PEM file with the service's certificate chain: the service then serves HTTPS only. "
        "Empty: plain HTTP.",
    ),
    SettingSpec("service.tls.key", "", _file_path, "PEM file with the certificate's private key."),
    SettingSpec(
        "service.tls.key.password", "", _secret, "Password of service.tls.key when encrypted."
    ),
    SettingSpec(
        "service.auth.users.file",
        "",
        _file_path,
        "Users allowed in with HTTP basic authentication (`mirrorline service passwd`). "
        "Authentication is on when this or service.auth.tokens.file is set.",
    ),
    SettingSpec(
        "service.auth.tokens.file",
        "",
        _file_path,
        "Bearer tokens allowed in (`mirrorline service token`).",
    ),
    SettingSpec(
        "service.remote.auth.username",
        "",
        str.strip,
        "User this service authenticates as to remote services (HTTP basic).",
    ),
    SettingSpec("service.remote.auth.password", "", _secret, "Its password."),
    SettingSpec(
        "service.remote.auth.token",
        "",
        _secret,
        "Bearer token this service sends to remote services (instead of a user).",
    ),
    SettingSpec(
        "service.remote.tls.ca",
        "",
        _file_path,
        "PEM file of the certificate authorities trusted for HTTPS remote services. "
        "Empty: the system's.",
    ),
]


@dataclass(frozen=True)
class TlsSettings:
    """The service's own certificate; `repr` hides the key's password."""

    certificate: Path
    key: Path
    key_password: str = field(default="", repr=False)


@dataclass(frozen=True)
class RemoteAccessSettings:
    """How this service calls remote services; `repr` hides the password and the token."""

    username: str = ""
    password: str = field(default="", repr=False)
    token: str = field(default="", repr=False)
    ca: Path | None = None


@dataclass(frozen=True)
class ServiceSecurity:
    """TLS, authentication and remote access of the service (see the module)."""

    tls: TlsSettings | None = None
    users_file: Path | None = None
    tokens_file: Path | None = None
    remote: RemoteAccessSettings = RemoteAccessSettings()

    @property
    def authenticates(self) -> bool:
        """Whether callers must authenticate (a users or tokens file is set)."""
        return self.users_file is not None or self.tokens_file is not None

    @classmethod
    def of(cls, settings: Mapping[str, Setting[Any]]) -> ServiceSecurity:
        """From the service settings a file set; every inconsistency at once (`ConfigError`)."""
        issues: list[ConfigIssue] = []

        def text(name: str) -> str:
            setting = settings.get(name)
            return str(setting.value) if setting is not None else ""

        def path(name: str) -> Path | None:
            setting = settings.get(name)
            if setting is None or not setting.value:
                return None
            found = Path(os.path.expanduser(str(setting.value)))
            if not found.is_absolute() and setting.origin.file:
                found = Path(setting.origin.file).parent / found
            return found

        def problem(name: str, message: str, hint: str) -> None:
            setting = settings.get(name)
            origin = setting.origin if setting is not None else None
            issues.append(ConfigIssue(message, origin, hint, key=name))

        certificate, key = path("service.tls.certificate"), path("service.tls.key")
        tls = None
        if certificate is not None and key is not None:
            tls = TlsSettings(certificate, key, text("service.tls.key.password"))
        elif certificate is not None:
            problem("service.tls.certificate", "set without service.tls.key", "set both or none")
        elif key is not None:
            problem("service.tls.key", "set without service.tls.certificate", "set both or none")
        elif text("service.tls.key.password"):
            problem(
                "service.tls.key.password",
                "set without service.tls.key",
                "remove it, or set service.tls.certificate and service.tls.key",
            )

        username, password = (
            text("service.remote.auth.username"),
            text("service.remote.auth.password"),
        )
        token = text("service.remote.auth.token")
        if username and not password:
            problem(
                "service.remote.auth.username",
                "set without service.remote.auth.password",
                "set the user's password too",
            )
        elif password and not username:
            problem(
                "service.remote.auth.password",
                "set without service.remote.auth.username",
                "set the user it belongs to",
            )
        if token and username:
            problem(
                "service.remote.auth.token",
                "set together with service.remote.auth.username",
                "remote services are called with either a user or a token: remove one",
            )
        if issues:
            raise ConfigError(issues)
        return cls(
            tls=tls,
            users_file=path("service.auth.users.file"),
            tokens_file=path("service.auth.tokens.file"),
            remote=RemoteAccessSettings(username, password, token, path("service.remote.tls.ca")),
        )
