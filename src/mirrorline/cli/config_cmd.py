"""`mirrorline config ...`: check a configuration and show what Mirrorline will use."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mirrorline.cli.config_runtime import READ_TIMEOUT_S, read_runtime
from mirrorline.cli.config_runtime import offline as offline_runtimes
from mirrorline.cli.config_summary import Runtime, cluster_row, display, flow_rows
from mirrorline.config.errors import ConfigError, ConfigIssue
from mirrorline.config.loader import load_config
from mirrorline.config.model import CLIENT_TYPES, SIDES, FlowConfig, MirrorConfig, Setting

config_app = typer.Typer(
    help="Check MirrorMaker 2 style configuration files.",
    no_args_is_help=True,
    add_completion=False,
)

#: Exit code for a configuration with errors (Typer uses 2 for usage errors too).
EXIT_INVALID = 2

_GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("selection", ("topics", "topics.exclude", "groups", "groups.exclude")),
    (
        "records",
        (
            "start.position",
            "tasks.max",
            "max.poll.records",
            "micro-batch.duration.ms",
            "micro-batch.max.records",
            "exactly.once.source.support",
            "errors.tolerance",
            "errors.deadletterqueue.topic.name",
            "offset.lag.max",
            "emit.offset-syncs.enabled",
        ),
    ),
    (
        "naming",
        (
            "replication.policy.class",
            "replication.policy.separator",
            "replication.policy.internal.topic.separator.enabled",
        ),
    ),
    (
        "topics created",
        (
            "replication.factor",
            "offset-syncs.topic.location",
            "offset-syncs.topic.replication.factor",
            "checkpoints.topic.replication.factor",
            "heartbeats.topic.replication.factor",
        ),
    ),
    (
        "control loops",
        (
            "refresh.topics.enabled",
            "refresh.topics.interval.seconds",
            "refresh.groups.enabled",
            "refresh.groups.interval.seconds",
            "sync.topic.configs.enabled",
            "sync.topic.configs.interval.seconds",
            "config.properties.exclude",
            "use.defaults.from",
            "sync.topic.acls.enabled",
            "sync.topic.acls.interval.seconds",
            "emit.checkpoints.enabled",
            "emit.checkpoints.interval.seconds",
            "sync.group.offsets.enabled",
            "sync.group.offsets.interval.seconds",
            "emit.heartbeats.enabled",
            "emit.heartbeats.interval.seconds",
            "heartbeats.replication.enabled",
            "emit.metrics.enabled",
            "emit.metrics.interval.seconds",
        ),
    ),
]


@config_app.command("check")
def check(
    file: Annotated[Path, typer.Argument(help="The properties file (MM2 format).")],
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print a machine-readable JSON document (every setting)."),
    ] = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also show flows that are not enabled.")
    ] = False,
    settings: Annotated[
        bool,
        typer.Option(
            "--settings", help="Also show every setting of each flow and its clients, with origins."
        ),
    ] = False,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline", help="Do not ask the target clusters for the flows' run-time changes."
        ),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", min=0.1, help="Seconds to wait for a target cluster's run-time changes."
        ),
    ] = READ_TIMEOUT_S,
) -> None:
    """Check FILE and summarize each enabled flow, or list every error.

    The summary shows the clusters, and per flow its topic and group lists,
    naming policy, delivery mode, data path and control loops, with the list
    changes and the state operators asked for at run time, read from the flow's
    target cluster (skipped with --offline; a cluster that does not answer
    within --timeout is named, and the check still passes). --settings adds
    every setting with the line that set it. Secret values are never printed.
    Exit code 0 when the file can be used, 2 when it has errors.
    """
    try:
        config = load_config(file)
    except ConfigError as exc:
        _report_errors(str(file), exc.issues, as_json)
        raise typer.Exit(EXIT_INVALID) from None
    enabled = config.enabled_flows()
    runtimes = (
        offline_runtimes(enabled) if offline else read_runtime(enabled, timeout, first_start=True)
    )
    if as_json:
        typer.echo(json.dumps(_document(config, runtimes), indent=2))
        return
    _render(config, runtimes, show_all=show_all, settings=settings)


def _document(config: MirrorConfig, runtimes: Mapping[str, Runtime]) -> dict[str, Any]:
    """The JSON document: the whole configuration, and each flow's run-time changes."""
    document: dict[str, Any] = {"ok": True, **config.to_dict()}
    for flow, flow_document in zip(config.flows, document["flows"], strict=True):
        runtime = runtimes.get(flow.name)
        flow_document["runtime"] = runtime.to_dict(flow) if runtime is not None else None
        flow_document["runtime_note"] = (
            runtime.note if runtime is not None else "not read: the flow is not enabled"
        )
        link = runtime.link if runtime is not None else None
        flow_document["source_link"] = link.to_dict() if link is not None else None
    return document


