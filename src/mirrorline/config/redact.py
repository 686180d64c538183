"""Keeping secrets out of every rendering of the configuration.

A value is secret when its key looks like one (passwords, JAAS entries,
private keys, tokens, ...) or when it came from a config provider such as
`${env:...}` or `${file:...}`: users put values behind providers precisely
because they do not want them in files, so Mirrorline does not print them
either. Every place that shows a value (model `repr`, JSON, messages,
`config check`) goes through `shown`.
"""

from __future__ import annotations

__all__ = ["REDACTED", "is_secret_key", "shown"]

#: What is printed instead of a secret value.
REDACTED = "[hidden]"

_SECRET_WORDS = ("password", "secret", "jaas", "credential", "passphrase")
_SECRET_ENDINGS = (".key", "key.pem", "ssl_key", "private.key", "sasl.oauthbearer.config")


def is_secret_key(key: str) -> bool:
    """True if a setting with this name holds a secret, whatever its prefix."""
    name = key.lower()
    if any(word in name for word in _SECRET_WORDS):
        return True
    if "token" in name and "endpoint" not in name:
        return True
    return name.endswith(_SECRET_ENDINGS)


def shown(value: object, *, secret: bool) -> str:
    """How a value may appear in output and messages: quoted, or `[hidden]`."""
    if secret:
        return REDACTED
    return repr(value) if isinstance(value, str) else str(value)
