"""The service put together: its monitor, its advertisement and remote services, its HTTP app.

`Service(config)` builds them from a loaded configuration; `start()` starts
reading the target clusters and advertising; `serve(host, port)` runs the HTTP
server until it is stopped (Ctrl-C or SIGTERM, by uvicorn); `close()` stops
the rest. Tests run the same object on a thread of their own (`serve_in_thread`).

With `service.tls.*` it serves HTTPS only (and advertises https); with a users
or tokens file every request must authenticate (`auth`). Mistakes in either
stop it at construction with a `ConfigError` or `CredentialsFileError`. A
service that any other machine can reach without authentication, or whose
credentials would travel in clear text, says so in its log at start.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time

import uvicorn
from fastapi import FastAPI

from mirrorline.config.model import MirrorConfig
from mirrorline.config.service_settings import ServiceSettings
from mirrorline.kafka import ClusterClients
from mirrorline.service import tls
from mirrorline.service.api import build_app
from mirrorline.service.auth import Authenticator
from mirrorline.service.monitor import Monitor
from mirrorline.service.remote import RemoteServices, ServiceAd
from mirrorline.service.remote_http import RemoteAccess

log = logging.getLogger(__name__)


class Service:
    """`mirrorline service` (see the module)."""

    def __init__(
        self, config: MirrorConfig, *, host: str | None = None, port: int | None = None
    ) -> None:
        settings = ServiceSettings.of(config)
        self.settings = settings
        self.host = host or settings.host
        self.port = settings.port if port is None else port
        security = settings.security
        if security.tls is not None:
            tls.check(security.tls)
        authenticator = None
        if security.authenticates:
            authenticator = Authenticator(security.users_file, security.tokens_file)
        access = RemoteAccess.of(security.remote)
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
            access=access,
        )
        self.app: FastAPI = build_app(self.monitor, self.remote, authenticator)
        self._warn_if_exposed()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.settings.security.tls is not None else "http"
        return f"{scheme}://{self.host}:{self.port}{self.settings.base_path}"

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
            # uvicorn's loggers go through Mirrorline's logging (text or JSON) instead of
            # a format of uvicorn's own.
            log_config=None,
            access_log=False,  # never logs headers either way; credentials stay out of logs
            **tls.uvicorn_options(self.settings.security.tls),
        )

    def _warn_if_exposed(self) -> None:
        if _loopback(self.host):
            return
        security = self.settings.security
        where = f"{self.host}:{self.port}"
        if not security.authenticates:
            log.warning(
                "service: serving on %s WITHOUT AUTHENTICATION: anyone who reaches it reads "
                "every replication, cluster and metric; set service.auth.users.file or "
                "service.auth.tokens.file (docs/monitoring.md, Securing the service)",
                where,
            )
        elif security.tls is None:
            log.warning(
                "service: serving on %s over plain HTTP: passwords and tokens cross the "
                "network in clear text; set service.tls.certificate and service.tls.key",
                where,
            )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _clients(config: MirrorConfig, alias: str) -> ClusterClients:
    """The clients that advertise this service in `alias`: quiet, as the collector's are
    (the probe reports a cluster that does not answer, and a failed advertisement is
    logged once a round), so that librdkafka's own lines never reach stderr."""
    cluster = config.clusters[alias]
    quiet = {"log_level": 0}
    return ClusterClients(
        alias,
        admin={**cluster.client_settings("admin"), **quiet},
        producer={**cluster.client_settings("producer"), **quiet},
        consumer={**cluster.client_settings("consumer"), **quiet},
    )
