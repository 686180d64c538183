"""`mirrorline dev up / status / down`: real local Kafka clusters for trying things out."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from mirrorline.devcluster import DEFAULT_ALIASES, DevClusterError, DevClusters
from mirrorline.jvm import JvmSetupError

dev_app = typer.Typer(
    help="Start, inspect and stop local single-node Apache Kafka clusters (KRaft, loopback).",
    no_args_is_help=True,
)
out = Console()
err = Console(stderr=True)

DEFAULT_DIR = Path(os.environ.get("MIRRORLINE_DEV_DIR", ".mirrorline/dev"))

DirOption = typer.Option(
    DEFAULT_DIR, "--dir", help="Directory holding the clusters' data, logs and state."
)
JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code)


@dev_app.command("up")
def up(
    clusters: str = typer.Option(
        ",".join(DEFAULT_ALIASES), "--clusters", help="Comma-separated cluster aliases."
    ),
    directory: Path = DirOption,
    security: str = typer.Option(
        "plaintext",
        "--security",
        help="plaintext, or sasl_ssl: SCRAM-SHA-512 over TLS with the authorizer on, "
        "an admin user and a replication user (passwords in DIR/security/secrets.properties).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Start one Kafka cluster per alias and write a properties file naming them.

    With --json each cluster also has `client`: a librdkafka configuration of the
    admin user, for scripts that produce, consume or set ACLs.
    """
    dev = DevClusters(directory)
    progress = None if as_json else (lambda msg: err.print(f"[dim]{msg}[/dim]"))
    try:
        started = dev.up(clusters.split(","), progress=progress, security=security.lower())
    except (DevClusterError, JvmSetupError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise _fail("interrupted; the clusters started so far were stopped", 130) from None
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "properties_file": str(dev.properties_file),
                    "clusters": [
                        {
                            "alias": c.alias,
                            "bootstrap_servers": c.bootstrap_servers,
                            "security": c.security,
                            "client": dev.client_config(c),
                        }
                        for c in started
                    ],
                }
            )
        )
        return
    for cluster in started:
        out.print(f"{cluster.alias}: {cluster.bootstrap_servers} ({cluster.security})")
    out.print(f"properties file: {dev.properties_file}")
    if any(c.security != "plaintext" for c in started):
        out.print(f"passwords: {dev.security.secrets_file}  CA certificate: {dev.security.ca_file}")


@dev_app.command("status")
def status(directory: Path = DirOption, as_json: bool = JsonOption) -> None:
    """Show the clusters in DIR; exit code 1 unless all of them are up and reachable."""
    try:
        health = DevClusters(directory).health()
    except DevClusterError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        "alias": h.cluster.alias,
                        "bootstrap_servers": h.cluster.bootstrap_servers,
                        "controller_port": h.cluster.controller_port,
                        "cluster_id": h.cluster.cluster_id,
                        "pid": h.cluster.pid,
                        "process_alive": h.process_alive,
                        "reachable": h.reachable,
                        "directory": h.cluster.directory,
                    }
                    for h in health
                ]
            )
        )
    elif not health:
        out.print(f"no dev clusters in {directory}")
    else:
        table = Table("alias", "bootstrap servers", "pid", "state", "directory")
        for h in health:
            state = (
                "up"
                if h.process_alive and h.reachable
                else ("starting or unreachable" if h.process_alive else "dead")
            )
            table.add_row(
                h.cluster.alias,
                h.cluster.bootstrap_servers,
                str(h.cluster.pid),
                state,
                h.cluster.directory,
            )
        out.print(table)
    if not health or not all(h.process_alive and h.reachable for h in health):
        raise typer.Exit(1)


@dev_app.command("down")
def down(directory: Path = DirOption, as_json: bool = JsonOption) -> None:
    """Stop every cluster in DIR and wait until their ports are free."""
    progress = None if as_json else (lambda msg: err.print(f"[dim]{msg}[/dim]"))
    try:
        stopped = DevClusters(directory).down(progress=progress)
    except DevClusterError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({"stopped": [c.alias for c in stopped]}))
    elif not stopped:
        out.print(f"no dev clusters in {directory}")
    else:
        out.print(f"stopped {', '.join(c.alias for c in stopped)}")
