"""Mirrorline's service in a test: configurations with aliases of their own, a running
service on a free port, and reading its JSON, over HTTP or HTTPS, with or without
credentials (`Caller`); a protected service's certificate, users and tokens (`Protection`)."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirrorline.certificates import CertificateAuthority, write_private
from mirrorline.config import load_config
from mirrorline.process import free_port
from mirrorline.service.credentials import (
    Entry,
    check_role,
    hash_password,
    hash_token,
    save_entry,
)
from mirrorline.service.server import Service

# What every test configuration sets: single-node clusters, quick loops, no heartbeats
# (a heartbeats topic left on a shared cluster is replicated by every later flow out of it).
COMMON = """\
replication.factor = 1
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
refresh.topics.interval.seconds = 1
sync.topic.configs.interval.seconds = 1
emit.metrics.interval.seconds = 1
emit.heartbeats.enabled = false
"""


def own_aliases(*roles: str) -> list[str]:
    """Aliases unique to one test (`src1a2b3c`): its flows and samples are its own, even
    on clusters every test shares."""
    suffix = uuid.uuid4().hex[:6]
    return [f"{role}{suffix}" for role in roles]


def write_aliased_config(path: Path, clusters: dict[str, Any], body: str) -> Path:
    """A properties file naming `clusters` (alias -> DevCluster) plus `body`."""
    lines = [f"clusters = {', '.join(clusters)}"]
    lines += [f"{alias}.bootstrap.servers = {c.bootstrap_servers}" for alias, c in clusters.items()]
    path.write_text("\n".join(lines) + "\n" + COMMON + body)
    return path


@contextmanager
def running_service(config: Path, port: int | None = None) -> Iterator[Service]:
    """`mirrorline service` on `config`, listening on 127.0.0.1 (a free port by default)."""
    service = Service(load_config(config), host="127.0.0.1", port=port or free_port())
    service.start()
    try:
        service.serve_in_thread()
        yield service
    finally:
        service.close()


@dataclass(frozen=True)
class Caller:
    """Who calls a service in a test: the CA it trusts (HTTPS) and its credentials."""

    ca: Path | None = None
    user: tuple[str, str] | None = None  # name, password: HTTP basic
    token: str | None = None  # bearer

    def with_user(self, name: str, password: str) -> Caller:
        return Caller(self.ca, (name, password), None)

    def with_token(self, token: str) -> Caller:
        return Caller(self.ca, None, token)

    def headers(self) -> dict[str, str]:
        if self.token is not None:
            return {"Authorization": f"Bearer {self.token}"}
        if self.user is not None:
            pair = base64.b64encode(":".join(self.user).encode()).decode()
            return {"Authorization": f"Basic {pair}"}
        return {}

    def context(self) -> ssl.SSLContext | None:
        return ssl.create_default_context(cafile=str(self.ca)) if self.ca else None


ANYBODY = Caller()


def fetch(url: str, caller: Caller = ANYBODY) -> tuple[int, dict[str, list[str]], bytes]:
    """GET `url`: (status, headers by lower-case name, body); 4xx and 5xx included."""
    request = urllib.request.Request(url, headers=caller.headers())
    try:
        with urllib.request.urlopen(request, timeout=10, context=caller.context()) as response:
            return response.status, _headers(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, _headers(exc.headers), exc.read()


def _headers(message: Any) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, value in message.items():
        found.setdefault(name.lower(), []).append(value)
    return found


def get(url: str, caller: Caller = ANYBODY) -> tuple[int, Any]:
    """GET a JSON document: (status, document)."""
    status, _, body = fetch(url, caller)
    return status, json.loads(body)


def polled_sum(url: str, caller: Caller = ANYBODY) -> float | None:
    """The `sum` of the metric document at `url`, for a wait's condition: None while the
    service does not know it yet or does not answer within the request's timeout (it is
    polled while a flow replicates on the same two cores; the wait's deadline bounds it)."""
    try:
        status, doc = get(url, caller)
    except TimeoutError:
        return None
    return doc.get("sum") if status == 200 else None


def get_ok(url: str, caller: Caller = ANYBODY) -> Any:
    status, doc = get(url, caller)
    assert status == 200, f"GET {url}: {status} {doc}"
    return doc


def get_text(url: str, caller: Caller = ANYBODY) -> str:
    status, _, body = fetch(url, caller)
    assert status == 200, f"GET {url}: {status} {body[:200]!r}"
    return body.decode()


@dataclass
class Protection:
    """A service's certificate (from a throw-away CA), users and tokens files, in `directory`.

    `settings()` are the lines that make a service use them; `caller` trusts the CA."""

    directory: Path
    ca: CertificateAuthority = field(default_factory=CertificateAuthority.create)
    tokens: dict[str, str] = field(default_factory=dict)  # name -> the token itself

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "ca.pem").write_bytes(self.ca.cert_pem)
        pair = self.ca.issue("service")
        (self.directory / "service.pem").write_bytes(pair.cert_pem)
        write_private(self.directory / "service-key.pem", pair.key_pem)

    @property
    def users_file(self) -> Path:
        return self.directory / "users"

    @property
    def tokens_file(self) -> Path:
        return self.directory / "tokens"

    @property
    def caller(self) -> Caller:
        return Caller(ca=self.directory / "ca.pem")

    def add_user(self, name: str, password: str, role: str = "viewer") -> Caller:
        save_entry(self.users_file, "users", Entry(name, check_role(role), hash_password(password)))
        return self.caller.with_user(name, password)

    def add_token(self, name: str, token: str, role: str = "viewer") -> Caller:
        save_entry(self.tokens_file, "tokens", Entry(name, check_role(role), hash_token(token)))
        self.tokens[name] = token
        return self.caller.with_token(token)

    def settings(self, *, tls: bool = True) -> str:
        lines = [f"service.auth.users.file = {self.users_file}"]
        if self.tokens_file.exists():
            lines.append(f"service.auth.tokens.file = {self.tokens_file}")
        if tls:
            lines += [
                f"service.tls.certificate = {self.directory / 'service.pem'}",
                f"service.tls.key = {self.directory / 'service-key.pem'}",
            ]
        return "\n".join(lines) + "\n"
