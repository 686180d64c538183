"""`mirrorline status`: every flow's state from the raw metrics, without a running service."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from mirrorline.cli.config_runtime import read_runtime
from mirrorline.config import ConfigError, MirrorConfig, load_config
from mirrorline.config.service_settings import ServiceSettings, window_text
from mirrorline.service.monitor import Monitor
from mirrorline.service.replications import Replication

out = Console()
err = Console(stderr=True)

EXIT_UNHEALTHY = 1
EXIT_INVALID = 2
READ_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class FlowLine:
    """One flow in `status`: its replication and its numbers over the window."""

    flow: str
    state: str
    health: str
    reason: str
    records_per_second: float
    bytes_per_second: float
    lag: int | None
    latency_ms_avg: float | None
    last_heartbeat_age_s: float | None
    last_checkpoint_age_s: float | None
    active_driver: str | None
    topics: int
    # What operators changed at run time (`mirrorline topics|groups|pause|stop`);
    # None when the target's control records could not be read.
    control: dict[str, Any] | None = None
    # The flow's last `mirrorline verify` (`VerificationSummary.to_dict()`), None if never.
    last_verification: dict[str, Any] | None = None


def status(
    config: Path = typer.Option(..., "--config", "-c", help="MM2-format properties file."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON document."),
    window: str = typer.Option(
        "", "--window", help="Window for rates and latency (default: the shortest configured)."
    ),
) -> None:
    """Print every flow's state and reason, throughput, lag, last heartbeat and checkpoint,
    and last verification (`mirrorline verify`).

    Reads the same raw metrics as `mirrorline service` from the target clusters.
    Exit code 0 when no flow is unhealthy, 1 when one is (degraded, failed, or no
    driver reporting), 2 for a configuration error.
    """
    try:
        loaded = load_config(config)
        settings = ServiceSettings.of(loaded)
    except ConfigError as exc:
        err.print(f"[red]{config}:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INVALID) from None
    monitor = Monitor(loaded, settings)
    try:
        chosen = window or window_text(settings.windows[0])
        known = [window_text(w) for w in settings.windows]
        if chosen not in known:
            err.print(f"[red]error:[/red] --window {chosen}: use one of {', '.join(known)}")
            raise typer.Exit(EXIT_INVALID)
        monitor.start()
        if not as_json:
            err.print(f"[dim]reading {', '.join(settings.clusters)}...[/dim]", highlight=False)
        monitor.catch_up(READ_TIMEOUT_S)
        replications = monitor.replications()
        controls = _controls(loaded, replications)
        lines = [
            replace(_line(monitor, r, chosen), control=controls.get(r.flow)) for r in replications
        ]
    finally:
        monitor.close()
    if as_json:
        typer.echo(json.dumps({"window": chosen, "flows": [asdict(x) for x in lines]}, indent=2))
    else:
        _print(lines, chosen)
    if any(x.health == "unhealthy" for x in lines):
        raise typer.Exit(EXIT_UNHEALTHY)


def _line(monitor: Monitor, r: Replication, window: str) -> FlowLine:
    now = time.time() * 1000
    rate = monitor.cluster_metric(r.source, r.target, "record-rate", window)
    volume = monitor.cluster_metric(r.source, r.target, "byte-rate", window)
    latency = monitor.cluster_metric(r.source, r.target, "replication-latency-ms", window)
    lag = monitor.cluster_metric(r.source, r.target, "replication-records-lag", window)
    return FlowLine(
        flow=r.flow,
        state=r.state,
        health=r.health,
        reason=r.reason,
        records_per_second=round(rate.avg or 0.0, 1),
        bytes_per_second=round(volume.avg or 0.0, 1),
        lag=int(lag.sum) if lag.max is not None else None,
        latency_ms_avg=round(latency.avg, 1) if latency.avg is not None else None,
        last_heartbeat_age_s=_age(r.last_heartbeat_ms, now),
        last_checkpoint_age_s=_age(r.last_checkpoint_ms, now),
        active_driver=r.active_driver,
        topics=len(r.topics),
        last_verification=r.last_verification,
    )


def _controls(config: MirrorConfig, replications: list[Replication]) -> dict[str, Any]:
    """Each flow's run-time changes (`FlowControl.to_dict`), None where its target did not
    answer in time."""
    runtimes = read_runtime([config.flow(r.source, r.target) for r in replications])
    return {
        name: None if runtime.control is None else runtime.control.to_dict()
        for name, runtime in runtimes.items()
    }


def _age(time_ms: int | None, now_ms: float) -> float | None:
    return None if time_ms is None else round(max(0.0, now_ms - time_ms) / 1000, 1)


def _print(lines: list[FlowLine], window: str) -> None:
    if not lines:
        out.print("no flow to report: enable one, or check service.clusters")
        return
    table = Table(title=f"Mirrorline flows (rates over {window})")
    for column in ("flow", "state", "records/s", "lag", "latency ms", "heartbeat", "checkpoint"):
        table.add_column(column, justify="left" if column in ("flow", "state") else "right")
    table.add_column("reason")
    styles = {"healthy": "green", "warning": "yellow", "unhealthy": "red", "inactive": "dim"}
    for x in lines:
        table.add_row(
            x.flow,
            f"[{styles.get(x.health, '')}]{x.state}[/]",
            f"{x.records_per_second:,.0f}",
            "-" if x.lag is None else f"{x.lag:,}",
            "-" if x.latency_ms_avg is None else f"{x.latency_ms_avg:,.0f}",
            "-" if x.last_heartbeat_age_s is None else f"{x.last_heartbeat_age_s:.0f}s ago",
            "-" if x.last_checkpoint_age_s is None else f"{x.last_checkpoint_age_s:.0f}s ago",
            x.reason,
        )
    out.print(table)
    now_ms = time.time() * 1000
    for x in lines:
        out.print(f"{x.flow} {verification_text(x.last_verification, now_ms)}", highlight=False)
    for x in lines:
        lists = (x.control or {}).get("lists", {})
        for name, change in sorted(lists.items()):
            added = ", ".join(change["added"]) or "-"
            removed = ", ".join(change["removed"]) or "-"
            out.print(f"{x.flow} {name} changed at run time: added {added}; removed {removed}")


def verification_text(summary: dict[str, Any] | None, now_ms: float) -> str:
    """One line on a flow's last verification (`VerificationSummary.to_dict()`)."""
    if summary is None:
        return "has not been verified (run `mirrorline verify`)"
    finished = datetime.fromtimestamp(summary["finished_ms"] / 1000, UTC)
    age = _age(summary["finished_ms"], now_ms)
    topics = f"topics {summary['topics']}" if summary.get("topics") else "every topic"
    window = "".join(f" {word} {summary[word]}" for word in ("since", "until") if summary.get(word))
    return (
        f"last verified {finished:%Y-%m-%d %H:%M:%S} UTC ({age:.0f}s ago): "
        f"{summary['verdict']}, {summary['checked']:,} record(s) checked in {topics}{window}, "
        f"{summary['differences']:,} difference(s)"
    )
