"""Who is calling the service, and what they may do: authentication and roles over HTTP.

With a users file (`service.auth.users.file`, HTTP basic) or a tokens file
(`service.auth.tokens.file`, bearer tokens), `protect(app, authenticator)`
puts `AuthMiddleware` in front of every request the app serves: the API, the
UI's files, `/`, `/health`, `/metrics`, `/openapi.json` and `/docs`. A request
without valid credentials is answered 401 with a `WWW-Authenticate` challenge
for each scheme configured (so a browser asks for a user and a password) and
a JSON error like the API's others; it never reaches a route.

What an authenticated principal may do is its role's business: every route
depends on `require(role)` (`viewer` for everything the service serves today;
operations will need `operator`), which answers 403 to a principal whose role
falls short. Without authentication, `require` lets everybody through.

Checking a password costs an scrypt hash (tens of milliseconds and 32 MiB),
so it runs on a worker thread, at most two at a time, and a success is
remembered, under a key only this process knows, until the users file
changes: the UI's requests every few seconds cost nothing. The files are read
again when they change (a new user needs no restart); a file that no longer
reads keeps the principals read before, with an error in the log.

Failures are logged with the client's address and the scheme, never with the
name given (it is sometimes a password typed in the wrong field) or a secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from mirrorline.service.credentials import (
    CredentialsFileError,
    Entry,
    Kind,
    Role,
    grants,
    hash_password,
    read_entries,
    verify_password,
    verify_token,
)
from mirrorline.service.models import ErrorDoc

__all__ = [
    "ANONYMOUS",
    "AuthMiddleware",
    "Authenticator",
    "Forbidden",
    "Principal",
    "Unauthenticated",
    "protect",
    "require",
]

log = logging.getLogger(__name__)

REALM = "Mirrorline"
RELOAD_CHECK_S = 1.0
_CONCURRENT_HASHES = 2
_REMEMBERED = 1024


@dataclass(frozen=True)
class Principal:
    """Who made a request: a user (`basic`), a token (`bearer`), or anybody (`none`)."""

    name: str
    role: Role
    scheme: str


#: The principal of every request when the service does not authenticate.
ANONYMOUS = Principal("anonymous", "operator", "none")


class Unauthenticated(Exception):
    """No credentials, or wrong ones (401). The reason never quotes them."""


class Forbidden(Exception):
    """An authenticated principal whose role falls short (403)."""

    def __init__(self, principal: Principal, needed: Role) -> None:
        super().__init__(
            f"{principal.name} has the {principal.role} role; this needs the {needed} role"
        )


class _WatchedFile:
    """A users or tokens file, read again when it changes."""

    def __init__(self, path: Path, kind: Kind, setting: str) -> None:
        self.path, self.kind, self.setting = path, kind, setting
        self._stamp = self._stat()
        self.entries = read_entries(path, kind, setting)  # at start, a mistake stops the service
        self._checked = time.monotonic()

    def current(self) -> dict[str, Entry]:
        if time.monotonic() - self._checked < RELOAD_CHECK_S:
            return self.entries
        self._checked = time.monotonic()
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self.entries = read_entries(self.path, self.kind, self.setting)
                log.info("service: read the %s file %s again", self.kind, self.path)
            except CredentialsFileError as exc:
                log.error("service: %s; the principals read before still apply", exc)
        return self.entries

    def _stat(self) -> tuple[int, int]:
        try:
            info = self.path.stat()
        except OSError:
            return (0, -1)
        return (info.st_mtime_ns, info.st_size)


class Authenticator:
    """Checks the `Authorization` header of a request against the users and tokens files."""

    def __init__(self, users_file: Path | None, tokens_file: Path | None) -> None:
        """Reads the files now: `CredentialsFileError` when one cannot be used."""
        self._users = (
            _WatchedFile(users_file, "users", "service.auth.users.file") if users_file else None
        )
        self._tokens = (
            _WatchedFile(tokens_file, "tokens", "service.auth.tokens.file") if tokens_file else None
        )
        self._lock = threading.Lock()
        self._key = secrets.token_bytes(32)
        self._remembered: dict[bytes, Principal] = {}
        self._hashing = threading.BoundedSemaphore(_CONCURRENT_HASHES)
        self._decoy: str | None = None

    @property
    def challenges(self) -> list[str]:
        """The `WWW-Authenticate` values of a 401: one per scheme configured."""
        found = []
        if self._users is not None:
            found.append(f'Basic realm="{REALM}", charset="UTF-8"')
        if self._tokens is not None:
            found.append(f'Bearer realm="{REALM}"')
        return found

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal `authorization` proves, or `Unauthenticated` saying why not."""
        if not authorization or not authorization.strip():
            raise Unauthenticated("authentication required")
        scheme, _, credentials = authorization.strip().partition(" ")
        scheme = scheme.lower()
        if scheme == "basic" and self._users is not None:
            return self._basic(credentials.strip())
        if scheme == "bearer" and self._tokens is not None:
            return self._bearer(credentials.strip())
        accepted = " or ".join(c.split(" ")[0] for c in self.challenges)
        raise Unauthenticated(f"unsupported authorization scheme: use {accepted}")

    def _basic(self, credentials: str) -> Principal:
        assert self._users is not None
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthenticated("malformed basic credentials") from None
        name, colon, password = decoded.partition(":")
        if not colon:
            raise Unauthenticated("malformed basic credentials")
        entry = self._users.current().get(name)
        stored = entry.hash if entry is not None else self._decoy_hash()
        key = hmac.digest(self._key, f"{name}\0{password}\0{stored}".encode(), hashlib.sha256)
        with self._lock:
            known = self._remembered.get(key)
        if known is not None:
            return known
        with self._hashing:
            valid = verify_password(password, stored)
        if entry is None or not valid:
            raise Unauthenticated("wrong user name or password")
        principal = Principal(entry.name, entry.role, "basic")
        with self._lock:
            if len(self._remembered) >= _REMEMBERED:
                self._remembered.clear()
            self._remembered[key] = principal
        return principal

    def _bearer(self, token: str) -> Principal:
        assert self._tokens is not None
        found = None
        for entry in self._tokens.current().values():  # every one, whichever matches
            if verify_token(token, entry.hash):
                found = entry
        if found is None:
            raise Unauthenticated("unknown token")
        return Principal(found.name, found.role, "bearer")

    def _decoy_hash(self) -> str:
        """A hash to check unknown users against, so that they take as long as known ones."""
        if self._decoy is None:
            self._decoy = hash_password(secrets.token_urlsafe(16))
        return self._decoy


