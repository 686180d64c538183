"""Remote querying: services advertise themselves in Kafka, and gateways ask them.

Every service writes an advertisement into each cluster it reports on, every
`ADVERTISE_S`: its id, protocol, host, port, base path and the clusters it
reports (`mirrorline.services.internal`, compacted, one record per service id;
JSON with `version` 1). A service configured with `service.remote.clusters`
reads the advertisements in those clusters and, when asked for replications,
asks each advertised service for its own (`/v2/replications?scope=local`, so
that gateways never ask each other in circles), in parallel, each within
`remote_http.TIMEOUT_S`. A service that does not answer is listed as unreachable, with the
replications it served last time marked so, and the others answer all the
same. Requests about a replication whose target only a remote service reports
(its metrics, its groups) are forwarded to that service.

A service that stops keeps its advertisement: gateways then show it as
unreachable, which is what an operator must see. Advertisements not renewed
for `FORGET_AFTER_MS` (a decommissioned service) are ignored.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from mirrorline.formats import json_record
from mirrorline.internal_topic import COMPACTED, InternalTopic
from mirrorline.kafka import ClusterClients, read_to_end
from mirrorline.service.models import ReplicationDoc, ReplicationsDoc, ServiceDoc
from mirrorline.service.remote_http import RemoteAccess, RemoteFailed

log = logging.getLogger(__name__)

SERVICES_TOPIC = "mirrorline.services.internal"
FORMAT_VERSION = 1
ADVERTISE_S = 30.0
DIRECTORY_REFRESH_S = 10.0
FORGET_AFTER_MS = 24 * 3600 * 1000


class RemoteUnavailable(RuntimeError):
    """The remote service that reports a replication did not answer."""


@dataclass(frozen=True)
class ServiceAd:
    """How to reach a service, and which clusters it reports."""

    id: str
    protocol: str
    host: str
    port: int
    base_path: str
    targets: tuple[str, ...]
    updated_ms: int = 0

    @property
    def url(self) -> str:
        return f"{self.protocol}://{self.host}:{self.port}{self.base_path}"

    def record(self) -> tuple[bytes, bytes]:
        value = {
            "version": FORMAT_VERSION,
            "id": self.id,
            "protocol": self.protocol,
            "host": self.host,
            "port": self.port,
            "base_path": self.base_path,
            "targets": list(self.targets),
            "updated_ms": int(time.time() * 1000),
        }
        return json_record({"id": self.id, "version": FORMAT_VERSION}), json_record(value)

    @classmethod
    def decode(cls, value: bytes | None) -> ServiceAd | None:
        try:
            data = json.loads(value or b"")
            if data.get("version") != FORMAT_VERSION:
                return None
            return cls(
                str(data["id"]),
                str(data["protocol"]),
                str(data["host"]),
                int(data["port"]),
                str(data["base_path"]),
                tuple(str(t) for t in data["targets"]),
                int(data["updated_ms"]),
            )
        except (TypeError, ValueError, KeyError, AttributeError):
            return None


class RemoteServices:
    """This service's advertisement, and the remote services it asks (see the module)."""

    def __init__(
        self,
        own: ServiceAd,
        *,
        advertise_in: Mapping[str, ClusterClients],
        discover_in: Mapping[str, Mapping[str, Any]],
        access: RemoteAccess | None = None,
    ) -> None:
        """`advertise_in`: the clusters this service reports; `discover_in`: consumer
        settings of the clusters where remote services advertise (`service.remote.clusters`);
        `access`: how remote services are called (default: no credentials, system CAs)."""
        self.own = own
        self._access = access or RemoteAccess()
        self._topics = [
            InternalTopic(
                SERVICES_TOPIC, clients, what=f"service advertisement ({alias})", config=COMPACTED
            )
            for alias, clients in advertise_in.items()
        ]
        self._discover_in = dict(discover_in)
        self._lock = threading.Lock()
        self._directory: dict[str, ServiceAd] = {}
        self._read_at = -DIRECTORY_REFRESH_S
        self._last_answer: dict[str, list[ReplicationDoc]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._advertise, name="advertise", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(15)
            if self._thread.is_alive():  # closing its clients now would pull them from under it
                log.warning("service: the advertising thread did not stop in time; left to end")
                return
        for topic in self._topics:
            topic.close()
            topic.clients.close()  # handed to this object alone (`Service`)

    def own_doc(self) -> ServiceDoc:
        return ServiceDoc(
            id=self.own.id,
            url=self.own.url,
            targets=list(self.own.targets),
            local=True,
            reachable=True,
        )

    # -- asking remote services ----------------------------------------------------------

    def replications(self) -> tuple[list[ReplicationDoc], list[ServiceDoc]]:
        """Every remote service's replications, asked now in parallel; who answered."""
        services = list(self.directory().values())
        if not services:
            return [], []
        with ThreadPoolExecutor(max_workers=min(8, len(services))) as pool:
            answers = list(pool.map(self._ask, services))
        found: list[ReplicationDoc] = []
        docs = []
        for ad, (replications, error) in zip(services, answers, strict=True):
            docs.append(
                ServiceDoc(
                    id=ad.id,
                    url=ad.url,
                    targets=list(ad.targets),
                    local=False,
                    reachable=not error,
                    error=error,
                )
            )
            found += replications
        return found, docs

    def serves(self, target: str) -> bool:
        return any(target in ad.targets for ad in self.directory().values())

    def forward(self, target: str, path: str, query: Mapping[str, str]) -> tuple[int, Any]:
        """The answer (status, JSON) of the remote service reporting `target` to the
        same request."""
        for ad in self.directory().values():
            if target in ad.targets:
                suffix = path.removeprefix(self.own.base_path)
                url = ad.url + suffix + (f"?{urllib.parse.urlencode(query)}" if query else "")
                try:
                    return self._access.get(url)
                except RemoteFailed as exc:
                    raise RemoteUnavailable(
                        f"service {ad.id} that reports {target} did not answer: {exc}"
                    ) from None
        raise RemoteUnavailable(f"no service reports cluster {target}")

    def directory(self) -> dict[str, ServiceAd]:
        """The remote services advertised, re-read now and then (by id)."""
        with self._lock:
            if time.monotonic() - self._read_at < DIRECTORY_REFRESH_S:
                return dict(self._directory)
            self._read_at = time.monotonic()
        found: dict[str, ServiceAd] = {}
        now = int(time.time() * 1000)
        for alias, settings in self._discover_in.items():
            try:
                for msg in read_to_end(settings, SERVICES_TOPIC, missing_ok=True, timeout=5.0):
                    ad = ServiceAd.decode(msg.value())
                    if ad is not None and ad.id != self.own.id:
                        if now - ad.updated_ms <= FORGET_AFTER_MS:
                            found[ad.id] = ad
            except Exception as exc:  # noqa: BLE001 - the directory read before stays
                log.warning("service: cannot read the services advertised in %s: %s", alias, exc)
                with self._lock:
                    return dict(self._directory)
        with self._lock:
            self._directory = found
            return dict(found)

    def _ask(self, ad: ServiceAd) -> tuple[list[ReplicationDoc], str]:
        try:
            status, body = self._access.get(ad.url + "/v2/replications?scope=local")
            if status != 200:
                raise RemoteFailed(f"HTTP {status}")
            doc = ReplicationsDoc.model_validate(body)
        except (RemoteFailed, ValueError) as exc:
            reason = f"service {ad.id} does not answer: {exc}"
            with self._lock:
                last = self._last_answer.get(ad.id, [])
            return [
                r.model_copy(
                    update={
                        "unreachable": True,
                        "state": "unknown",
                        "health": "unhealthy",
                        "reason": reason,
                    }
                )
                for r in last
            ], str(exc)
        with self._lock:
            self._last_answer[ad.id] = doc.replications
        return doc.replications, ""

    # -- advertising ---------------------------------------------------------------------

    def _advertise(self) -> None:
        while not self._stop.is_set():
            for topic in self._topics:
                try:
                    topic.ensure(timeout=10.0)
                    topic.write([self.own.record()], timeout=10.0)
                except Exception as exc:  # noqa: BLE001 - advertised again at the next round
                    log.warning("service: advertising on %s failed: %s", topic.clients.alias, exc)
            self._stop.wait(ADVERTISE_S)
