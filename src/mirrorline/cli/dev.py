"""`mirrorline dev up / status / down / stop / start / restart`: real local Kafka clusters
for trying things out, and outages of whole clusters or single nodes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from mirrorline.devcluster import DEFAULT_ALIASES, ClusterHealth, DevClusterError, DevClusters
from mirrorline.devlatency import Link, LinkError
from mirrorline.jvm import JvmSetupError

dev_app = typer.Typer(
    help="Start, inspect and stop local Apache Kafka clusters (KRaft, loopback), "
    "and take clusters or single nodes away and back.",
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
        help="plaintext; sasl_ssl: SCRAM-SHA-512 over TLS; or mtls: TLS with client "
        "certificates (principal User:<CN>). Secured modes turn the authorizer on and have an "
        "admin user and a replication user (secrets in DIR/security/secrets.properties).",
    ),
    brokers: int = typer.Option(
        1,
        "--brokers",
        help="Nodes per cluster (each broker and controller). 3 or more: topics get 3 "
        "replicas and min.insync.replicas=2; 2: 2 replicas; 1: one replica.",
    ),
    latency_ms: int | None = typer.Option(
        None,
        "--latency-ms",
        min=0,
        help="Put the clusters behind a simulated WAN link of this round trip: every "
        "client connection crosses a Toxiproxy proxy (built with Go on first use).",
        show_default=False,
    ),
    jitter_ms: int = typer.Option(0, "--jitter-ms", min=0, help="The link's jitter (ms)."),
    bandwidth: int | None = typer.Option(
        None,
        "--bandwidth",
        min=1,
        help="The link's bandwidth per direction and connection, KiB/s (default: unlimited).",
        show_default=False,
    ),
    as_json: bool = JsonOption,
) -> None:
    """Start one Kafka cluster per alias and write a properties file naming them.

    With --json each cluster is described as `status --json` does (nodes included),
    plus `client`: a librdkafka configuration of the admin user, for scripts that
    produce, consume or set ACLs.
    """
    dev = DevClusters(directory)
    progress = None if as_json else (lambda msg: err.print(f"[dim]{msg}[/dim]"))
    try:
        if latency_ms is None and (jitter_ms or bandwidth is not None):
            raise LinkError("--jitter-ms and --bandwidth describe a link: give --latency-ms too")
        link = None if latency_ms is None else Link(latency_ms, jitter_ms, bandwidth)
        started = dev.up(
            clusters.split(","),
            brokers=brokers,
            progress=progress,
            security=security.lower(),
            link=link,
        )
    except (DevClusterError, JvmSetupError, LinkError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise _fail("interrupted; the clusters started so far were stopped", 130) from None
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "properties_file": str(dev.properties_file),
                    # What `status --json` says of each cluster, and its admin client.
                    "clusters": [
                        _status_doc(h) | {"client": dev.client_config(h.cluster)}
                        for h in dev.health()
                        if h.cluster.alias in {c.alias for c in started}
                    ],
                }
            )
        )
        return
    for cluster in started:
        behind = f", behind a link of {cluster.link.link.describe()}" if cluster.link else ""
        out.print(f"{cluster.alias}: {cluster.bootstrap_servers} ({cluster.security}{behind})")
    out.print(f"properties file: {dev.properties_file}")
    if any(c.security != "plaintext" for c in started):
        out.print(f"secrets: {dev.security.secrets_file}  CA certificate: {dev.security.ca_file}")


@dev_app.command("status")
def status(directory: Path = DirOption, as_json: bool = JsonOption) -> None:
    """Show the clusters in DIR and their nodes; exit code 1 unless every node is up."""
    try:
        health = DevClusters(directory).health()
    except DevClusterError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps([_status_doc(h) for h in health]))
    elif not health:
        out.print(f"no dev clusters in {directory}")
    else:
        table = Table("alias", "node", "address", "controller port", "pid", "state", "directory")
        for h in health:
            for n in h.nodes:
                table.add_row(
                    h.cluster.alias,
                    str(n.node.id),
                    n.node.address,
                    str(n.node.controller_port),
                    str(n.node.pid or "-"),
                    n.state,
                    n.node.directory,
                )
        out.print(table)
        for h in health:
            if h.cluster.link is not None:
                state = "up" if h.link_alive else "DOWN"
                out.print(
                    f"{h.cluster.alias}: clients reach it through a link of "
                    f"{h.cluster.link.link.describe()} (proxy pid {h.cluster.link.pid}, "
                    f"API port {h.cluster.link.api_port}: {state})"
                )
    if not health or not all(h.up for h in health):
        raise typer.Exit(1)


def _status_doc(health: ClusterHealth) -> dict[str, object]:
    cluster = health.cluster
    return {
        "alias": cluster.alias,
        "bootstrap_servers": cluster.bootstrap_servers,
        "cluster_id": cluster.cluster_id,
        "security": cluster.security,
        "directory": cluster.directory,
        "up": health.up,
        "link": None
        if cluster.link is None
        else {**cluster.link.to_dict(), "alive": health.link_alive},
        "nodes": [
            {
                "id": n.node.id,
                "port": n.node.port,
                "controller_port": n.node.controller_port,
                "internal_port": n.node.internal_port,
                "proxy_port": n.node.proxy_port,
                "pid": n.node.pid,
                "state": n.state,
                "process_alive": n.process_alive,
                "reachable": n.reachable,
                "directory": n.node.directory,
            }
            for n in health.nodes
        ],
    }


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


BrokerOption = typer.Option(
    None, "--broker", help="Only this node (1..N) of the cluster.", show_default=False
)


@dev_app.command("stop")
def stop(
    alias: str = typer.Argument(..., help="The cluster."),
    broker: int | None = BrokerOption,
    directory: Path = DirOption,
) -> None:
    """Take a cluster, or one node of it, away (a controlled shutdown); data and ports stay."""
    try:
        DevClusters(directory).stop(alias, broker)
    except DevClusterError as exc:
        raise _fail(str(exc)) from None
    out.print(f"stopped {_what(alias, broker)}")


@dev_app.command("start")
def start(
    alias: str = typer.Argument(..., help="The cluster."),
    broker: int | None = BrokerOption,
    directory: Path = DirOption,
) -> None:
    """Start a stopped cluster, or a stopped node, again on its ports and data."""
    try:
        DevClusters(directory).start(alias, broker)
    except (DevClusterError, JvmSetupError) as exc:
        raise _fail(str(exc)) from None
    out.print(f"started {_what(alias, broker)}")


@dev_app.command("restart")
def restart(
    alias: str = typer.Argument(..., help="The cluster."),
    broker: int = typer.Option(..., "--broker", help="The node (1..N) to restart."),
    directory: Path = DirOption,
    timeout: float = typer.Option(
        120.0, "--timeout", min=1, help="Seconds to wait for the node to be back and in sync."
    ),
) -> None:
    """Stop a node, start it again, and wait until it is registered and no partition of the
    cluster is under-replicated."""
    say = lambda msg: err.print(f"[dim]{msg}[/dim]")  # noqa: E731
    try:
        DevClusters(directory).restart(alias, broker, timeout=timeout, progress=say)
    except (DevClusterError, JvmSetupError) as exc:
        raise _fail(str(exc)) from None
    out.print(f"restarted {_what(alias, broker)}")


def _what(alias: str, broker: int | None) -> str:
    return alias if broker is None else f"node {broker} of {alias}"
