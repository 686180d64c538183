"""`mirrorline offsets export / apply`: move a consumer group's progress to another cluster.

In a failover or failback a group's consumers stop on one cluster and start on
the other. The flow's checkpoints on the target hold the group's offsets
translated for the target; `export` writes them to a file (CSV for Kafka's own
`kafka-consumer-groups`, JSON for scripts) and `apply` commits them to the
group on the target, from the checkpoints or from such a file. `apply` keeps the
two rules of `mirrorline.group_offsets`: only a group without active members is
written to, and no partition moves backwards unless the operator says so.

This module reads the command line and the configuration and names the target
cluster; what reaches the clusters is `operations.offsets`, what people read is
`cli.offsets_render`.

Exit codes: 0 done, 1 the clusters or the group did not allow it, 2 a mistake
in the command line, the configuration or an offsets file.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from mirrorline.cli.flow_args import (
    alias_problem,
)
from mirrorline.cli.offsets_render import render_outcome, report_export, report_failure
from mirrorline.cluster_access import ClusterAccess, Unreachable
from mirrorline.config import ConfigError, MirrorConfig, load_config
from mirrorline.java_bridge import JavaCallError
from mirrorline.offset_files import OffsetsFileError, read_offsets_file, to_csv, to_json
from mirrorline.operations.failure import EXIT_FAILED, EXIT_USAGE, Failure
from mirrorline.operations.offsets import (
    apply_offsets,
    checkpointed_offsets,
    outcome_document,
)

offsets_app = typer.Typer(
    help="Export and apply consumer group offsets translated by a flow (failover, failback).",
    no_args_is_help=True,
    add_completion=False,
)


class Format(StrEnum):
    csv = "csv"
    json = "json"


ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", help="MM2-format properties file naming the clusters.")
]
TargetOption = Annotated[
    str, typer.Option("--target", "-t", help="Alias of the cluster the offsets are for.")
]
GroupOption = Annotated[str, typer.Option("--group", "-g", help="The consumer group.")]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", min=1, help="Seconds to wait for each cluster request.")
]


@offsets_app.command("export")
def export(
    config: ConfigOption,
    source: Annotated[
        str, typer.Option("--source", "-s", help="Alias of the flow's source cluster.")
    ],
    target: TargetOption,
    group: GroupOption,
    output_format: Annotated[
        Format, typer.Option("--format", "-f", help="csv (kafka-consumer-groups) or json.")
    ] = Format.csv,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Write GROUP's offsets translated for TARGET, from the flow SOURCE->TARGET's checkpoints.

    Only the offsets go to stdout (or --output); messages go to stderr. The CSV
    is what `kafka-consumer-groups --reset-offsets --from-file` reads. Exit code
    1 when the group has no checkpoints or TARGET does not answer, 2 for a
    mistake in the command or the configuration.

    \b
    Examples:
      mirrorline offsets export -c mm2.properties -s east -t west \\
          -g billing > billing.csv
      mirrorline offsets export -c mm2.properties -s east -t west \\
          -g billing --format json --output billing.json
    """
    try:
        loaded = _load(config)
        cluster = _target(loaded, target, source, timeout)
        offsets = checkpointed_offsets(loaded, source, cluster, group)
        if output_format is Format.csv:
            text = to_csv(offsets)
        else:
            generated = datetime.now(UTC)
            text = to_json(offsets, group=group, source=source, target=target, generated=generated)
        if output is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            _write(output, text)
    except (Unreachable, JavaCallError) as exc:
        _fail(Failure(str(exc), EXIT_FAILED), as_json=False)
    except Failure as failure:
        _fail(failure, as_json=False)
    report_export(offsets, group, source, target, output)


_ONE_OF_SOURCES = "One of --source or --from-file is required."
_SOURCES_PANEL = "Where the offsets come from (exactly one)"
_APPLY_USAGE = "-c FILE -t TARGET -g GROUP (--source SOURCE | --from-file PATH) [OPTIONS]"


