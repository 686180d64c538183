"""Every Java client setting of Apache Kafka, and what Mirrorline does with it.

MM2 files configure Java clients. Mirrorline's own clients are librdkafka
(confluent-kafka), whose settings are mostly named the same but not always,
and whose TLS and SASL setup differs. This module knows every Java client
setting of Apache Kafka's producer, consumer and admin client, which client
types take it, and what to do with it:

* **same**, **renamed** and **special**: librdkafka has it, under the same
  name, under another name, or as other settings altogether (JAAS entries,
  trust and key stores); `mirrorline.config.client_translation` writes them;
* **engine**: Mirrorline's engine reads it (`max.poll.records`, its batch size);
* **ignored with a warning**: settings only the Java client has, that do not
  change what is replicated (serializers, metrics, JVM TLS providers, ...);
* **refused**: settings that would change behaviour but have no librdkafka
  equivalent (interceptors, custom callback handlers, ...).

librdkafka's own property names are accepted as they are, so a setting only
librdkafka has can still be used. Any other name is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mirrorline.config.librdkafka import librdkafka_clients
from mirrorline.config.model import ClientType

__all__ = [
    "JAVA_CLIENT_SETTINGS",
    "JavaClientSetting",
    "client_types",
    "is_client_setting",
    "java_only",
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