def _console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    # Outside a terminal (pipes, CI, grep), tables take their natural width
    # instead of folding values at 80 columns.
    width = None if stream.isatty() else 1000
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def _report_errors(file: str, issues: tuple[ConfigIssue, ...], as_json: bool) -> None:
    if as_json:
        document = {"ok": False, "file": file, "errors": [i.to_dict() for i in issues]}
        typer.echo(json.dumps(document, indent=2))
        return
    console = _console(stderr=True)
    noun = "error" if len(issues) == 1 else "errors"
    console.print(Text(f"✗ {file}: {len(issues)} {noun}", style="bold red"))
    for issue in issues:
        console.print(_issue_text(issue, "red"))


def _issue_text(issue: ConfigIssue, style: str) -> Text:
    text = Text("  ")
    if issue.where:
        text.append(f"{issue.where}: ", style="bold")
    if issue.setting:
        text.append(f"{issue.setting}: ", style=style)
    text.append(issue.message)
    if issue.hint:
        text.append(f"\n      → {issue.hint}", style="dim")
    return text


def _render(
    config: MirrorConfig, runtimes: Mapping[str, Runtime], *, show_all: bool, settings: bool
) -> None:
    console = _console()
    enabled = config.enabled_flows()
    warnings = len(config.warnings)
    console.print(
        Text(
            f"✓ {config.file}: {len(config.clusters)} clusters, "
            f"{len(enabled)} of {len(config.flows)} flows enabled, "
            f"{warnings or 'no'} warning{'' if warnings == 1 else 's'}",
            style="bold green",
        )
    )
    if config.warnings:
        console.print(Text(f"\nWarnings ({warnings})", style="bold yellow"))
        for warning in config.warnings:
            console.print(_issue_text(warning, "yellow"))
    console.print(Text("\nClusters", style="bold"))
    console.print(_rows([cluster_row(cluster) for cluster in config.clusters.values()]))
    shown = config.flows if show_all else enabled
    for flow in shown:
        state = "enabled" if flow.enabled else "not enabled"
        console.print(Text(f"\nFlow {flow.name} ({state})", style="bold"))
        console.print(_rows(flow_rows(flow, runtimes.get(flow.name))))
        if flow.client_issues:
            # Only flows that are neither enabled nor emitting heartbeats get here.
            console.print(Text(f"Clients of {flow.name} cannot be used:", style="bold yellow"))
            for issue in flow.client_issues:
                console.print(_issue_text(issue, "yellow"))
        if settings:
            console.print(Text(f"Settings of {flow.name}", style="bold"))
            console.print(_flow_table(flow))
            if not flow.client_issues:
                console.print(Text(f"Clients of {flow.name} (librdkafka settings)", style="bold"))
                console.print(_clients_table(flow))
    hidden = [f.name for f in config.flows if f not in shown]
    if hidden:
        console.print(Text(f"\nNot enabled: {', '.join(hidden)} (--all shows them)", style="dim"))
    if not settings and shown:
        console.print(Text("Every setting and where it comes from: --settings", style="dim"))


def _rows(rows: list[tuple[str, str]]) -> Text:
    """Labels and texts in two columns, indented under their heading."""
    width = max((len(label) for label, _ in rows), default=0)
    text = Text()
    for index, (label, value) in enumerate(rows):
        if index:
            text.append("\n")
        text.append(f"  {label:<{width}}  ", style="dim")
        text.append(value)
    return text


def _flow_table(flow: FlowConfig) -> Table:
    table = Table()
    table.add_column("group", style="dim")
    table.add_column("setting", overflow="fold")
    table.add_column("value", overflow="fold")
    table.add_column("origin", overflow="fold")
    listed: set[str] = {"enabled"}
    _add_row(table, "", flow.setting("enabled"))
    for group, names in _GROUPS:
        table.add_section()
        for index, name in enumerate(names):
            listed.add(name)
            _add_row(table, group if index == 0 else "", flow.setting(name))
    extras = sorted(set(flow.settings) - listed - _FILTER_CLASSES)
    if extras:
        table.add_section()
        for index, name in enumerate(extras):
            _add_row(table, "other" if index == 0 else "", flow.setting(name))
    return table


_FILTER_CLASSES = {"topic.filter.class", "group.filter.class", "config.property.filter.class"}


def _clients_table(flow: FlowConfig) -> Table:
    table = Table()
    table.add_column("client", style="dim")
    table.add_column("setting")
    table.add_column("value", overflow="fold")
    table.add_column("origin", overflow="fold")
    for side in SIDES:
        for client in CLIENT_TYPES:
            table.add_section()
            settings = flow.client_settings(side, client)
            for index, setting in enumerate(settings.settings()):
                _add_row(table, f"{side} {client}" if index == 0 else "", setting)
    return table


def _add_row(table: Table, group: str, setting: Setting[Any]) -> None:
    origin = Text(setting.origin.where, style="dim" if setting.origin.is_default else "")
    if setting.origin.key and not setting.origin.is_default:
        origin.append(f" {setting.origin.key}", style="cyan")
    value_style = "italic" if setting.secret else ""
    table.add_row(
        Text(group), Text(setting.name), Text(display(setting), style=value_style), origin
    )