@offsets_app.command("apply", options_metavar=_APPLY_USAGE)
def apply(
    config: ConfigOption,
    target: TargetOption,
    group: GroupOption,
    source: Annotated[
        str | None,
        typer.Option(
            "--source",
            "-s",
            help="Take the offsets from the flow SOURCE->TARGET's checkpoints. " + _ONE_OF_SOURCES,
            rich_help_panel=_SOURCES_PANEL,
        ),
    ] = None,
    from_file: Annotated[
        Path | None,
        typer.Option(
            "--from-file",
            help="Take the offsets from a CSV or JSON file that export wrote. " + _ONE_OF_SOURCES,
            rich_help_panel=_SOURCES_PANEL,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the plan; write nothing.")
    ] = False,
    allow_backwards: Annotated[
        bool,
        typer.Option(
            "--allow-backwards",
            help="Also move partitions whose committed offset is ahead of the new one.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a machine-readable JSON document.")
    ] = False,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Commit GROUP's translated offsets on TARGET, from a flow's checkpoints or from a file.

    One of --source (the checkpoints of the flow SOURCE->TARGET) or --from-file
    (a file that export wrote) is required, not both.

    Refused while GROUP has active members on TARGET: stop its consumers first.
    A partition whose committed offset is ahead of the new one is held back (its
    consumers already read further on TARGET); --allow-backwards moves it back,
    for when those consumers must read again. Every partition must exist on
    TARGET. Exit code 1 when the group is active or a cluster request fails, 2
    for a mistake in the command, the configuration or the file.

    \b
    Examples:
      mirrorline offsets apply -c mm2.properties -t west -g billing \\
          --source east --dry-run
      mirrorline offsets apply -c mm2.properties -t west -g billing \\
          --from-file billing.csv
    """
    try:
        _check_one_source(source, from_file)
        loaded = _load(config)
        cluster = _target(loaded, target, source, timeout)
        if from_file is not None:
            try:
                offsets = read_offsets_file(from_file, group=group, target=target)
            except OffsetsFileError as exc:
                raise Failure(f"{from_file} cannot be applied", EXIT_USAGE, exc.problems) from None
        elif source is not None:
            offsets = checkpointed_offsets(loaded, source, cluster, group)
        outcome = apply_offsets(cluster, group, offsets, dry_run, allow_backwards)
    except (Unreachable, JavaCallError) as exc:
        _fail(Failure(str(exc), EXIT_FAILED), as_json)
    except Failure as failure:
        _fail(failure, as_json)
    document = outcome_document(outcome, source, from_file)
    if as_json:
        typer.echo(json.dumps(document, indent=2))
    else:
        render_outcome(outcome, document)
    if outcome.refused:
        raise typer.Exit(EXIT_FAILED)


def _check_one_source(source: str | None, from_file: Path | None) -> None:
    """Exactly one of --source and --from-file: a usage error (exit code 2) otherwise."""
    usage = f"usage: mirrorline offsets apply {_APPLY_USAGE}"
    if source is None and from_file is None:
        raise Failure(
            "one of --source SOURCE (the flow's checkpoints) or --from-file PATH is required",
            EXIT_USAGE,
            (usage,),
        )
    if source is not None and from_file is not None:
        raise Failure(
            "--source and --from-file cannot be used together: give one of them",
            EXIT_USAGE,
            (usage,),
        )


# --- the configuration and the target cluster ----------------------------------------


def _target(loaded: MirrorConfig, target: str, source: str | None, timeout: float) -> ClusterAccess:
    """`target` with the flow's target clients when a flow is named, else the cluster's."""
    problem = alias_problem(loaded, (target, "--target"), (source, "--source"))
    if problem is not None:
        raise Failure(problem, EXIT_USAGE)
    try:
        if source is not None:
            flow = loaded.flow(source, target)
            admin = flow.client_settings("target", "admin")
            consumer = flow.client_settings("target", "consumer")
        else:
            cluster = loaded.clusters[target]
            admin = cluster.client_settings("admin")
            consumer = cluster.client_settings("consumer")
    except ConfigError as exc:
        raise Failure(f"{loaded.file}: {exc}", EXIT_USAGE) from None
    return ClusterAccess(target, admin=admin, consumer=consumer, timeout=timeout)


def _load(path: Path) -> MirrorConfig:
    try:
        return load_config(path)
    except ConfigError as exc:
        raise Failure(f"{path}: {exc}", EXIT_USAGE) from None


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise Failure(f"cannot write {path}: {exc.strerror}", EXIT_USAGE) from None


def _fail(failure: Failure, as_json: bool) -> NoReturn:
    report_failure(failure, as_json)
    raise typer.Exit(failure.code) from None
