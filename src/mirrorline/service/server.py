"""The service put together: its monitor, its advertisement and remote services, its HTTP app.

`Service(config)` builds them from a loaded configuration; `start()` starts
reading the target clusters and advertising; `serve(host, port)` runs the HTTP
server until it is stopped (Ctrl-C or SIGTERM, by uvicorn); `close()` stops
the rest. Tests run the same object on a thread of their own (`serve_in_thread`).
"""

from __future__ import annotations

import threading
import time

import uvicorn
from fastapi import FastAPI

from mirrorline.config.model import MirrorConfig
from mirrorline.config.service_settings import ServiceSettings
from mirrorline.kafka import ClusterClients
from mirrorline.service.api import build_app
from mirrorline.service.monitor import Monitor
from mirrorline.service.remote import RemoteServices, ServiceAd


class Service:
    """`mirrorline service` (see the module)."""

    def __init__(
        self, config: MirrorConfig, *, host: str | None = None, port: int | None = None
    ) -> None:
        settings = ServiceSettings.of(config)
        self.settings = settings
        self.host = host or settings.host
        self.port = settings.port if port is None else port
        self.monitor = Monitor(config, settings)
        advertised = settings.advertised(self.host)
        own = ServiceAd(
            id=f"mirrorline-service@{advertised}:{self.port}{settings.base_path}",
            protocol=settings.advertised_protocol,
            host=advertised,
            port=self.port,
            base_path=settings.base_path,
            targets=settings.clusters,
        )
        self.remote = RemoteServices(
            own,
            advertise_in={alias: _clients(config, alias) for alias in settings.clusters},
            discover_in={
                alias: config.clusters[alias].client_settings("consumer")
                for alias in settings.remote_clusters
            },
        )
        self.app: FastAPI = build_app(self.monitor, self.remote)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.settings.base_path}"

    def start(self) -> None:
        self.monitor.start()
        self.remote.start()

    def serve(self) -> None:
        """Serve HTTP until uvicorn is told to stop (Ctrl-C, SIGTERM)."""
        self._server = uvicorn.Server(self._uvicorn_config())
        self._server.run()

    def serve_in_thread(self, timeout: float = 30.0) -> None:
        """Serve on a thread of its own; returns once the server accepts connections."""
        self._server = uvicorn.Server(self._uvicorn_config())
        self._thread = threading.Thread(target=self._server.run, name="service http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the service did not start listening on {self.url}")
            time.sleep(0.05)

    def close(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(15)
        self.remote.close()
        self.monitor.close()

    def _uvicorn_config(self) -> uvicorn.Config:
        return uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
            root_path=self.settings.base_path,
            log_level="warning",
            access_log=False,
        )


def _clients(config: MirrorConfig, alias: str) -> ClusterClients:
    cluster = config.clusters[alias]
    return ClusterClients(
        alias,
        admin=cluster.client_settings("admin"),
        producer=cluster.client_settings("producer"),
        consumer=cluster.client_settings("consumer"),
    )
