"""The service's HTTP face: the REST API (v2, shaped after SRM's), Prometheus and the web UI.

Routes (OpenAPI at `/openapi.json`, interactive docs at `/docs`):

- `GET /v2/replications`, `GET /v2/replications/{source}/{target}`;
- `GET /v2/cluster-metrics/{source}/{target}/{metric}?window=5m`;
- `GET /v2/topic-metrics/{source}/{target}/{upstreamTopic}/{metric}?window=5m`;
- `GET /v2/topic-metrics/{target}/{downstreamTopic}/{metric}?window=5m`;
- `GET /v2/groups/{source}/{target}`;
- `GET /v2/windows` (the windows metrics can be asked over);
- `GET /health`, `GET /metrics` (Prometheus), `GET /` (the web UI).

With authentication on (`service.auth`, see `auth`), every request needs
credentials (401 without), and every route requires a role (403 when the
principal's falls short): the routes here only read, and require `viewer`.

Replications whose target another service reports (remote querying,
`service.remote`) are fetched from that service when asked for. Every error
is JSON (`ErrorDoc`): 404 for an unknown name, listing the names that exist,
422 for a malformed request, 503 when the remote service that would answer
does not.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from mirrorline.config.service_settings import window_text
from mirrorline.service.auth import Authenticator, protect, require
from mirrorline.service.models import (
    ClusterHealthDoc,
    ErrorDoc,
    GroupsDoc,
    HealthDoc,
    MetricDoc,
    ReplicationDoc,
    ReplicationsDoc,
    WindowsDoc,
)
from mirrorline.service.monitor import Monitor, NotFound
from mirrorline.service.prometheus import MetricsCollector
from mirrorline.service.remote import RemoteServices, RemoteUnavailable

UI_DIR = Path(__file__).parent / "ui"
_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorDoc, "description": "An unknown name; `known` lists those that exist."},
    422: {"model": ErrorDoc, "description": "A malformed request."},
    503: {"model": ErrorDoc, "description": "The remote service that reports it did not answer."},
}
Window = Annotated[str, Query(description="One of the service's windows, like 5m.")]
Alias = Annotated[str, PathParam(description="A cluster alias.")]
Topic = Annotated[str, PathParam(description="A topic name.")]
Metric = Annotated[str, PathParam(description="A metric name, like record-count.")]
_AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorDoc, "description": "No credentials, or wrong ones (WWW-Authenticate)."},
    403: {"model": ErrorDoc, "description": "The caller's role does not allow this request."},
}
#: What every route that only reads requires.
VIEWER = [Depends(require("viewer"))]


def build_app(
    monitor: Monitor, remote: RemoteServices, authenticator: Authenticator | None = None
) -> FastAPI:
    """The application serving `monitor`'s answers, and remote services' through `remote`;
    callers authenticate with `authenticator` (None: nobody is asked)."""
    app = FastAPI(
        title="Mirrorline service",
        version="2",
        description="Replication status and metrics of Mirrorline flows (SRM v2 shaped).",
        responses={**_ERRORS, **(_AUTH_ERRORS if authenticator is not None else {})},
    )
    protect(app, authenticator)
    registry = CollectorRegistry()
    registry.register(MetricsCollector(monitor))
    default_window = _window_default(monitor)

    def elsewhere(target: str, request: Request) -> JSONResponse | None:
        """The remote service's answer when it, and no collector here, reports `target`."""
        if target in monitor.collectors or not remote.serves(target):
            return None
        status, body = remote.forward(target, request.url.path, dict(request.query_params))
        return JSONResponse(body, status_code=status)

    @app.exception_handler(NotFound)
    async def not_found(_request: Request, exc: NotFound) -> JSONResponse:
        return _error(404, str(exc), exc.known)

    @app.exception_handler(RemoteUnavailable)
    async def unavailable(_request: Request, exc: RemoteUnavailable) -> JSONResponse:
        return _error(503, str(exc))

    @app.exception_handler(RequestValidationError)
    async def malformed(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        return _error(422, f"malformed request: {problems}")

    @app.get(
        "/v2/replications",
        response_model=ReplicationsDoc,
        tags=["replications"],
        dependencies=VIEWER,
    )
    def replications(
        scope: Annotated[
            str, Query(pattern="^(all|local)$", description="local: this service's own only")
        ] = "all",
    ) -> ReplicationsDoc:
        """Every replication this service and the remote services it knows report."""
        local = [ReplicationDoc.of(r, remote.own.id) for r in monitor.replications()]
        if scope == "local":
            return ReplicationsDoc(replications=local, services=[remote.own_doc()])
        others, services = remote.replications()
        return ReplicationsDoc(replications=local + others, services=[remote.own_doc(), *services])

    @app.get(
        "/v2/replications/{source}/{target}",
        response_model=ReplicationDoc,
        tags=["replications"],
        dependencies=VIEWER,
    )
    def one_replication(source: Alias, target: Alias, request: Request) -> Any:
        return elsewhere(target, request) or ReplicationDoc.of(
            monitor.replication(source, target), remote.own.id
        )

    @app.get(
        "/v2/cluster-metrics/{source}/{target}/{metric}",
        response_model=MetricDoc,
        tags=["metrics"],
        dependencies=VIEWER,
    )
    def cluster_metric(
        source: Alias, target: Alias, metric: Metric, request: Request, window: Window = ""
    ) -> Any:
        """A metric of a replication, over all of its topics."""
        return elsewhere(target, request) or MetricDoc.of(
            monitor.cluster_metric(source, target, metric, window or default_window)
        )

    @app.get(
        "/v2/topic-metrics/{source}/{target}/{upstreamTopic}/{metric}",
        response_model=MetricDoc,
        tags=["metrics"],
        dependencies=VIEWER,
    )
    def topic_metric(
        source: Alias,
        target: Alias,
        upstreamTopic: Topic,  # noqa: N803 - SRM's name in the path
        metric: Metric,
        request: Request,
        window: Window = "",
    ) -> Any:
        """A metric of one source topic of a replication."""
        return elsewhere(target, request) or MetricDoc.of(
            monitor.topic_metric(source, target, upstreamTopic, metric, window or default_window)
        )

    @app.get(
        "/v2/topic-metrics/{target}/{downstreamTopic}/{metric}",
        response_model=MetricDoc,
        tags=["metrics"],
        dependencies=VIEWER,
    )
    def downstream_metric(
        target: Alias,
        downstreamTopic: Topic,  # noqa: N803 - SRM's name in the path
        metric: Metric,
        request: Request,
        window: Window = "",
    ) -> Any:
        """A metric of a replicated topic by its name on the target (every flow writing it)."""
        return elsewhere(target, request) or MetricDoc.of(
            monitor.downstream_metric(target, downstreamTopic, metric, window or default_window)
        )

    @app.get(
        "/v2/groups/{source}/{target}",
        response_model=GroupsDoc,
        tags=["groups"],
        dependencies=VIEWER,
    )
    def groups(source: Alias, target: Alias, request: Request) -> Any:
        """The replication's checkpointed groups: translated offsets and checkpoint age."""
        return elsewhere(target, request) or GroupsDoc.of(
            source, target, monitor.groups(source, target), _now_ms()
        )

    @app.get("/v2/windows", response_model=WindowsDoc, tags=["metrics"], dependencies=VIEWER)
    def windows() -> WindowsDoc:
        """The windows metrics can be asked over, and the default one."""
        known = [window_text(w) for w in monitor.settings.windows]
        return WindowsDoc(windows=known, default=default_window)

    @app.get("/health", response_model=HealthDoc, tags=["service"], dependencies=VIEWER)
    def health() -> HealthDoc:
        clusters = [
            ClusterHealthDoc(
                alias=alias,
                reachable=v.verdict.reachable,
                error=v.verdict.error,
                caught_up=v.caught_up,
            )
            for alias, c in monitor.collectors.items()
            for v in (c.view,)
        ]
        status = "ok"
        if not all(c.caught_up for c in clusters):
            status = "loading"
        if not all(c.reachable for c in clusters):
            status = "degraded"
        return HealthDoc(status=status, clusters=clusters)

    @app.get("/metrics", tags=["service"], response_class=Response, dependencies=VIEWER)
    def metrics() -> Response:
        """Prometheus's text format."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", include_in_schema=False, dependencies=VIEWER)
    def home() -> RedirectResponse:
        return RedirectResponse("ui/index.html")

    if UI_DIR.is_dir():
        app.mount("/ui", StaticFiles(directory=UI_DIR), name="ui")
    return app


def _window_default(monitor: Monitor) -> str:
    windows = monitor.settings.windows
    preferred = 300 if 300 in windows else windows[0]
    return window_text(preferred)


def _error(status: int, message: str, known: list[str] | None = None) -> JSONResponse:
    return JSONResponse(ErrorDoc(error=message, known=known).model_dump(), status_code=status)


def _now_ms() -> int:
    return int(time.time() * 1000)
