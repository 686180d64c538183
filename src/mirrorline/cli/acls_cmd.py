"""`mirrorline acls`: the ACLs each enabled flow needs, ready to hand to whoever grants them."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from mirrorline.config import ConfigError, load_config
from mirrorline.permissions import heartbeat_grants, merged, required_grants, takeover_grants

out = Console()
err = Console(stderr=True)

EXIT_INVALID = 2


def acls(
    config: Path = typer.Option(..., "--config", "-c", help="MM2-format properties file."),
    principal: str = typer.Option(
        "User:mirrorline",
        "--principal",
        help="Principal the commands grant to (as in kafka-acls: User:NAME).",
    ),
    takeover: bool = typer.Option(
        False,
        "--takeover",
        help="Add what taking the flows over from a MirrorMaker 2 that ran them needs.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON document."),
) -> None:
    """Print the least-privilege ACLs of every enabled flow, per cluster.

    The list follows the file: offset-syncs location, exactly-once, checkpoints,
    group offset sync and ACL sync change it. `--takeover` adds the reads of
    MirrorMaker 2's offsets and group for switching over from it (see
    docs/migrating-from-mm2.md). With the default output each cluster
    also gets the `kafka-acls.sh` commands that grant it. Exit code 2 for a
    configuration error.
    """
    try:
        loaded = load_config(config)
    except ConfigError as exc:
        err.print(f"[red]{config}:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INVALID) from None
    grants = merged(
        [g for flow in loaded.enabled_flows() for g in required_grants(flow)]
        + [g for flow in loaded.heartbeat_flows() for g in heartbeat_grants(flow)]
        + [g for flow in loaded.enabled_flows() if takeover for g in takeover_grants(flow)]
    )
    if as_json:
        typer.echo(json.dumps({"grants": [asdict(g) for g in grants]}, indent=2))
        return
    if not grants:
        out.print("no enabled flow")
        return
    for cluster in sorted({g.cluster for g in grants}):
        mine = [g for g in grants if g.cluster == cluster]
        table = Table("resource", "pattern", "name", "operations", "why", title=cluster)
        for grant in mine:
            why = f"{grant.why} ({grant.note})" if grant.note else grant.why
            table.add_row(
                grant.resource, grant.pattern, grant.name, ", ".join(grant.operations), why
            )
        out.print(table)
        for grant in mine:
            out.print(grant.kafka_acls_command(principal), highlight=False, soft_wrap=True)
