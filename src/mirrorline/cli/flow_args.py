"""What the commands about one flow share: its options, loading it, and how they fail.

`topics`, `groups`, `pause`, `resume`, `stop`, `start`, `restart` and
`positions` all name a flow with `--config FILE --source A --target B`, reach
its clusters with the file's client settings, print people's messages on
stderr and, with `--json`, one JSON document on stdout.

Exit codes: 0 done, 1 the clusters refused or the flow's state does not allow
it, 2 a mistake in the command line or the configuration.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from mirrorline.config import ConfigError, MirrorConfig, load_config
from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.model import FlowConfig
from mirrorline.control.control_store import ControlStore
from mirrorline.flow_context import side_clients
from mirrorline.java_bridge import JavaCallError
from mirrorline.kafka import ClusterClients, KafkaOperationError
from mirrorline.operations.failure import EXIT_FAILED, EXIT_USAGE, Failure

ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", help="MM2-format properties file naming the clusters.")
]
SourceOption = Annotated[str, typer.Option("--source", "-s", help="The flow's source alias.")]
TargetOption = Annotated[str, typer.Option("--target", "-t", help="The flow's target alias.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", min=1, help="Seconds to wait for the clusters and drivers.")
]


@dataclass(frozen=True)
class FlowTarget:
    """A flow named on the command line, and the clients of its two clusters."""

    config: MirrorConfig
    flow: FlowConfig
    source: ClusterClients
    target: ClusterClients

    def control(self) -> ControlStore:
        return ControlStore(self.target, replication_factor=_replication_factor(self.flow))

    def close(self) -> None:
        self.source.close()
        self.target.close()


def err() -> Console:
    return Console(stderr=True, highlight=False)


def say(message: str) -> None:
    err().print(Text(message))


def emit_json(document: Any) -> None:
    typer.echo(json.dumps(document, indent=2, sort_keys=True))


@contextmanager
def flow_target(config: Path, source: str, target: str) -> Iterator[FlowTarget]:
    """The flow SOURCE->TARGET of `config` with clients of both its clusters."""
    try:
        loaded = load_config(config)
    except ConfigError as exc:
        raise Failure(f"{config}: {exc}", EXIT_USAGE) from None
    problem = alias_problem(loaded, (source, "--source"), (target, "--target"))
    if problem is not None:
        raise Failure(problem, EXIT_USAGE)
    flow = loaded.flow(source, target)
    try:
        clients = FlowTarget(
            loaded, flow, side_clients(flow, "source"), side_clients(flow, "target")
        )
    except ConfigError as exc:
        raise Failure(f"{config}: flow {flow.name}: {exc}", EXIT_USAGE) from None
    try:
        yield clients
    finally:
        clients.close()


def alias_problem(loaded: MirrorConfig, *named: tuple[str | None, str]) -> str | None:
    """What is wrong with the clusters a command names ((alias, option) pairs, a missing
    optional one as None): an alias the file lacks, or twice the same; None when nothing is."""
    for alias, option in named:
        if alias is not None and alias not in loaded.clusters:
            return (
                f"{loaded.file} has no cluster {alias} ({option}); its clusters: "
                f"{', '.join(loaded.clusters)}"
            )
    given = [(alias, option) for alias, option in named if alias is not None]
    if len(given) == 2 and given[0][0] == given[1][0]:
        return f"{given[0][1]} and {given[1][1]} are both {given[0][0]}: name two clusters"
    return None


@contextmanager
def failures(as_json: bool) -> Iterator[None]:
    """Turn a `Failure` or a cluster error into its message and exit code."""
    try:
        yield
    except Failure as failure:
        _report(str(failure), failure.code, as_json)
    except (KafkaOperationError, JavaCallError) as exc:  # a cluster, or a file's Java class
        _report(str(exc), EXIT_FAILED, as_json)


def _report(message: str, code: int, as_json: bool) -> None:
    if as_json:
        emit_json({"ok": False, "error": message})
    err().print(Text.assemble(("error: ", "red"), message))
    raise typer.Exit(code)


def _replication_factor(flow: FlowConfig) -> int:
    return FlowSettings.of(flow).replication_factor
