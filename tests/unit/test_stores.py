"""JKS and PKCS12 stores made by keytool, handed to librdkafka as PEM text."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from mirrorline.certificates import CertificateAuthority, KeyPair
from mirrorline.config.client_translation import translate
from mirrorline.config.errors import ConfigError, ConfigIssue
from mirrorline.config.loader import load_config
from mirrorline.config.model import Setting
from mirrorline.config.origin import Origin
from mirrorline.config.redact import REDACTED, is_secret_key
from mirrorline.config.stores import trusted_certificates
from mirrorline.jvm import JvmSetupError, java_executable

STORE_PASSWORD = "St0re-Pa55word"
KEY_PASSWORD = "K3y-Pa55word"
WRONG_PASSWORD = "Wr0ng-Pa55word"


@dataclass(frozen=True)
class Stores:
    ca: CertificateAuthority
    client: KeyPair
    directory: Path

    def __getitem__(self, name: str) -> str:
        return str(self.directory / name)


def keytool(*args: str) -> None:
    tool = Path(java_executable()).with_name("keytool")
    env = {**os.environ, "STORE_PW": STORE_PASSWORD, "KEY_PW": KEY_PASSWORD}
    subprocess.run([str(tool), *args], env=env, check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    try:
        java_executable()
    except JvmSetupError as exc:
        pytest.skip(str(exc))
    directory = tmp_path_factory.mktemp("stores")
    ca = CertificateAuthority.create()
    client = ca.issue("client")
    (directory / "ca.pem").write_bytes(ca.cert_pem)
    key = serialization.load_pem_private_key(client.key_pem, password=None)
    seed = pkcs12.serialize_key_and_certificates(
        b"client",
        key,  # type: ignore[arg-type]
        x509.load_pem_x509_certificate(client.cert_pem),
        [x509.load_pem_x509_certificate(ca.cert_pem)],
        serialization.BestAvailableEncryption(STORE_PASSWORD.encode()),
    )
    (directory / "seed.p12").write_bytes(seed)
    store = ("-storepass:env", "STORE_PW")
    for kind, name in (("JKS", "truststore.jks"), ("PKCS12", "truststore.p12")):
        keytool(
            "-importcert", "-noprompt", "-alias", "ca", "-file", str(directory / "ca.pem"),
            "-keystore", str(directory / name), "-storetype", kind, *store,
        )  # fmt: skip
    source = ("-srckeystore", str(directory / "seed.p12"), "-srcstoretype", "PKCS12")
    keytool(
        "-importkeystore", *source, "-srcstorepass:env", "STORE_PW",
        "-destkeystore", str(directory / "keystore.p12"), "-deststoretype", "PKCS12",
        "-deststorepass:env", "STORE_PW",
    )  # fmt: skip
    keytool(
        "-importkeystore", *source, "-srcstorepass:env", "STORE_PW",
        "-destkeystore", str(directory / "keystore.jks"), "-deststoretype", "JKS",
        "-deststorepass:env", "STORE_PW", "-destkeypass:env", "KEY_PW",
    )  # fmt: skip
    for alias in ("one", "two"):
        keytool(
            "-genkeypair", "-alias", alias, "-keyalg", "EC", "-dname", f"CN={alias}",
            "-keystore", str(directory / "two-keys.jks"), "-storetype", "JKS", *store,
            "-keypass:env", "STORE_PW",
        )  # fmt: skip
    keytool(
        "-importkeystore", "-srckeystore", str(directory / "two-keys.jks"), "-srcstoretype", "JKS",
        "-srcstorepass:env", "STORE_PW", "-destkeystore", str(directory / "two-keys.p12"),
        "-deststoretype", "PKCS12", "-deststorepass:env", "STORE_PW",
    )  # fmt: skip
    return Stores(ca, client, directory)


def run(pairs: list[tuple[str, str]]) -> tuple[dict[str, Setting[str]], list[ConfigIssue]]:
    pairs = [("security.protocol", "SSL"), *pairs]
    settings = [
        Setting(name, value, value, Origin("c.properties", line, f"A.{name}"), is_secret_key(name))
        for line, (name, value) in enumerate(pairs, start=1)
    ]
    issues: list[ConfigIssue] = []
    out = translate(settings, "producer", issues)
    del out["security.protocol"]
    return out, issues


def certificates_der(pem: str) -> list[bytes]:
    found = x509.load_pem_x509_certificates(pem.encode())
    return [c.public_bytes(serialization.Encoding.DER) for c in found]


def der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


def public_numbers(key_pem: str | bytes) -> object:
    data = key_pem.encode() if isinstance(key_pem, str) else key_pem
    key = serialization.load_pem_private_key(data, password=None)
    return key.public_key().public_numbers()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kind", "name"), [("JKS", "truststore.jks"), ("PKCS12", "truststore.p12")]
)
def test_truststore_becomes_the_ca_pem(stores: Stores, kind: str, name: str) -> None:
    out, issues = run(
        [
            ("ssl.truststore.type", kind),
            ("ssl.truststore.location", stores[name]),
            ("ssl.truststore.password", STORE_PASSWORD),
        ]
    )
    assert issues == []
    assert set(out) == {"ssl.ca.pem"}
    assert certificates_der(out["ssl.ca.pem"].value) == [der(stores.ca.cert_pem)]
    assert out["ssl.ca.pem"].secret


def test_jks_is_the_default_type_and_opens_without_a_password(stores: Stores) -> None:
    out, issues = run([("ssl.truststore.location", stores["truststore.jks"])])
    assert issues == []
    assert certificates_der(out["ssl.ca.pem"].value) == [der(stores.ca.cert_pem)]


@pytest.mark.parametrize(
    ("kind", "name", "key_password"),
    [("JKS", "keystore.jks", KEY_PASSWORD), ("PKCS12", "keystore.p12", None)],
)
def test_keystore_becomes_certificate_and_key_pem(
    stores: Stores, kind: str, name: str, key_password: str | None
) -> None:
    pairs = [
        ("ssl.keystore.type", kind),
        ("ssl.keystore.location", stores[name]),
        ("ssl.keystore.password", STORE_PASSWORD),
    ]
    if key_password is not None:
        pairs.append(("ssl.key.password", key_password))
    out, issues = run(pairs)
    assert issues == []
    assert set(out) == {"ssl.certificate.pem", "ssl.key.pem"}
    chain = certificates_der(out["ssl.certificate.pem"].value)
    assert chain == [der(stores.client.cert_pem), der(stores.ca.cert_pem)]
    key_pem = out["ssl.key.pem"].value
    assert key_pem.startswith("-----BEGIN PRIVATE KEY-----")  # unencrypted PKCS#8
    assert public_numbers(key_pem) == public_numbers(stores.client.key_pem)
    assert out["ssl.key.pem"].secret and out["ssl.certificate.pem"].secret


def test_a_replaced_store_is_read_again(stores: Stores, tmp_path: Path) -> None:
    path = tmp_path / "rotating.jks"
    path.write_bytes(Path(stores["truststore.jks"]).read_bytes())
    first = trusted_certificates(str(path), STORE_PASSWORD)
    assert certificates_der(first) == [der(stores.ca.cert_pem)]
    assert trusted_certificates(str(path), STORE_PASSWORD) == first
    # A keystore as truststore: Java trusts the first certificate of each key entry.
    path.write_bytes(Path(stores["keystore.jks"]).read_bytes())
    assert certificates_der(trusted_certificates(str(path), STORE_PASSWORD)) == [
        der(stores.client.cert_pem)
    ]


def test_librdkafka_accepts_the_translated_pems(stores: Stores) -> None:
    out, issues = run(
        [
            ("ssl.truststore.location", stores["truststore.jks"]),
            ("ssl.truststore.password", STORE_PASSWORD),
            ("ssl.keystore.location", stores["keystore.jks"]),
            ("ssl.keystore.password", STORE_PASSWORD),
            ("ssl.key.password", KEY_PASSWORD),
        ]
    )
    assert issues == []
    settings = {name: s.value for name, s in out.items()}
    # librdkafka loads the CA, the chain and the key (checking they match) when built.
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL", **settings}
    )
    producer.flush(0)


def assert_issue(issues: list[ConfigIssue], key: str, path: str, fragment: str) -> None:
    assert len(issues) == 1, issues
    text = str(issues[0])
    assert issues[0].setting == f"A.{key}"
    assert path in text and fragment in text, text
    for secret in (STORE_PASSWORD, KEY_PASSWORD, WRONG_PASSWORD, "PRIVATE KEY"):
        assert secret not in text


@pytest.mark.parametrize("name", ["truststore.jks", "truststore.p12"])
def test_wrong_truststore_password(stores: Stores, name: str) -> None:
    _, issues = run(
        [
            ("ssl.truststore.location", stores[name]),
            ("ssl.truststore.password", WRONG_PASSWORD),
        ]
    )
    assert_issue(
        issues,
        "ssl.truststore.location",
        stores[name],
        "does not open with ssl.truststore.password",
    )


def test_wrong_key_password_names_the_key_password(stores: Stores) -> None:
    _, issues = run(
        [
            ("ssl.keystore.location", stores["keystore.jks"]),
            ("ssl.keystore.password", STORE_PASSWORD),
            ("ssl.key.password", WRONG_PASSWORD),
        ]
    )
    assert_issue(issues, "ssl.keystore.location", stores["keystore.jks"], "ssl.key.password")


def test_wrong_keystore_password(stores: Stores) -> None:
    _, issues = run(
        [
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", stores["keystore.p12"]),
            ("ssl.keystore.password", WRONG_PASSWORD),
        ]
    )
    assert_issue(
        issues,
        "ssl.keystore.location",
        stores["keystore.p12"],
        "does not open with ssl.keystore.password",
    )


def test_missing_store(stores: Stores) -> None:
    path = stores["missing.jks"]
    _, issues = run(
        [("ssl.truststore.location", path), ("ssl.truststore.password", STORE_PASSWORD)]
    )
    assert_issue(issues, "ssl.truststore.location", path, "does not exist")


@pytest.mark.parametrize("kind", ["JKS", "PKCS12"])
def test_a_file_of_another_type(stores: Stores, kind: str) -> None:
    _, issues = run(
        [
            ("ssl.truststore.type", kind),
            ("ssl.truststore.location", stores["ca.pem"]),
            ("ssl.truststore.password", STORE_PASSWORD),
        ]
    )
    assert_issue(
        issues, "ssl.truststore.location", stores["ca.pem"], "is neither a JKS nor a PKCS12 store"
    )
    assert "ssl.truststore.type = PEM" in (issues[0].hint or "")


def test_a_keystore_without_a_key(stores: Stores) -> None:
    _, issues = run(
        [
            ("ssl.keystore.location", stores["truststore.jks"]),
            ("ssl.keystore.password", STORE_PASSWORD),
        ]
    )
    assert_issue(issues, "ssl.keystore.location", stores["truststore.jks"], "holds no private key")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [("two-keys.jks", "holds 2 private keys (one, two)"), ("two-keys.p12", "holds 2 private keys")],
)
def test_a_keystore_with_two_keys_is_refused(stores: Stores, name: str, fragment: str) -> None:
    _, issues = run(
        [
            ("ssl.keystore.location", stores[name]),
            ("ssl.keystore.password", STORE_PASSWORD),
        ]
    )
    assert_issue(issues, "ssl.keystore.location", stores[name], fragment)


def test_a_keystore_needs_its_password(stores: Stores) -> None:
    _, issues = run([("ssl.keystore.location", stores["keystore.jks"])])
    assert_issue(issues, "ssl.keystore.location", stores["keystore.jks"], "has no password")


def write_config(stores: Stores) -> Path:
    path = stores.directory / "mm2.properties"
    (stores.directory / "a.properties").write_text(
        f"truststore.password = {STORE_PASSWORD}\nkeystore.password = {STORE_PASSWORD}\n"
        f"key.password = {KEY_PASSWORD}\n",
        encoding="utf-8",
    )
    path.write_text(
        "clusters = A, B\n"
        "A.bootstrap.servers = a:9093\n"
        "B.bootstrap.servers = b:9092\n"
        "A->B.enabled = true\n"
        "A.security.protocol = SSL\n"
        f"A.ssl.truststore.location = {stores['truststore.jks']}\n"
        "A.ssl.truststore.password = ${file:a.properties:truststore.password}\n"
        "A.ssl.truststore.type = JKS\n"
        f"A.ssl.keystore.location = {stores['keystore.jks']}\n"
        "A.ssl.keystore.password = ${file:a.properties:keystore.password}\n"
        "A.ssl.key.password = ${file:a.properties:key.password}\n",
        encoding="utf-8",
    )
    return path


def test_flow_clients_carry_pems_and_java_clients_keep_the_stores(stores: Stores) -> None:
    config = load_config(write_config(stores))
    flow = config.flow("A", "B")
    source = flow.client_settings("source", "consumer")
    assert certificates_der(source["ssl.ca.pem"]) == [der(stores.ca.cert_pem)]
    assert public_numbers(source["ssl.key.pem"]) == public_numbers(stores.client.key_pem)
    assert "ssl.keystore.location" not in source and "ssl.key.password" not in source
    assert "ssl.ca.pem" not in flow.client_settings("target", "producer")

    java = flow.java_client_settings("source", "consumer")
    assert java["ssl.truststore.location"] == stores["truststore.jks"]
    assert java["ssl.truststore.type"] == "JKS"
    assert java["ssl.keystore.location"] == stores["keystore.jks"]
    assert java["ssl.keystore.password"] == STORE_PASSWORD
    assert java["ssl.key.password"] == KEY_PASSWORD
    assert "ssl.ca.pem" not in java

    renderings = [repr(source), json.dumps(config.to_dict()), json.dumps(flow.to_dict())]
    for text in renderings:
        assert "PRIVATE KEY" not in text and "BEGIN CERTIFICATE" not in text
        assert STORE_PASSWORD not in text and KEY_PASSWORD not in text
    assert source.setting("ssl.key.pem").shown == REDACTED


def test_a_wrong_password_in_a_loaded_config_is_one_error(stores: Stores) -> None:
    path = write_config(stores)
    (stores.directory / "a.properties").write_text(
        f"truststore.password = {WRONG_PASSWORD}\nkeystore.password = {STORE_PASSWORD}\n"
        f"key.password = {KEY_PASSWORD}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    (issue,) = caught.value.issues
    assert issue.setting == "A.ssl.truststore.location"
    assert issue.origin is not None and issue.origin.line == 6
    assert WRONG_PASSWORD not in str(caught.value)
