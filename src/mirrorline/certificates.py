"""A private certificate authority, for secured dev clusters and tests.

`mirrorline dev up --security sasl_ssl|mtls` needs TLS certificates its
brokers present and its clients trust (and, for mtls, certificates its users
log in with), and the service's TLS tests need a server certificate. All
come from a throw-away authority made at start: an RSA key and a self-signed
CA certificate, which then signs one certificate per server or user, valid
for the names clients connect to (``localhost`` and ``127.0.0.1`` by
default). Nothing here is meant for production certificates.

Private keys are written with mode 0600 (`write_private`); they are never
logged.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateAuthority", "KeyPair", "write_private"]

_VALID_FOR = datetime.timedelta(days=365)
_KEY_SIZE = 2048


@dataclass(frozen=True, repr=False)
class KeyPair:
    """A certificate and its private key, both PEM. `repr` hides the key."""

    cert_pem: bytes
    key_pem: bytes = field(repr=False)

    def __repr__(self) -> str:
        return "KeyPair(<certificate>, <private key>)"

    def write(self, cert_path: Path, key_path: Path) -> None:
        """Write the certificate (world-readable) and the key (owner only)."""
        cert_path.write_bytes(self.cert_pem)
        write_private(key_path, self.key_pem)

    def combined_pem(self) -> bytes:
        """Key and certificate in one PEM file (a Kafka broker's PEM keystore)."""
        return self.key_pem + self.cert_pem

    def pkcs12(self, name: str, password: str) -> bytes:
        """Key and certificate as a PKCS12 keystore under `password` (a Java client's)."""
        key = serialization.load_pem_private_key(self.key_pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("the key is not an RSA key")
        return pkcs12.serialize_key_and_certificates(
            name.encode(),
            key,
            x509.load_pem_x509_certificate(self.cert_pem),
            None,
            serialization.BestAvailableEncryption(password.encode()),
        )


class CertificateAuthority:
    """A self-signed CA that issues server certificates."""

    def __init__(self, key: rsa.RSAPrivateKey, certificate: x509.Certificate) -> None:
        self._key = key
        self._certificate = certificate

    def __repr__(self) -> str:
        return f"CertificateAuthority({self._certificate.subject.rfc4514_string()})"

    @classmethod
    def create(cls, name: str = "Mirrorline dev CA") -> CertificateAuthority:
        key = rsa.generate_private_key(public_exponent=65537, key_size=_KEY_SIZE)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = _now()
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID_FOR)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        return cls(key, certificate)

    @classmethod
    def load(cls, cert_pem: bytes, key_pem: bytes) -> CertificateAuthority:
        """The authority saved earlier as `cert_pem` and `key_pem`."""
        key = serialization.load_pem_private_key(key_pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("the CA key is not an RSA key")
        return cls(key, x509.load_pem_x509_certificate(cert_pem))

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate: what clients trust."""
        return self._certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        """The CA's private key (PKCS#8, unencrypted): store it with `write_private`."""
        return _key_pem(self._key)

    def issue(self, common_name: str, hosts: Sequence[str] = ("localhost", "127.0.0.1")) -> KeyPair:
        """A server (and client) certificate for `hosts`, signed by this CA."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=_KEY_SIZE)
        now = _now()
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self._certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID_FOR)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        return KeyPair(certificate.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def write_private(path: Path, data: bytes | str) -> None:
    """Write a file only its owner can read (keys, passwords, users files).

    It is written beside its place, mode 0600 from the start, and then moved
    there: never briefly readable by others, never seen half-written.
    """
    raw = data.encode() if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(raw)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
