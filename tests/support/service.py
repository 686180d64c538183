"""Mirrorline's service in a test: configurations with aliases of their own, a running
service on a free port, and reading its JSON."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mirrorline.config import load_config
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def get(url: str) -> tuple[int, Any]:
    """GET a JSON document: (status, document)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get_ok(url: str) -> Any:
    status, doc = get(url)
    assert status == 200, f"GET {url}: {status} {doc}"
    return doc


def get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()