class AuthMiddleware:
    """Authenticates every HTTP request before the app sees it (see the module)."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization")
        try:
            principal = await run_in_threadpool(self.authenticator.authenticate, header)
        except Unauthenticated as exc:
            if header:
                client = scope.get("client") or ("unknown", 0)
                scheme = header.strip().partition(" ")[0].lower()[:20]
                log.warning("service: refused %s credentials from %s: %s", scheme, client[0], exc)
            response = _unauthorized(str(exc), self.authenticator.challenges)
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


def require(role: Role) -> Callable[[Request], Principal]:
    """A dependency letting through principals whose role grants `role` (else 403)."""

    def dependency(request: Request) -> Principal:
        authenticator = getattr(request.app.state, "authenticator", None)
        if authenticator is None:
            return ANONYMOUS
        principal = request.scope.get("state", {}).get("principal")
        if not isinstance(principal, Principal):
            raise Unauthenticated("authentication required")
        if not grants(principal.role, role):
            raise Forbidden(principal, role)
        return principal

    dependency.__name__ = f"require_{role}"
    return dependency


def protect(app: FastAPI, authenticator: Authenticator | None) -> None:
    """Make `app` authenticate every request with `authenticator` (None: nobody is asked)."""
    app.state.authenticator = authenticator
    if authenticator is None:
        return
    app.add_middleware(AuthMiddleware, authenticator=authenticator)

    @app.exception_handler(Unauthenticated)
    async def unauthenticated(_request: Request, exc: Unauthenticated) -> JSONResponse:
        return _unauthorized(str(exc), authenticator.challenges)

    @app.exception_handler(Forbidden)
    async def forbidden(_request: Request, exc: Forbidden) -> JSONResponse:
        return JSONResponse(ErrorDoc(error=str(exc)).model_dump(), status_code=403)


def _unauthorized(message: str, challenges: list[str]) -> JSONResponse:
    response = JSONResponse(ErrorDoc(error=message).model_dump(), status_code=401)
    for challenge in challenges:
        response.headers.append("WWW-Authenticate", challenge)
    return response
