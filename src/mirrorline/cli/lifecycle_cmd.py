"""`mirrorline pause|resume|stop|start|restart`: one flow's lifecycle, for every driver.

Each command writes the flow's wanted state to its control records on the
target (`control.flow_control`) and waits until the leading driver reports
that state (`operations.flow_reports`), showing what it waits for. The state
outlives drivers: a driver that starts later honours it before replicating.

- `pause`: the query stays, holding its Spark resources, and writes nothing;
  positions stay where they are and the lag grows.
- `resume`: a paused flow writes again and catches up.
- `stop`: the query ends and its Spark resources are released.
- `start`: a stopped (or paused) flow replicates again from its progress.
- `restart`: the query stops and starts again from the saved progress.

Consumer-group checkpoints go on in every state, up to what was replicated.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console

from mirrorline.cli.flow_args import (
    ConfigOption,
    FlowTarget,
    JsonOption,
    SourceOption,
    TargetOption,
    TimeoutOption,
    emit_json,
    failures,
    flow_target,
    say,
)
from mirrorline.control.flow_control import State
from mirrorline.operations.failure import Failure
from mirrorline.operations.flow_reports import FlowReports
from mirrorline.service.replications import Replication

NoWaitOption = Annotated[
    bool, typer.Option("--no-wait", help="Write the change and return without waiting.")
]


def _lifecycle(
    name: str, state: State, doc: str, *, restart: bool = False, allowed: tuple[State, ...] = ()
) -> Callable[..., None]:
    """The command `name`: ask for `state` (from `allowed` states only, when given)."""

    def command(
        config: ConfigOption,
        source: SourceOption,
        target: TargetOption,
        no_wait: NoWaitOption = False,
        as_json: JsonOption = False,
        timeout: TimeoutOption = 60.0,
    ) -> None:
        _change(config, source, target, state, restart, no_wait, as_json, timeout, allowed)

    command.__name__ = name
    command.__doc__ = doc
    return command


pause = _lifecycle(
    "pause",
    "paused",
    "Pause the flow SOURCE->TARGET: it keeps its query and positions and writes nothing.",
    allowed=("running",),
)
resume = _lifecycle(
    "resume",
    "running",
    "Resume the paused flow SOURCE->TARGET; it catches up from where it paused.",
    allowed=("paused",),
)
stop = _lifecycle(
    "stop",
    "stopped",
    "Stop the flow SOURCE->TARGET: its query ends and releases its Spark resources.",
)
start = _lifecycle(
    "start",
    "running",
    "Start the stopped (or paused) flow SOURCE->TARGET from its saved progress.",
)
restart = _lifecycle(
    "restart",
    "running",
    "Restart the flow SOURCE->TARGET's query from its saved progress (it runs afterwards).",
    restart=True,
)


def _change(
    config: ConfigOption,
    source: str,
    target: str,
    state: State,
    restart_query: bool,
    no_wait: bool,
    as_json: bool,
    timeout: float,
    allowed: tuple[State, ...],
) -> None:
    with failures(as_json), flow_target(config, source, target) as ft:
        if not ft.flow.enabled:
            raise Failure(
                f"flow {ft.flow.name} is not enabled in {config} "
                f"(set {ft.flow.name}.enabled = true); no driver runs it"
            )
        store = ft.control()
        try:
            before = store.read(ft.flow.name, timeout)
            if allowed and before.state not in allowed:
                raise Failure(
                    f"flow {ft.flow.name} is {before.state}, not {' or '.join(allowed)}"
                    + ("; use `mirrorline start`" if before.state == "stopped" else "")
                )
            since = int(time.time() * 1000)
            store.set_state(
                ft.flow.name, state, restart=restart_query, current=before, timeout=timeout
            )
        finally:
            store.close()
        report = None if no_wait else _wait(ft, state, since, timeout, as_json)
        driver = None if report is None else report.active_driver or report.reported_by
        document = {
            "ok": True,
            "flow": ft.flow.name,
            "wanted": state,
            "was": before.state,
            "reported": None if report is None else report.state,
            "driver": driver,
        }
        if as_json:
            emit_json(document)
        elif report is not None:
            say(f"flow {ft.flow.name} is {report.state} (driver {driver})")


def _wait(
    ft: FlowTarget, state: State, since: int, timeout: float, quiet: bool
) -> Replication | None:
    """The leading driver's report of `state`; None when no driver runs the flow."""
    console = Console(stderr=True, quiet=quiet)
    with FlowReports(ft.config, ft.flow) as reports:
        current = reports.replication()
        if current is None or current.state == "unknown":
            say(
                f"saved on {ft.flow.target}; no driver reports flow {ft.flow.name} now: "
                "drivers apply it when they start"
            )
            return None
        with console.status(f"waiting for the driver of {ft.flow.name} to report {state}"):
            report = reports.wait_for((state,), since_ms=since, timeout=timeout)
    if report is None:
        raise Failure(
            f"saved on {ft.flow.target}, but no driver reported flow {ft.flow.name} "
            f"{state} within {timeout:.0f}s; see `mirrorline status`"
        )
    return report
