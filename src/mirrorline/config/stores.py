"""Java trust and key stores (JKS, PKCS12) as PEM text for librdkafka.

MM2 files point Java clients at `ssl.truststore.location` and
`ssl.keystore.location`, JKS by default. librdkafka cannot read JKS, nor a
PKCS12 truststore, but takes PEM text: `ssl.ca.pem` for trusted
certificates, `ssl.certificate.pem` and `ssl.key.pem` for the client's own
certificate chain and private key. This module opens a store with its
password and returns that text, held in memory only: the private key is never
written to disk.

Like Java's clients (whose `JKS` and `PKCS12` key stores each read both
formats), the file's contents decide how it is read, not the declared type;
the type only names the store in messages. JKS is read by
`mirrorline.config.jks`, PKCS12 by `cryptography`.

A truststore yields every certificate it holds (trusted entries, and the
first certificate of any key entry, as Java trusts them). A keystore must
hold exactly one private key; `ssl.key.password` opens it when it differs
from the store's password (JKS allows that).

Results are cached in the process by path, size, modification time and a
digest of the passwords, since every client role of every flow asks again.
Errors are `StoreError`s whose messages name the file and never quote a
password or key material.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from mirrorline.config import der
from mirrorline.config.jks import JksError, JksPasswordError, JksStore, is_jks, read_jks

__all__ = ["ClientIdentity", "StoreError", "client_identity", "trusted_certificates"]

Role = Literal["truststore", "keystore"]
T = TypeVar("T")

_DATA = "1.2.840.113549.1.7.1"
_KEY_BAGS = ("1.2.840.113549.1.12.10.1.1", "1.2.840.113549.1.12.10.1.2")


class StoreError(ValueError):
    """A store cannot be used: `str()` says why, `hint` what to do."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True, repr=False)
class ClientIdentity:
    """A keystore's certificate chain (PEM, leaf first) and private key (PKCS#8 PEM)."""

    certificate_chain: str
    private_key: str = field(repr=False)

    def __repr__(self) -> str:
        return "ClientIdentity(<certificate chain>, <private key>)"


def trusted_certificates(path: str, password: str | None, kind: str = "JKS") -> str:
    """Every certificate of truststore `path`, as concatenated PEM (`ssl.ca.pem`).

    `password` may be None: a JKS truststore then opens without its integrity
    check, as in Java.
    """
    store = _Store(path, "truststore", kind)
    return _cached(store, (password,), lambda data: store.certificates(data, password))


def client_identity(
    path: str, password: str | None, key_password: str | None = None, kind: str = "JKS"
) -> ClientIdentity:
    """The single private key of keystore `path` and its certificate chain.

    `key_password` opens the key entry; it defaults to the store's password.
    """
    store = _Store(path, "keystore", kind)
    if password is None:
        raise store.error("has no password", "set ssl.keystore.password (Java clients need it too)")
    key_password = password if key_password is None else key_password
    return _cached(
        store, (password, key_password), lambda data: store.identity(data, password, key_password)
    )


_cache: dict[tuple[object, ...], object] = {}
_cache_lock = threading.Lock()
_CACHE_SIZE = 64  # stores in use at once; replaced ones fall out eventually


def _cached(store: _Store, passwords: tuple[str | None, ...], read: Callable[[bytes], T]) -> T:
    data, stat = store.read()
    digest = hashlib.sha256(repr(passwords).encode("utf-8", "surrogatepass")).hexdigest()
    key = (store.role, os.path.abspath(store.path), stat.st_size, stat.st_mtime_ns, digest)
    with _cache_lock:
        if key in _cache:
            return _cache[key]  # type: ignore[return-value]
    result = read(data)
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.clear()
        _cache[key] = result
    return result


