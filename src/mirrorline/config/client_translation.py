"""One client role's Java client settings, translated into librdkafka settings.

MM2 files configure Java clients; Mirrorline's own clients are librdkafka
(confluent-kafka). `translate` takes the settings that won for one client role
and writes each as its action in the catalogue (`mirrorline.config.clients`)
says:

* **same**: librdkafka has the same name and meaning; the value is passed on
  (a few enumerations are checked and normalised);
* **renamed**: `sasl.mechanism` → `sasl.mechanisms`, `max.request.size` →
  `message.max.bytes`, `fetch.max.wait.ms` → `fetch.wait.max.ms`,
  `send.buffer.bytes`/`receive.buffer.bytes` → `socket.*` (-1, the operating
  system's size, becomes librdkafka's 0),
  `buffer.memory` (bytes) → `queue.buffering.max.kbytes` (KiB), and
  `request.timeout.ms` → `socket.timeout.ms` for consumers and admin clients;
* **special**: `sasl.jaas.config` (PLAIN, SCRAM, Kerberos keytab, OAuth
  client credentials) becomes `sasl.username`/`sasl.password` and friends;
  PEM truststores and keystores become `ssl.ca.*`, `ssl.certificate.*` and
  `ssl.key.*`; JKS and PKCS12 stores (which librdkafka cannot read) are
  opened with their passwords when the configuration loads and passed as
  PEM text, `ssl.ca.pem`, `ssl.certificate.pem` and `ssl.key.pem`, held in
  memory and hidden from every rendering (`mirrorline.config.stores`).

librdkafka's own property names are passed on as they are; settings that are
ignored, refused or read by the engine are not written. Problems are added to
the caller's list, so that all of them are reported at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mirrorline.config.clients import JAVA_CLIENT_SETTINGS
from mirrorline.config.errors import ConfigIssue
from mirrorline.config.jaas import JaasEntry, parse_jaas
from mirrorline.config.model import ClientType, Setting
from mirrorline.config.redact import is_secret_key, shown
from mirrorline.config.stores import StoreError, client_identity, trusted_certificates
from mirrorline.config.values import parse_list

__all__ = ["translate"]

_RENAMES = {
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "max.request.size": "message.max.bytes",
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "sasl.mechanism": "sasl.mechanisms",
}

_SASL_MECHANISMS = ("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
    "range": "range",
    "roundrobin": "roundrobin",
    "cooperative-sticky": "cooperative-sticky",
}
_OAUTH_HANDLERS = {
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
}
_JAAS_MECHANISMS = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "Krb5LoginModule": ("GSSAPI",),
    "OAuthBearerLoginModule": ("OAUTHBEARER",),
}
_STORE_TYPES = ("JKS", "PKCS12", "PEM")
_STORE_LOCATIONS = frozenset({"ssl.truststore.location", "ssl.keystore.location"})


def translate(
    settings: Sequence[Setting[str]], client: ClientType, issues: list[ConfigIssue]
) -> dict[str, Setting[str]]:
    """Translate one client role's effective settings into librdkafka settings.

    `settings` holds one winner per name, in ascending precedence, so when two
    names produce the same librdkafka property the stronger one is written
    last and wins. Problems are appended to `issues`.
    """
    by_name = {s.name: s for s in settings}
    out: dict[str, Setting[str]] = {}

    def put(name: str, value: str, source: Setting[str]) -> None:
        # What a store holds is shown no more than the store's password.
        from_store = source.name in _STORE_LOCATIONS
        secret = source.secret or from_store or is_secret_key(name)
        out[name] = Setting(name, value, value, source.origin, secret)

    for setting in settings:
        rule = JAVA_CLIENT_SETTINGS.get(setting.name)
        try:
            if rule is None:
                put(setting.name, setting.value, setting)
            elif rule.action == "same":
                put(setting.name, _checked(setting.name, setting.value), setting)
            elif rule.action == "renamed":
                name, value = _rename(setting.name, setting.value, client)
                put(name, value, setting)
            elif rule.action == "special":
                # The reasons of these checks say all; the value may be a whole JAAS entry.
                try:
                    pairs = _special_setting(setting, by_name)
                except ValueError as exc:
                    hint = exc.hint if isinstance(exc, StoreError) else None
                    issues.append(ConfigIssue(str(exc), setting.origin, hint))
                    continue
                for name, value in pairs:
                    put(name, value, setting)
        except ValueError as exc:
            issues.append(_value_issue(setting, str(exc)))
    return out


def _value_issue(setting: Setting[str], reason: str) -> ConfigIssue:
    return ConfigIssue(
        f"invalid value {shown(setting.value, secret=setting.secret)}: {reason}",
        setting.origin,
    )


def _checked(name: str, value: str) -> str:
    """Check and normalise enumerations librdkafka would only reject when a client starts."""
    text = value.strip()
    if name == "bootstrap.servers":
        servers = parse_list(text)
        if not servers:
            raise ValueError("no servers listed")
        return ",".join(servers)
    if name == "security.protocol":
        return _one_of(text.upper(), _PROTOCOLS)
    if name == "isolation.level":
        return _one_of(text.lower(), ("read_committed", "read_uncommitted"))
    if name == "acks":
        return _one_of(text.lower(), ("all", "-1", "0", "1"))
    if name == "compression.type":
        return _one_of(text.lower(), ("none", "gzip", "snappy", "lz4", "zstd"))
    if name == "auto.offset.reset":
        word = text.lower()
        if word == "none":
            return "error"
        return _one_of(word, ("earliest", "latest"), extra="or none")
    if name == "ssl.endpoint.identification.algorithm":
        return "none" if text == "" else _one_of(text.lower(), ("https", "none"))
    if name == "ssl.cipher.suites" and "TLS_" in text:
        raise ValueError(
            "Java (IANA) cipher suite names; librdkafka takes OpenSSL names, "
            "e.g. ECDHE-RSA-AES256-GCM-SHA384"
        )
    return text


def _one_of(word: str, allowed: tuple[str, ...], extra: str = "") -> str:
    if word not in allowed:
        raise ValueError(f"expected one of {', '.join(allowed)} {extra}".rstrip())
    return word


def _rename(name: str, value: str, client: ClientType) -> tuple[str, str]:
    text = value.strip()
    if name == "request.timeout.ms":
        return ("request.timeout.ms" if client == "producer" else "socket.timeout.ms", text)
    if name == "buffer.memory":
        if not text.isdigit():
            raise ValueError("expected a number of bytes")
        return "queue.buffering.max.kbytes", str(max(1, math.ceil(int(text) / 1024)))
    if name == "partition.assignment.strategy":
        names = []
        for entry in parse_list(text):
            if entry not in _ASSIGNORS:
                raise ValueError(
                    f"assignor {entry!r} has no librdkafka equivalent "
                    "(range, roundrobin or cooperative-sticky)"
                )
            names.append(_ASSIGNORS[entry])
        return "partition.assignment.strategy", ",".join(names)
    if name == "sasl.mechanism":
        return "sasl.mechanisms", _one_of(text.upper(), _SASL_MECHANISMS)
    if name in ("send.buffer.bytes", "receive.buffer.bytes") and text == "-1":
        return _RENAMES[name], "0"  # the operating system's size: Java says -1, librdkafka 0
    return _RENAMES[name], text


def _special_setting(
    setting: Setting[str], by_name: dict[str, Setting[str]]
) -> list[tuple[str, str]]:
    name, value = setting.name, setting.value.strip()
    if name == "sasl.jaas.config":
        return _translate_jaas(value, by_name)
    if name == "sasl.login.callback.handler.class":
        if value not in _OAUTH_HANDLERS:
            raise ValueError("custom Java login callback handlers cannot run in librdkafka")
        return []
    if name == "sasl.oauthbearer.token.endpoint.url":
        return [(name, value), ("sasl.oauthbearer.method", "oidc")]
    if name.startswith("compression.") and name.endswith(".level"):
        codec = name.split(".")[1]
        chosen = by_name.get("compression.type")
        if chosen is None or chosen.value.strip().lower() != codec:
            return []
        return [("compression.level", value)]
    if name.startswith("ssl.truststore."):
        return _translate_truststore(name, value, by_name)
    return _translate_keystore(name, value, by_name)


def _store_type(by_name: dict[str, Setting[str]], name: str) -> str:
    chosen = by_name.get(name)
    kind = chosen.value.strip().upper() if chosen is not None else "JKS"
    if kind not in _STORE_TYPES:
        raise ValueError(f"{name} must be one of {', '.join(_STORE_TYPES)}")
    return kind


def _translate_truststore(
    name: str, value: str, by_name: dict[str, Setting[str]]
) -> list[tuple[str, str]]:
    if name == "ssl.truststore.type":
        _store_type(by_name, name)
        return []
    if name == "ssl.truststore.certificates":
        return [("ssl.ca.pem", value)]
    if name == "ssl.truststore.location":
        kind = _store_type(by_name, "ssl.truststore.type")
        if kind == "PEM":
            return [("ssl.ca.location", value)]
        if not _uses_tls(by_name):
            return []
        password = _value(by_name, "ssl.truststore.password")
        return [("ssl.ca.pem", trusted_certificates(value, password, kind))]
    # ssl.truststore.password: read with the location; a PEM truststore has none.
    return []


def _translate_keystore(
    name: str, value: str, by_name: dict[str, Setting[str]]
) -> list[tuple[str, str]]:
    if name == "ssl.keystore.type":
        _store_type(by_name, name)
        return []
    if name == "ssl.keystore.certificate.chain":
        return [("ssl.certificate.pem", value)]
    if name == "ssl.keystore.key":
        return [("ssl.key.pem", value)]
    kind = _store_type(by_name, "ssl.keystore.type")
    in_store = kind != "PEM" and "ssl.keystore.location" in by_name
    if name == "ssl.key.password":
        # The password of a PEM key; a JKS or PKCS12 key is opened below.
        return [] if in_store else [("ssl.key.password", value)]
    if name == "ssl.keystore.location":
        if kind == "PEM":
            # One PEM file holding the certificate chain and the private key.
            return [("ssl.certificate.location", value), ("ssl.key.location", value)]
        if not _uses_tls(by_name):
            return []
        identity = client_identity(
            value,
            _value(by_name, "ssl.keystore.password"),
            _value(by_name, "ssl.key.password"),
            kind,
        )
        return [
            ("ssl.certificate.pem", identity.certificate_chain),
            ("ssl.key.pem", identity.private_key),
        ]
    # ssl.keystore.password: read with the location.
    return []


def _uses_tls(by_name: dict[str, Setting[str]]) -> bool:
    # Java clients open their stores only for SSL and SASL_SSL: a store that a
    # PLAINTEXT client (often under a global ssl.* setting) never uses is not read.
    protocol = _value(by_name, "security.protocol") or "PLAINTEXT"
    return protocol.strip().upper() in ("SSL", "SASL_SSL")


def _value(by_name: dict[str, Setting[str]], name: str) -> str | None:
    chosen = by_name.get(name)
    return chosen.value if chosen is not None else None


def _translate_jaas(text: str, by_name: dict[str, Setting[str]]) -> list[tuple[str, str]]:
    try:
        entry = parse_jaas(text)
    except ValueError as exc:
        raise ValueError(f"sasl.jaas.config {exc}") from None
    module = entry.module_name
    if module not in _JAAS_MECHANISMS:
        raise ValueError(
            f"login module {entry.module} has no librdkafka equivalent; supported: "
            "PlainLoginModule, ScramLoginModule, Krb5LoginModule, OAuthBearerLoginModule"
        )
    _check_mechanism(module, by_name)
    if module in ("PlainLoginModule", "ScramLoginModule"):
        return _credentials(entry)
    if module == "Krb5LoginModule":
        return _kerberos(entry)
    return _oauth(entry, by_name)


def _check_mechanism(module: str, by_name: dict[str, Setting[str]]) -> None:
    protocol = by_name.get("security.protocol")
    if protocol is None or not protocol.value.strip().upper().startswith("SASL"):
        return
    chosen = by_name.get("sasl.mechanism") or by_name.get("sasl.mechanisms")
    mechanism = chosen.value.strip().upper() if chosen is not None else "GSSAPI"
    expected = _JAAS_MECHANISMS[module]
    if mechanism not in expected:
        where = "" if chosen is not None else " (the default)"
        raise ValueError(
            f"{module} needs sasl.mechanism={' or '.join(expected)}, "
            f"but sasl.mechanism is {mechanism}{where}"
        )


def _credentials(entry: JaasEntry) -> list[tuple[str, str]]:
    if entry.options.get("tokenauth", "false").lower() == "true":
        raise ValueError("SCRAM delegation tokens (tokenauth=true) are not supported by librdkafka")
    missing = [o for o in ("username", "password") if o not in entry.options]
    if missing:
        raise ValueError(f"{entry.module_name} needs {' and '.join(missing)}")
    return [
        ("sasl.username", entry.options["username"]),
        ("sasl.password", entry.options["password"]),
    ]


def _kerberos(entry: JaasEntry) -> list[tuple[str, str]]:
    result = []
    if "principal" in entry.options:
        result.append(("sasl.kerberos.principal", entry.options["principal"]))
    if "keyTab" in entry.options:
        result.append(("sasl.kerberos.keytab", entry.options["keyTab"]))
    if "serviceName" in entry.options:
        result.append(("sasl.kerberos.service.name", entry.options["serviceName"]))
    return result


def _oauth(entry: JaasEntry, by_name: dict[str, Setting[str]]) -> list[tuple[str, str]]:
    if "sasl.oauthbearer.token.endpoint.url" not in by_name or "clientId" not in entry.options:
        raise ValueError(
            "only OAuth client credentials translate to librdkafka: set "
            "sasl.oauthbearer.token.endpoint.url and clientId/clientSecret in the JAAS entry"
        )
    result = [("sasl.oauthbearer.client.id", entry.options["clientId"])]
    if "clientSecret" in entry.options:
        result.append(("sasl.oauthbearer.client.secret", entry.options["clientSecret"]))
    if "scope" in entry.options:
        result.append(("sasl.oauthbearer.scope", entry.options["scope"]))
    extensions = [
        f"{key[len('extension_') :]}={value}"
        for key, value in entry.options.items()
        if key.startswith("extension_")
    ]
    if extensions:
        result.append(("sasl.oauthbearer.extensions", ",".join(extensions)))
    return result
