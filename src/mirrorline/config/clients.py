"""Kafka client settings: Java client names in, librdkafka settings out.

MM2 files configure Java clients. Mirrorline's own clients are librdkafka
(confluent-kafka), whose settings are mostly named the same but not always,
and whose TLS and SASL setup differs. This module knows every Java client
setting of Apache Kafka's producer, consumer and admin client, and what to
do with each:

* **same**: librdkafka has the same name and meaning; the value is passed on
  (a few enumerations are checked and normalised);
* **renamed**: `sasl.mechanism` → `sasl.mechanisms`, `max.request.size` →
  `message.max.bytes`, `fetch.max.wait.ms` → `fetch.wait.max.ms`,
  `send.buffer.bytes`/`receive.buffer.bytes` → `socket.*`,
  `buffer.memory` (bytes) → `queue.buffering.max.kbytes` (KiB), and
  `request.timeout.ms` → `socket.timeout.ms` for consumers and admin clients;
* **translated**: `sasl.jaas.config` (PLAIN, SCRAM, Kerberos keytab, OAuth
  client credentials) becomes `sasl.username`/`sasl.password` and friends;
  PEM truststores and keystores become `ssl.ca.*`, `ssl.certificate.*` and
  `ssl.key.*`; JKS and PKCS12 stores (which librdkafka cannot read) are
  opened with their passwords when the configuration loads and passed as
  PEM text, `ssl.ca.pem`, `ssl.certificate.pem` and `ssl.key.pem`, held in
  memory and hidden from every rendering (`mirrorline.config.stores`);
* **ignored with a warning**: settings only the Java client has, that do not
  change what is replicated (serializers, metrics, JVM TLS providers, ...);
* **refused**: settings that would change behaviour but have no librdkafka
  equivalent (interceptors, custom callback handlers, ...).

librdkafka's own property names are accepted as they are, so a setting only
librdkafka has can still be used. Any other name is an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mirrorline.config.errors import ConfigIssue
from mirrorline.config.jaas import JaasEntry, parse_jaas
from mirrorline.config.librdkafka import librdkafka_clients
from mirrorline.config.model import ClientType, Setting, Side
from mirrorline.config.redact import is_secret_key, shown
from mirrorline.config.stores import StoreError, client_identity, trusted_certificates
from mirrorline.config.values import parse_list

__all__ = [
    "JAVA_CLIENT_SETTINGS",
    "JavaClientSetting",
    "client_types",
    "forced_settings",
    "is_client_setting",
    "java_only",
    "role_defaults",
    "translate",
]

Action = Literal["same", "renamed", "special", "ignored", "refused", "engine"]

_ALL: frozenset[ClientType] = frozenset({"consumer", "producer", "admin"})
_P: frozenset[ClientType] = frozenset({"producer"})
_C: frozenset[ClientType] = frozenset({"consumer"})
_PA: frozenset[ClientType] = frozenset({"producer", "admin"})
_CA: frozenset[ClientType] = frozenset({"consumer", "admin"})


@dataclass(frozen=True)
class JavaClientSetting:
    """What Mirrorline does with one Java client setting."""

    clients: frozenset[ClientType]
    action: Action
    reason: str = ""


def _same(clients: frozenset[ClientType] = _ALL) -> JavaClientSetting:
    return JavaClientSetting(clients, "same")


def _renamed(clients: frozenset[ClientType] = _ALL) -> JavaClientSetting:
    return JavaClientSetting(clients, "renamed")


def _special(clients: frozenset[ClientType] = _ALL) -> JavaClientSetting:
    return JavaClientSetting(clients, "special")


def _ignored(reason: str, clients: frozenset[ClientType] = _ALL) -> JavaClientSetting:
    return JavaClientSetting(clients, "ignored", reason)


def _refused(reason: str, clients: frozenset[ClientType] = _ALL) -> JavaClientSetting:
    return JavaClientSetting(clients, "refused", reason)


_JVM = "only meaningful to the Java client"
_METRICS = "Mirrorline reports client metrics itself"
_SERDE = "Mirrorline copies keys and values as bytes"
_PARTITIONER = "Mirrorline writes each record to its source partition number"
_LOGIN = "librdkafka refreshes logins on its own schedule"
_BROKER_SIDE = "only used by brokers to validate tokens"

#: Every Java producer, consumer and admin client setting of Apache Kafka.
JAVA_CLIENT_SETTINGS: dict[str, JavaClientSetting] = {
    # common
    "bootstrap.servers": _same(),
    "client.dns.lookup": _same(),
    "metadata.max.age.ms": _same(),
    "send.buffer.bytes": _renamed(),
    "receive.buffer.bytes": _renamed(),
    "client.id": _same(),
    "reconnect.backoff.ms": _same(),
    "reconnect.backoff.max.ms": _same(),
    "retries": _same(_PA),
    "retry.backoff.ms": _same(),
    "retry.backoff.max.ms": _same(),
    "enable.metrics.push": _same(),
    "metrics.sample.window.ms": _ignored(_METRICS),
    "metrics.num.samples": _ignored(_METRICS),
    "metrics.recording.level": _ignored(_METRICS),
    "metric.reporters": _ignored(_METRICS),
    "auto.include.jmx.reporter": _ignored(_METRICS),
    "security.protocol": _same(),
    "socket.connection.setup.timeout.ms": _same(),
    "socket.connection.setup.timeout.max.ms": _ignored(_JVM),
    "connections.max.idle.ms": _same(),
    "request.timeout.ms": _renamed(),
    "default.api.timeout.ms": _ignored("Mirrorline passes timeouts with each call", _CA),
    "metadata.recovery.strategy": _same(),
    "metadata.recovery.rebootstrap.trigger.ms": _same(),
    # consumer
    "group.id": _same(_C),
    "group.instance.id": _same(_C),
    "group.protocol": _same(_C),
    "group.remote.assignor": _same(_C),
    "max.poll.interval.ms": _same(_C),
    "rebalance.timeout.ms": _ignored(_JVM, _C),
    "session.timeout.ms": _same(_C),
    "heartbeat.interval.ms": _same(_C),
    "max.poll.records": JavaClientSetting(_C, "engine"),
    "enable.auto.commit": _same(_C),
    "auto.commit.interval.ms": _same(_C),
    "partition.assignment.strategy": _renamed(_C),
    "auto.offset.reset": _same(_C),
    "fetch.min.bytes": _same(_C),
    "fetch.max.bytes": _same(_C),
    "fetch.max.wait.ms": _renamed(_C),
    "max.partition.fetch.bytes": _same(_C),
    "check.crcs": _same(_C),
    "key.deserializer": _ignored(_SERDE, _C),
    "value.deserializer": _ignored(_SERDE, _C),
    "exclude.internal.topics": _ignored("Mirrorline never reads internal topics as data", _C),
    "isolation.level": _same(_C),
    "allow.auto.create.topics": _same(_C),
    "client.rack": _same(_C),
    "interceptor.classes": _refused("Java interceptors cannot run in librdkafka", _PA | _C),
    # producer
    "metadata.max.idle.ms": _ignored(_JVM, _P),
    "batch.size": _same(_P),
    "partitioner.adaptive.partitioning.enable": _ignored(_PARTITIONER, _P),
    "partitioner.availability.timeout.ms": _ignored(_PARTITIONER, _P),
    "partitioner.ignore.keys": _ignored(_PARTITIONER, _P),
    "partitioner.class": _ignored(_PARTITIONER, _P),
    "acks": _same(_P),
    "linger.ms": _same(_P),
    "delivery.timeout.ms": _same(_P),
    "max.request.size": _renamed(_P),
    "max.block.ms": _ignored("librdkafka never blocks the caller on send", _P),
    "buffer.memory": _renamed(_P),
    "compression.type": _same(_P),
    "compression.gzip.level": _special(_P),
    "compression.lz4.level": _special(_P),
    "compression.zstd.level": _special(_P),
    "key.serializer": _ignored(_SERDE, _P),
    "value.serializer": _ignored(_SERDE, _P),
    "enable.idempotence": _same(_P),
    "transaction.timeout.ms": _same(_P),
    "transactional.id": _ignored(
        "Mirrorline derives transactional ids from flow, topic and partition", _P
    ),
    "max.in.flight.requests.per.connection": _same(_P),
    # admin
    "bootstrap.controllers": _refused("librdkafka cannot talk to KRaft controllers directly"),
    # TLS
    "ssl.protocol": _ignored("librdkafka negotiates the TLS version with OpenSSL"),
    "ssl.provider": _ignored(_JVM),
    "ssl.cipher.suites": _same(),
    "ssl.enabled.protocols": _ignored("librdkafka negotiates the TLS version with OpenSSL"),
    "ssl.keystore.type": _special(),
    "ssl.keystore.key": _special(),
    "ssl.keystore.certificate.chain": _special(),
    "ssl.truststore.certificates": _special(),
    "ssl.keystore.location": _special(),
    "ssl.keystore.password": _special(),
    "ssl.key.password": _special(),
    "ssl.truststore.type": _special(),
    "ssl.truststore.location": _special(),
    "ssl.truststore.password": _special(),
    "ssl.keymanager.algorithm": _ignored(_JVM),
    "ssl.trustmanager.algorithm": _ignored(_JVM),
    "ssl.endpoint.identification.algorithm": _same(),
    "ssl.secure.random.implementation": _ignored(_JVM),
    "ssl.engine.factory.class": _refused("a Java TLS engine cannot run in librdkafka"),
    # SASL
    "sasl.mechanism": _renamed(),
    "sasl.jaas.config": _special(),
    "sasl.client.callback.handler.class": _refused("Java callback handlers cannot run here"),
    "sasl.login.callback.handler.class": _special(),
    "sasl.login.class": _refused("Java login classes cannot run in librdkafka"),
    "sasl.kerberos.service.name": _same(),
    "sasl.kerberos.kinit.cmd": _same(),
    "sasl.kerberos.ticket.renew.window.factor": _ignored(_LOGIN),
    "sasl.kerberos.ticket.renew.jitter": _ignored(_LOGIN),
    "sasl.kerberos.min.time.before.relogin": _same(),
    "sasl.login.refresh.window.factor": _ignored(_LOGIN),
    "sasl.login.refresh.window.jitter": _ignored(_LOGIN),
    "sasl.login.refresh.min.period.seconds": _ignored(_LOGIN),
    "sasl.login.refresh.buffer.seconds": _ignored(_LOGIN),
    "sasl.login.connect.timeout.ms": _ignored(_LOGIN),
    "sasl.login.read.timeout.ms": _ignored(_LOGIN),
    "sasl.login.retry.backoff.max.ms": _ignored(_LOGIN),
    "sasl.login.retry.backoff.ms": _ignored(_LOGIN),
    "sasl.oauthbearer.scope.claim.name": _ignored(_BROKER_SIDE),
    "sasl.oauthbearer.sub.claim.name": _same(),
    "sasl.oauthbearer.token.endpoint.url": _special(),
    "sasl.oauthbearer.jwks.endpoint.url": _ignored(_BROKER_SIDE),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": _ignored(_BROKER_SIDE),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": _ignored(_BROKER_SIDE),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": _ignored(_BROKER_SIDE),
    "sasl.oauthbearer.clock.skew.seconds": _ignored(_BROKER_SIDE),
    "sasl.oauthbearer.expected.audience": _ignored(_BROKER_SIDE),
    "sasl.oauthbearer.expected.issuer": _ignored(_BROKER_SIDE),
    "sasl.oauthbearer.header.urlencode": _ignored(_JVM),
}

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

#: Longest pause between two attempts to reach a lost broker (see `role_defaults`).
RECONNECT_BACKOFF_MAX_MS = "1000"


def client_types(name: str) -> frozenset[ClientType] | None:
    """The client types a Java or librdkafka setting applies to; None if unknown."""
    rule = JAVA_CLIENT_SETTINGS.get(name)
    if rule is not None:
        return rule.clients
    return librdkafka_clients(name)  # type: ignore[return-value]


def is_client_setting(name: str) -> bool:
    """True for any Java client or librdkafka setting name."""
    return client_types(name) is not None


def java_only(name: str) -> JavaClientSetting | None:
    """The rule of a Java client setting that is ignored or refused, if it is one."""
    rule = JAVA_CLIENT_SETTINGS.get(name)
    if rule is not None and rule.action in ("ignored", "refused"):
        return rule
    return None


def role_defaults(label: str, side: Side | None, client: ClientType) -> dict[str, str]:
    """Java-named defaults for one client role, lower than anything in the file.

    `client.id` names the role so brokers' logs and quotas can tell clients
    apart, and consumers get a `group.id` of the same name. Consumers start
    at `earliest` (MM2); the source consumer reads `read_uncommitted` (the
    Java default MM2 uses; librdkafka's default differs, so it is set
    explicitly); producers wait for all in-sync replicas, and the target
    producer is idempotent so retries neither duplicate nor reorder records.

    Every client retries a lost broker at least once a second (the Java
    clients' default; librdkafka's is 10 s), so replication resumes within
    about a second of a broker's return instead of up to ten.
    """
    role = f"{side}-{client}" if side else client
    defaults = {
        "client.id": f"mirrorline|{label}|{role}",
        "reconnect.backoff.max.ms": RECONNECT_BACKOFF_MAX_MS,
    }
    if client == "consumer":
        # librdkafka refuses a consumer without a group, even one that only
        # uses assign(); no offsets are committed under it.
        defaults["group.id"] = f"mirrorline|{label}|{role}"
    if side is None:
        return defaults
    if client == "consumer":
        defaults["auto.offset.reset"] = "earliest"
    if (side, client) == ("source", "consumer"):
        defaults["isolation.level"] = "read_uncommitted"
    if client == "producer":
        defaults["acks"] = "all"
    if (side, client) == ("target", "producer"):
        defaults["enable.idempotence"] = "true"
    return defaults


def forced_settings(side: Side | None, client: ClientType) -> dict[str, str]:
    """Java-named values Mirrorline always sets for a flow's client role.

    Consumers never commit offsets by themselves (MM2 does the same):
    progress lives in Mirrorline's own topics.
    """
    if side is not None and client == "consumer":
        return {"enable.auto.commit": "false"}
    return {}


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