@dataclass(frozen=True)
class _Store:
    path: str
    role: Role
    kind: str

    @property
    def password_setting(self) -> str:
        return f"ssl.{self.role}.password"

    def error(self, problem: str, hint: str) -> StoreError:
        return StoreError(f"{self.kind} {self.role} {self.path} {problem}", hint)

    def read(self) -> tuple[bytes, os.stat_result]:
        try:
            with open(self.path, "rb") as handle:
                return handle.read(), os.fstat(handle.fileno())
        except FileNotFoundError:
            problem, hint = "does not exist", "check the path: the file must exist on this host"
        except IsADirectoryError:
            problem, hint = "is a directory", f"point ssl.{self.role}.location at the store file"
        except PermissionError:
            problem, hint = "is not readable", "let the user running Mirrorline read it"
        except OSError as exc:
            problem, hint = f"cannot be read ({exc.strerror})", "check the file"
        raise self.error(problem, hint)

    # -- truststores -------------------------------------------------------------

    def certificates(self, data: bytes, password: str | None) -> str:
        if is_jks(data):
            store = self._jks(data, password)
            found = [*store.certificates, *(key.chain[0] for key in store.keys if key.chain)]
        else:
            content = self._pkcs12(data, password)
            certs = [] if content.cert is None else [content.cert]
            certs.extend(content.additional_certs)
            found = [c.certificate.public_bytes(serialization.Encoding.DER) for c in certs]
        if not found:
            raise self.error(
                "holds no certificate",
                "import the CA certificate that signed the brokers' certificates "
                "(keytool -importcert)",
            )
        return _pem(self._x509(der_bytes) for der_bytes in dict.fromkeys(found))

    # -- keystores ---------------------------------------------------------------

    def identity(self, data: bytes, password: str, key_password: str) -> ClientIdentity:
        if is_jks(data):
            keys = self._jks(data, password).keys
            self._one_key(len(keys), [key.alias for key in keys])
            try:
                key_der = keys[0].private_key(key_password)
            except JksPasswordError:
                raise self.error(
                    f"holds key {keys[0].alias!r}, which ssl.key.password does not open",
                    "set ssl.key.password to the key's password (by default the store's)",
                ) from None
            except JksError as exc:
                raise self.error(f"cannot be read: {exc}", "check the file") from None
            chain = [self._x509(c) for c in keys[0].chain]
        else:
            content = self._pkcs12(data, password)
            found = 0 if content.key is None else 1
            self._one_key(max(_pkcs12_key_count(data) or 0, found), [])
            chain = []
            if content.cert is not None:
                others = [c.certificate for c in content.additional_certs]
                chain = _ordered_chain(content.cert.certificate, others)
            assert content.key is not None  # _one_key refused a store without one
            key_der = content.key.private_bytes(
                serialization.Encoding.DER,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        if not chain:
            raise self.error(
                "holds a private key without its certificate",
                "import the signed certificate chain for the key (keytool -importcert)",
            )
        try:
            key = serialization.load_der_private_key(key_der, password=None)
        except (ValueError, TypeError):
            raise self.error("holds a private key that cannot be read", "check the file") from None
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")
        return ClientIdentity(_pem(chain), key_pem)

    def _one_key(self, count: int, aliases: list[str]) -> None:
        if count == 0:
            raise self.error(
                "holds no private key",
                "a keystore holds the client's key and certificate; trusted certificates "
                "belong in ssl.truststore.location",
            )
        if count > 1:
            names = f" ({', '.join(sorted(aliases))})" if aliases else ""
            raise self.error(
                f"holds {count} private keys{names}; librdkafka uses exactly one",
                "keep only the client's key in this keystore (keytool -delete -alias NAME)",
            )

    # -- formats -----------------------------------------------------------------

    def _jks(self, data: bytes, password: str | None) -> JksStore:
        try:
            return read_jks(data, password)
        except JksPasswordError:
            raise self.error(
                f"does not open with {self.password_setting}",
                f"set {self.password_setting} to the store's password",
            ) from None
        except JksError as exc:
            raise self.error(f"cannot be read: {exc}", "check the file") from None

    def _pkcs12(self, data: bytes, password: str | None) -> pkcs12.PKCS12KeyAndCertificates:
        if _pkcs12_key_count(data) is None:
            raise self.error(
                "is neither a JKS nor a PKCS12 store",
                f"for a PEM file set ssl.{self.role}.type = PEM; otherwise check the path",
            )
        secret = None if password is None else password.encode("utf-8")
        try:
            return pkcs12.load_pkcs12(data, secret)
        except ValueError:
            if password is None:
                raise self.error("needs a password", f"set {self.password_setting}") from None
            raise self.error(
                f"does not open with {self.password_setting}",
                f"set {self.password_setting} to the store's password",
            ) from None

    @staticmethod
    def _x509(der_bytes: bytes) -> x509.Certificate:
        return x509.load_der_x509_certificate(der_bytes)


def _pem(certificates: Iterable[x509.Certificate]) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in certificates)


def _ordered_chain(
    leaf: x509.Certificate, others: list[x509.Certificate]
) -> list[x509.Certificate]:
    """`leaf` and then each issuer found among `others`, as a TLS peer sends them."""
    chain = [leaf]
    pool = [c for c in others if c != leaf]
    while chain[-1].issuer != chain[-1].subject:
        issuer = next((c for c in pool if c.subject == chain[-1].issuer), None)
        if issuer is None:
            break
        chain.append(issuer)
        pool.remove(issuer)
    return chain


def _pkcs12_key_count(data: bytes) -> int | None:
    """How many key bags a PKCS12 file shows unencrypted; None if it is not PKCS12.

    keytool and OpenSSL keep keys in plain (not password-encrypted) content,
    each key shrouded on its own, so counting those bags counts the keys.
    """
    try:
        pfx = der.one(data).children()
        content_type = der.object_identifier(pfx[1].children()[0])
        if pfx[0].tag != 0x02 or content_type != _DATA:
            return None
        safe = der.one(pfx[1].children()[1].children()[0].content)
        count = 0
        for info in safe.children():
            parts = info.children()
            if der.object_identifier(parts[0]) != _DATA:
                continue  # password-encrypted content: certificates
            bags = der.one(parts[1].children()[0].content).children()
            count += sum(der.object_identifier(b.children()[0]) in _KEY_BAGS for b in bags)
        return count
    except (der.DerError, IndexError):
        return None
