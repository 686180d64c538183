"""Translating Java client settings into librdkafka settings."""

from __future__ import annotations

import confluent_kafka
import pytest

from mirrorline.config.client_translation import translate
from mirrorline.config.clients import JAVA_CLIENT_SETTINGS, client_types
from mirrorline.config.errors import ConfigIssue
from mirrorline.config.librdkafka import (
    LIBRDKAFKA_CONSUMER,
    LIBRDKAFKA_PRODUCER,
    LIBRDKAFKA_SHARED,
)
from mirrorline.config.model import ClientType, Setting
from mirrorline.config.origin import Origin
from mirrorline.config.redact import is_secret_key

PLAIN = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="alice" password="al1ce-secret";'
)
SCRAM = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    "username='bob' password='b0b-secret';"
)


def run(
    pairs: list[tuple[str, str]], client: ClientType = "producer"
) -> tuple[dict[str, str], list[ConfigIssue]]:
    settings = [
        Setting(name, value, value, Origin("c.properties", line, f"A.{name}"), is_secret_key(name))
        for line, (name, value) in enumerate(pairs, start=1)
    ]
    issues: list[ConfigIssue] = []
    out = translate(settings, client, issues)
    return {name: s.value for name, s in out.items()}, issues


def test_same_names_pass_through_and_lists_are_normalised() -> None:
    out, issues = run([("bootstrap.servers", " a:9092 , b:9092 "), ("linger.ms", "5")])
    assert out == {"bootstrap.servers": "a:9092,b:9092", "linger.ms": "5"}
    assert issues == []


@pytest.mark.parametrize(
    ("java", "value", "client", "expected"),
    [
        ("sasl.mechanism", "plain", "admin", ("sasl.mechanisms", "PLAIN")),
        ("max.request.size", "2097152", "producer", ("message.max.bytes", "2097152")),
        ("fetch.max.wait.ms", "250", "consumer", ("fetch.wait.max.ms", "250")),
        ("send.buffer.bytes", "131072", "producer", ("socket.send.buffer.bytes", "131072")),
        ("receive.buffer.bytes", "65536", "consumer", ("socket.receive.buffer.bytes", "65536")),
        ("receive.buffer.bytes", "-1", "consumer", ("socket.receive.buffer.bytes", "0")),
        ("send.buffer.bytes", "-1", "producer", ("socket.send.buffer.bytes", "0")),
        ("buffer.memory", "33554432", "producer", ("queue.buffering.max.kbytes", "32768")),
        ("buffer.memory", "1000", "producer", ("queue.buffering.max.kbytes", "1")),
        ("request.timeout.ms", "30000", "producer", ("request.timeout.ms", "30000")),
        ("request.timeout.ms", "30000", "consumer", ("socket.timeout.ms", "30000")),
        ("request.timeout.ms", "30000", "admin", ("socket.timeout.ms", "30000")),
        ("security.protocol", "sasl_ssl", "admin", ("security.protocol", "SASL_SSL")),
        ("auto.offset.reset", "none", "consumer", ("auto.offset.reset", "error")),
        (
            "ssl.endpoint.identification.algorithm",
            "",
            "admin",
            (
                "ssl.endpoint.identification.algorithm",
                "none",
            ),
        ),
        (
            "partition.assignment.strategy",
            "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            "consumer",
            ("partition.assignment.strategy", "cooperative-sticky"),
        ),
        (
            "queue.buffering.max.messages",
            "1000",
            "producer",
            ("queue.buffering.max.messages", "1000"),
        ),
    ],
)
def test_renamed_and_converted_settings(
    java: str, value: str, client: ClientType, expected: tuple[str, str]
) -> None:
    out, issues = run([(java, value)], client)
    assert issues == []
    assert out == dict([expected])


@pytest.mark.parametrize(
    ("java", "value", "fragment"),
    [
        ("security.protocol", "SSLv3", "expected one of PLAINTEXT"),
        ("acks", "most", "expected one of all"),
        ("compression.type", "brotli", "expected one of none"),
        ("sasl.mechanism", "AWS_MSK_IAM", "expected one of GSSAPI"),
        ("ssl.cipher.suites", "TLS_AES_256_GCM_SHA384", "OpenSSL names"),
        ("partition.assignment.strategy", "org.example.MyAssignor", "no librdkafka equivalent"),
        ("buffer.memory", "lots", "number of bytes"),
        ("sasl.login.callback.handler.class", "com.example.Handler", "cannot run in librdkafka"),
    ],
)
def test_values_librdkafka_cannot_take(java: str, value: str, fragment: str) -> None:
    _, issues = run([(java, value)])
    assert len(issues) == 1
    assert fragment in issues[0].message
    assert str(issues[0]).startswith(f"c.properties:1: A.{java}: ")


