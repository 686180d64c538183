"""Mutual-TLS dev clusters, the pure parts: broker and client settings, the users' keystores,
and the generated properties file read by Mirrorline's configuration loader."""

from __future__ import annotations

import json
import re

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from mirrorline.config import load_config
from mirrorline.config.errors import ConfigError
from mirrorline.config.redact import REDACTED, is_secret_key
from mirrorline.config.stores import client_identity
from mirrorline.devnode import DevNode
from mirrorline.devsecurity import PRINCIPAL_MAPPING, DevSecurity
from mirrorline.devstate import DevCluster, properties_text


@pytest.fixture
def security(tmp_path) -> DevSecurity:
    security = DevSecurity.of(tmp_path)
    security.ensure()
    return security


def test_mtls_brokers_require_client_certificates_and_authorize(security: DevSecurity):
    settings = security.server_properties("east", "127.0.0.1:19092", 19093, "mtls")
    assert settings["listeners"] == "SSL://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert settings["advertised.listeners"] == "SSL://127.0.0.1:19092"
    assert settings["listener.security.protocol.map"] == "SSL:SSL,CONTROLLER:PLAINTEXT"
    assert settings["inter.broker.listener.name"] == "SSL"
    assert settings["ssl.client.auth"] == "required"
    assert settings["ssl.principal.mapping.rules"] == PRINCIPAL_MAPPING
    assert settings["allow.everyone.if.no.acl.found"] == "false"
    assert "User:admin" in settings["super.users"].split(";")
    assert not any(key.startswith("sasl") or ".sasl." in key for key in settings)
    # Nodes present the admin certificate, so they are User:admin to one another.
    assert settings["ssl.keystore.location"] == str(security.user_pem("admin"))
    assert _common_name(security.user_pem("admin").read_bytes()) == "admin"
    assert security.format_arguments("mtls") == []
    assert len(security.format_arguments("sasl_ssl")) == 4


def test_the_principal_mapping_rule_takes_the_common_name():
    rule = re.match(r"RULE:(.*)/(.*)/,DEFAULT$", PRINCIPAL_MAPPING)
    assert rule is not None
    pattern, replacement = rule.groups()
    assert re.sub(pattern, replacement.replace("$1", r"\1"), "CN=mirrorline") == "mirrorline"
    assert re.fullmatch(pattern, "CN=mirrorline,O=elsewhere") is None  # left to DEFAULT


def test_each_user_has_a_private_pkcs12_keystore_and_pem(security: DevSecurity, tmp_path):
    for user in ("admin", "mirrorline"):
        keystore, pem = security.user_keystore(user), security.user_pem(user)
        for path in (keystore, pem, security.secrets_file):
            assert path.stat().st_mode & 0o077 == 0, path
        identity = client_identity(str(keystore), security.keystore_password(user), None, "PKCS12")
        assert _common_name(identity.certificate_chain.encode()) == user
        with pytest.raises(ValueError, match="password"):
            client_identity(str(keystore), "not-the-password", None, "PKCS12")
    assert security.keystore_password("admin") != security.keystore_password("mirrorline")
    assert (tmp_path / "security").stat().st_mode & 0o077 == 0


def test_ensure_adds_keystore_passwords_to_an_older_secrets_file(tmp_path):
    security = DevSecurity.of(tmp_path)
    security.ensure()
    older = "admin.password=a1\nmirrorline.password=m1\n"
    security.secrets_file.write_text(older)
    security.ensure()
    assert security.password("admin") == "a1" and security.password("mirrorline") == "m1"
    assert security.keystore_password("mirrorline")


def test_the_librdkafka_client_config_logs_in_with_the_users_certificate(security: DevSecurity):
    config = security.client_config("127.0.0.1:19092", "mtls", "mirrorline")
    assert config == {
        "bootstrap.servers": "127.0.0.1:19092",
        "security.protocol": "SSL",
        "ssl.ca.location": str(security.ca_file),
        "ssl.certificate.location": str(security.user_pem("mirrorline")),
        "ssl.key.location": str(security.user_pem("mirrorline")),
    }


def test_the_properties_file_loads_with_the_replication_users_keystore(
    security: DevSecurity, tmp_path
):
    clusters = [_cluster("east"), _cluster("west")]
    text = properties_text(clusters, security)
    assert "east.security.protocol = SSL" in text
    assert "west.ssl.keystore.type = PKCS12" in text
    assert f"ssl.keystore.location = {security.user_keystore('mirrorline')}" in text
    password = security.keystore_password("mirrorline")
    assert password not in text  # read through ${file:...}
    path = tmp_path / "mtls.properties"
    path.write_text(text + "east->west.enabled = true\n")

    config = load_config(path)
    flow = config.flow("east", "west")
    for side in ("source", "target"):
        mine = flow.client_settings(side, "admin")  # Mirrorline's own (librdkafka) clients
        assert mine["security.protocol"] == "SSL"
        assert _common_name(mine["ssl.certificate.pem"].encode()) == "mirrorline"
        assert "PRIVATE KEY" in mine["ssl.key.pem"]
        assert mine.setting("ssl.key.pem").shown == REDACTED
        java = flow.java_client_settings(side, "producer")  # Spark's source, the writer
        assert java["ssl.keystore.type"] == "PKCS12"
        assert java["ssl.keystore.password"] == password
    rendered = json.dumps(config.to_dict()) + repr(flow)
    assert password not in rendered and "PRIVATE KEY" not in rendered
    for key in ("east.ssl.keystore.password", "ssl.key.password", "ssl.keystore.key"):
        assert is_secret_key(key), key


def test_a_missing_keystore_names_the_setting_and_cluster(security: DevSecurity, tmp_path):
    text = properties_text([_cluster("east"), _cluster("west")], security)
    gone = tmp_path / "gone.p12"
    text = text.replace(str(security.user_keystore("mirrorline")), str(gone), 1)
    path = tmp_path / "mtls.properties"
    path.write_text(text + "east->west.enabled = true\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "east.ssl.keystore.location" in message and "does not exist" in message
    assert security.keystore_password("mirrorline") not in message


def _cluster(alias: str) -> DevCluster:
    node = DevNode(1, 19092, 19093, f"/nowhere/{alias}/node-1")
    return DevCluster(alias, "id", f"/nowhere/{alias}", (node,), "mtls")


def _common_name(pem: bytes) -> str:
    certificate = x509.load_pem_x509_certificate(pem)
    (name,) = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(name.value)
