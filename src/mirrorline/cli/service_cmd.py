"""`mirrorline service`: the REST API, Prometheus and the web UI over the flows' raw metrics."""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from rich.console import Console

from mirrorline.config import ConfigError, load_config
from mirrorline.config.service_settings import ServiceSettings

err = Console(stderr=True)


def service(
    config: Path = typer.Option(..., "--config", "-c", help="MM2-format properties file."),
    host: str = typer.Option(
        "", "--host", help="Address to listen on (default: service.host, else 127.0.0.1)."
    ),
    port: int = typer.Option(
        0, "--port", min=0, max=65535, help="Port (default: service.port, else 6670)."
    ),
) -> None:
    """Serve replication status and metrics: REST API (/v2, /docs), Prometheus (/metrics), UI (/).

    Reads the raw metrics, heartbeats, checkpoints and remote-topic metadata of the
    target clusters in `service.clusters` (default: every target of an enabled
    flow). Keeps no state of its own: several instances give the same answers.
    """
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        loaded = load_config(config)
        settings = ServiceSettings.of(loaded)
    except ConfigError as exc:
        err.print(f"[red]{config}:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None
    if not settings.clusters:
        err.print(
            "[red]error:[/red] no cluster to report on: enable a flow, or list clusters in "
            "service.clusters",
            highlight=False,
        )
        raise typer.Exit(2)
    from mirrorline.service.server import Service

    running = Service(loaded, host=host or None, port=port or None)
    running.start()
    err.print(
        f"Mirrorline service on {running.url}/ (API docs {running.url}/docs, Prometheus "
        f"{running.url}/metrics), reporting flows into {', '.join(settings.clusters)}",
        highlight=False,
    )
    try:
        running.serve()
    finally:
        running.close()