def test_plain_and_scram_jaas_become_username_and_password() -> None:
    for jaas, user, password, mechanism in (
        (PLAIN, "alice", "al1ce-secret", "PLAIN"),
        (SCRAM, "bob", "b0b-secret", "SCRAM-SHA-256"),
    ):
        out, issues = run(
            [
                ("security.protocol", "SASL_SSL"),
                ("sasl.mechanism", mechanism),
                ("sasl.jaas.config", jaas),
            ]
        )
        assert issues == []
        assert out["sasl.username"] == user
        assert out["sasl.password"] == password
        assert "sasl.jaas.config" not in out


def test_values_derived_from_jaas_are_secret_and_keep_the_jaas_origin() -> None:
    settings = [
        Setting("sasl.jaas.config", PLAIN, PLAIN, Origin("f", 3, "A.sasl.jaas.config"), True)
    ]
    out = translate(settings, "admin", [])
    assert out["sasl.username"].secret and out["sasl.password"].secret
    assert out["sasl.password"].origin.line == 3


def test_kerberos_and_oauth_jaas() -> None:
    krb = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
        'keyTab="/etc/security/mirror.keytab" principal="mirror@EXAMPLE.COM" serviceName=kafka;'
    )
    out, issues = run([("sasl.jaas.config", krb)])
    assert issues == []
    assert out == {
        "sasl.kerberos.keytab": "/etc/security/mirror.keytab",
        "sasl.kerberos.principal": "mirror@EXAMPLE.COM",
        "sasl.kerberos.service.name": "kafka",
    }
    oauth = (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'clientId="mirror" clientSecret="xyz" scope="kafka" extension_logicalCluster="lkc-1";'
    )
    out, issues = run(
        [
            ("sasl.oauthbearer.token.endpoint.url", "https://idp.example/token"),
            (
                "sasl.login.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            ),
            ("sasl.jaas.config", oauth),
        ]
    )
    assert issues == []
    assert out == {
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "mirror",
        "sasl.oauthbearer.client.secret": "xyz",
        "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1",
    }


@pytest.mark.parametrize(
    ("jaas", "fragment"),
    [
        ("com.example.CustomLoginModule required token=abc;", "has no librdkafka equivalent"),
        ("org.apache.kafka.common.security.plain.PlainLoginModule required;", "needs username"),
        ("PlainLoginModule", "is not a JAAS entry"),
        ('x.PlainLoginModule required username="a" password="b', "unterminated"),
        (
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=a "
            "password=b tokenauth=true;",
            "delegation tokens",
        ),
    ],
)
def test_untranslatable_jaas(jaas: str, fragment: str) -> None:
    _, issues = run([("sasl.jaas.config", jaas)])
    assert len(issues) == 1
    assert fragment in issues[0].message
    assert "abc" not in str(issues[0]) and "password=b" not in str(issues[0])


def test_jaas_module_must_match_the_mechanism() -> None:
    _, issues = run([("security.protocol", "SASL_PLAINTEXT"), ("sasl.jaas.config", PLAIN)])
    assert "needs sasl.mechanism=PLAIN" in issues[0].message
    assert "GSSAPI (the default)" in issues[0].message


def test_pem_truststore_and_keystore() -> None:
    out, issues = run(
        [
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/etc/ca.pem"),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/etc/client.pem"),
            ("ssl.key.password", "kp"),
        ]
    )
    assert issues == []
    assert out == {
        "ssl.ca.location": "/etc/ca.pem",
        "ssl.certificate.location": "/etc/client.pem",
        "ssl.key.location": "/etc/client.pem",
        "ssl.key.password": "kp",
    }


def test_inline_pem_certificates_and_key() -> None:
    out, issues = run(
        [
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.certificates", "-----BEGIN CERTIFICATE-----CA"),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.certificate.chain", "-----BEGIN CERTIFICATE-----ME"),
            ("ssl.keystore.key", "-----BEGIN PRIVATE KEY-----K"),
        ]
    )
    assert issues == []
    assert out == {
        "ssl.ca.pem": "-----BEGIN CERTIFICATE-----CA",
        "ssl.certificate.pem": "-----BEGIN CERTIFICATE-----ME",
        "ssl.key.pem": "-----BEGIN PRIVATE KEY-----K",
    }


