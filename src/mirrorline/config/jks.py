"""Reading Java's JKS key stores without a JVM.

A JKS file (the Java clients' default `ssl.*.type`) is a big-endian stream:
the magic `0xFEEDFEED`, a version (1, or 2 when each certificate carries its
type name), an entry count, the entries, and a 20-byte SHA-1 digest of the
password (two bytes per Java `char`), the words "Mighty Aphrodite" and every
byte before the digest. Each entry starts with a tag, its alias and a
timestamp:

* tag 2, a trusted certificate: one DER certificate;
* tag 1, a private key: the key as a DER `EncryptedPrivateKeyInfo` under
  Sun's own key protection (`1.3.6.1.4.1.42.2.17.1.1`), then its certificate
  chain, leaf first.

Sun's key protection is a SHA-1 key stream: the protected bytes are a 20-byte
salt, the key XORed with `SHA1(pw + salt)`, `SHA1(pw + previous)`, ..., and a
check digest `SHA1(pw + key)` that tells a wrong key password. The key inside
is a plain PKCS#8 `PrivateKeyInfo`.

keytool of any Java version writes this format with `-storetype JKS`. JCEKS
files (`0xCECECECE`) are refused.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from dataclasses import dataclass, field

from mirrorline.config import der

__all__ = [
    "JksError",
    "JksFormatError",
    "JksKey",
    "JksPasswordError",
    "JksStore",
    "is_jks",
    "read_jks",
]

_MAGIC = 0xFEEDFEED
_JCEKS_MAGIC = 0xCECECECE
_WHITENER = b"Mighty Aphrodite"
_KEY_PROTECTOR = "1.3.6.1.4.1.42.2.17.1.1"
_DIGEST = 20
_PRIVATE_KEY = 1
_TRUSTED_CERTIFICATE = 2


class JksError(ValueError):
    """The store could not be read."""


class JksFormatError(JksError):
    """The bytes are not a JKS store (or a damaged one)."""


class JksPasswordError(JksError):
    """A password does not open the store or one of its keys."""


@dataclass(frozen=True, repr=False)
class JksKey:
    """A private key entry: its alias, protected key and DER certificate chain."""

    alias: str
    chain: tuple[bytes, ...]
    protected: bytes = field(repr=False)

    def __repr__(self) -> str:
        return f"JksKey({self.alias!r}, {len(self.chain)} certificates)"

    def private_key(self, password: str) -> bytes:
        """The key as unencrypted PKCS#8 DER; `JksPasswordError` for a wrong password."""
        return _recover_key(self.protected, password)


@dataclass(frozen=True)
class JksStore:
    """What a JKS store holds: trusted certificates (DER) and private key entries."""

    certificates: tuple[bytes, ...]
    keys: tuple[JksKey, ...]


def is_jks(data: bytes) -> bool:
    """True when `data` starts like a JKS store."""
    return len(data) >= 4 and struct.unpack(">I", data[:4])[0] == _MAGIC


def read_jks(data: bytes, password: str | None) -> JksStore:
    """Read a JKS store, checking its integrity digest unless `password` is None.

    Java also reads a store without a password (truststores often have none)
    and then skips the check; so does this.
    """
    reader = _Reader(data)
    magic = reader.uint()
    if magic == _JCEKS_MAGIC:
        raise JksFormatError("a JCEKS store, which Mirrorline cannot read; convert it to PKCS12")
    if magic != _MAGIC:
        raise JksFormatError("not a JKS store")
    version = reader.uint()
    if version not in (1, 2):
        raise JksFormatError(f"unknown JKS version {version}")
    certificates: list[bytes] = []
    keys: list[JksKey] = []
    for _ in range(reader.uint()):
        tag = reader.uint()
        alias = reader.utf()
        reader.take(8)  # creation time
        if tag == _TRUSTED_CERTIFICATE:
            certificates.append(reader.certificate(version))
        elif tag == _PRIVATE_KEY:
            protected = reader.take(reader.uint())
            chain = tuple(reader.certificate(version) for _ in range(reader.uint()))
            keys.append(JksKey(alias, chain, protected))
        else:
            raise JksFormatError(f"entry {alias!r} has unknown tag {tag}")
    body_end = reader.position
    expected = reader.take(_DIGEST)
    if reader.position != len(data):
        raise JksFormatError("bytes after the integrity digest")
    if password is not None:
        digest = hashlib.sha1(_password_bytes(password) + _WHITENER + data[:body_end]).digest()
        if not hmac.compare_digest(digest, expected):
            raise JksPasswordError("the password is wrong (or the file is damaged)")
    return JksStore(tuple(certificates), tuple(keys))


def _recover_key(protected: bytes, password: str) -> bytes:
    try:
        info = der.one(protected).children()
        algorithm = der.object_identifier(info[0].children()[0])
        encrypted = info[1]
    except (der.DerError, IndexError):
        raise JksFormatError("a private key entry is damaged") from None
    if algorithm != _KEY_PROTECTOR or encrypted.tag != der.OCTET_STRING:
        raise JksFormatError(f"a private key is protected with {algorithm}, not Sun's JKS scheme")
    data = encrypted.content
    if len(data) <= 2 * _DIGEST:
        raise JksFormatError("a private key entry is damaged")
    salt, body, check = data[:_DIGEST], data[_DIGEST:-_DIGEST], data[-_DIGEST:]
    secret = _password_bytes(password)
    stream = bytearray()
    digest = salt
    while len(stream) < len(body):
        digest = hashlib.sha1(secret + digest).digest()
        stream.extend(digest)
    key = bytes(a ^ b for a, b in zip(body, stream, strict=False))
    if not hmac.compare_digest(hashlib.sha1(secret + key).digest(), check):
        raise JksPasswordError("the key password is wrong")
    return key


def _password_bytes(password: str) -> bytes:
    # Java hashes each UTF-16 char of the password as two big-endian bytes.
    return password.encode("utf-16-be", "surrogatepass")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def take(self, count: int) -> bytes:
        end = self.position + count
        if count < 0 or end > len(self.data):
            raise JksFormatError("the file ends too early")
        chunk = self.data[self.position : end]
        self.position = end
        return chunk

    def uint(self) -> int:
        value: int = struct.unpack(">I", self.take(4))[0]
        return value

    def utf(self) -> str:
        (length,) = struct.unpack(">H", self.take(2))
        # Java's modified UTF-8; aliases are only shown, so plain UTF-8 is close enough.
        return self.take(length).decode("utf-8", "replace")

    def certificate(self, version: int) -> bytes:
        if version == 2:
            kind = self.utf()
            if kind != "X.509":
                raise JksFormatError(f"a {kind} certificate, not X.509")
        return self.take(self.uint())
