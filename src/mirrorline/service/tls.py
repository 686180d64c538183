"""The service's own certificate: checked at start, then handed to uvicorn.

uvicorn loads the certificate chain and key itself, on its serving thread,
where a mistake would surface as a stack trace after the service seemed to
start. So `check` loads them first, the same way, and turns every mistake
into a `ConfigError` naming the setting and what to do. A renewed
certificate is read at the next start.
"""

from __future__ import annotations

import ssl
from typing import Any, NoReturn

from mirrorline.config.errors import ConfigError, ConfigIssue
from mirrorline.config.service_security import TlsSettings

__all__ = ["check", "uvicorn_options"]


def check(tls: TlsSettings) -> None:
    """Load the chain and key as the server will; `ConfigError` saying why they do not."""
    for key, path, what in (
        ("service.tls.certificate", tls.certificate, "certificate chain"),
        ("service.tls.key", tls.key, "private key"),
    ):
        try:
            with path.open("rb") as handle:
                handle.read(1)
        except OSError as exc:
            _fail(key, f"cannot read the {what} file {path}: {exc.strerror or exc}", "fix the path")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(
            str(tls.certificate), str(tls.key), password=tls.key_password or _no_password
        )
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            _fail("service.tls.key", "is not the key of service.tls.certificate", "pair them")
        if tls.key_password and b"ENCRYPTED" in tls.key.read_bytes():
            _fail("service.tls.key.password", "does not decrypt service.tls.key", "correct it")
        _fail(
            "service.tls.certificate",
            f"cannot load the chain {tls.certificate} and its key: {exc.reason or 'not PEM'}",
            "both files must be PEM: the certificate (then its intermediates) and its key",
        )
    except _Encrypted:
        _fail("service.tls.key.password", "the key is encrypted", "set its password")


def uvicorn_options(tls: TlsSettings | None) -> dict[str, Any]:
    """The `uvicorn.Config` arguments that make it serve HTTPS with `tls` (none: HTTP)."""
    if tls is None:
        return {}
    return {
        "ssl_certfile": str(tls.certificate),
        "ssl_keyfile": str(tls.key),
        "ssl_keyfile_password": tls.key_password or None,
    }


class _Encrypted(Exception):
    pass


def _no_password() -> str:
    raise _Encrypted  # instead of OpenSSL asking on the terminal


def _fail(key: str, message: str, hint: str) -> NoReturn:
    raise ConfigError([ConfigIssue(message, hint=hint, key=key)])