@pytest.mark.parametrize(
    ("pairs", "fragment"),
    [
        # JKS is the default type; the store is opened (tests/unit/test_stores.py).
        (
            [("security.protocol", "SSL"), ("ssl.truststore.location", "/etc/ts.jks")],
            "JKS truststore /etc/ts.jks does not exist",
        ),
        (
            [
                ("security.protocol", "SASL_SSL"),
                ("ssl.truststore.type", "PKCS12"),
                ("ssl.truststore.location", "/etc/ts.p12"),
            ],
            "PKCS12 truststore /etc/ts.p12 does not exist",
        ),
        (
            [
                ("security.protocol", "SSL"),
                ("ssl.keystore.location", "/etc/ks.jks"),
                ("ssl.keystore.password", "ksp"),
            ],
            "JKS keystore /etc/ks.jks does not exist",
        ),
        (
            [("ssl.truststore.type", "BCFKS"), ("ssl.truststore.location", "/x")],
            "must be one of JKS, PKCS12, PEM",
        ),
    ],
)
def test_stores_that_cannot_be_used(pairs: list[tuple[str, str]], fragment: str) -> None:
    _, issues = run(pairs)
    assert any(fragment in issue.message for issue in issues), issues


def test_stores_of_a_client_without_tls_are_not_read() -> None:
    out, issues = run(
        [
            ("ssl.truststore.location", "/etc/ts.jks"),
            ("ssl.keystore.location", "/etc/ks.jks"),
            ("ssl.keystore.password", "ksp"),
        ]
    )
    assert (out, issues) == ({}, [])


def test_compression_level_follows_the_chosen_codec() -> None:
    out, _ = run(
        [
            ("compression.type", "zstd"),
            ("compression.zstd.level", "9"),
            ("compression.gzip.level", "4"),
        ]
    )
    assert out == {"compression.type": "zstd", "compression.level": "9"}


def test_stronger_setting_wins_when_two_names_meet() -> None:
    # Weakest first: the later (stronger) one decides the librdkafka value.
    out, _ = run([("sasl.mechanisms", "PLAIN"), ("sasl.mechanism", "SCRAM-SHA-512")])
    assert out == {"sasl.mechanisms": "SCRAM-SHA-512"}


def test_client_types_of_names() -> None:
    assert client_types("linger.ms") == {"producer"}
    assert client_types("fetch.min.bytes") == {"consumer"}
    assert client_types("bootstrap.servers") == {"consumer", "producer", "admin"}
    assert client_types("queue.buffering.max.messages") == {"producer", "admin"}
    assert client_types("no.such.setting") is None


def test_every_librdkafka_name_in_the_table_exists_in_the_installed_librdkafka() -> None:
    """Given a nonsense value, librdkafka must complain about the value, not the name."""
    unknown = []
    for name in sorted(LIBRDKAFKA_SHARED | LIBRDKAFKA_CONSUMER | LIBRDKAFKA_PRODUCER):
        try:
            confluent_kafka.Producer({name: "\x01not-a-value", "log_level": 0})
        except confluent_kafka.KafkaException as exc:
            if "No such configuration property" in str(exc):
                unknown.append(name)
        except (TypeError, ValueError):
            pass
    assert unknown == [], f"librdkafka {confluent_kafka.libversion()[0]} lacks {unknown}"


def test_java_table_knows_mm2_connection_settings() -> None:
    for name in (
        "bootstrap.servers",
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.keystore.location",
        "client.id",
        "request.timeout.ms",
        "acks",
        "compression.type",
        "linger.ms",
        "batch.size",
        "max.request.size",
        "isolation.level",
        "max.poll.records",
    ):
        assert name in JAVA_CLIENT_SETTINGS, name


def test_librdkafka_accepts_every_role_of_a_loaded_configuration() -> None:
    """Build real confluent-kafka clients (no broker needed) from each role's settings."""
    from mirrorline.admin_client import AdminClient
    from mirrorline.config import parse_config

    config = parse_config(
        "clusters = A, B\n"
        "A.bootstrap.servers = 127.0.0.1:1\n"
        "B.bootstrap.servers = 127.0.0.1:2\n"
        "B.security.protocol = SASL_PLAINTEXT\n"
        "B.sasl.mechanism = SCRAM-SHA-256\n"
        f"B.sasl.jaas.config = {SCRAM}\n"
        "A->B.enabled = true\n"
        "consumer.isolation.level = read_committed\n"
        "A->B.producer.override.compression.type = lz4\n"
        "A->B.producer.override.buffer.memory = 67108864\n"
        "A->B.target.producer.max.request.size = 2097152\n"
        "A->B.source.consumer.fetch.max.wait.ms = 200\n"
        "request.timeout.ms = 20000\n",
        environ={},
    )
    flow = config.flow("A", "B")
    quiet = {"log_level": 0}
    for side in ("source", "target"):
        consumer = confluent_kafka.Consumer({**flow.client_settings(side, "consumer"), **quiet})
        consumer.close()
        confluent_kafka.Producer({**flow.client_settings(side, "producer"), **quiet}).flush(0)
        AdminClient({**flow.client_settings(side, "admin"), **quiet})
    for cluster in config.clusters.values():
        consumer = confluent_kafka.Consumer({**cluster.client_settings("consumer"), **quiet})
        consumer.close()
