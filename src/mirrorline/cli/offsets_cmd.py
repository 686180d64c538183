"""`mirrorline offsets export / apply`: move a consumer group's progress to another cluster.

In a failover or failback a group's consumers stop on one cluster and start on
the other. The flow's checkpoints on the target hold the group's offsets
translated for the target; `export` writes them to a file (CSV for Kafka's own
`kafka-consumer-groups`, JSON for scripts) and `apply` commits them to the
group on the target, from the checkpoints or from such a file. `apply` keeps the
two rules of `mirrorline.group_offsets`: only a group without active members is
written to, and no partition moves backwards unless the operator says so.

Exit codes: 0 done, 1 the clusters or the group did not allow it, 2 a mistake
in the command line, the configuration or an offsets file.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mirrorline.checkpoints import read_checkpoints
from mirrorline.cli.flow_args import alias_problem
from mirrorline.cluster_access import ClusterAccess, Unreachable
from mirrorline.config import ConfigError, MirrorConfig, load_config
from mirrorline.group_offsets import (
    GroupOnCluster,
    MovePlan,
    OffsetAndMetadata,
    plan_moves,
)
from mirrorline.kafka import KafkaOperationError
from mirrorline.offset_files import (
    GroupOffset,
    OffsetsFileError,
    read_offsets_file,
    to_csv,
    to_json,
)

EXIT_FAILED = 1  # the clusters or the group did not allow it
EXIT_USAGE = 2  # the command line, the configuration or a file is wrong (as Typer's usage errors)

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


class _Failure(Exception):
    """Why a command stops: a message, its exit code and, for lists, one line per problem."""

    def __init__(self, message: str, code: int, details: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


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
        offsets = _checkpointed(loaded, source, cluster, group)
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
    except Unreachable as exc:
        _report_failure(_Failure(str(exc), EXIT_FAILED), as_json=False)
        raise typer.Exit(EXIT_FAILED) from None
    except _Failure as failure:
        _report_failure(failure, as_json=False)
        raise typer.Exit(failure.code) from None
    where = "" if output is None else f" to {output}"
    _err().print(
        Text(f"{len(offsets)} offsets of group {group} on {target} from {source}->{target}{where}")
    )


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
                raise _Failure(f"{from_file} cannot be applied", EXIT_USAGE, exc.problems) from None
        elif source is not None:
            offsets = _checkpointed(loaded, source, cluster, group)
        outcome = _apply(cluster, group, offsets, dry_run, allow_backwards)
    except Unreachable as exc:
        _report_failure(_Failure(str(exc), EXIT_FAILED), as_json)
        raise typer.Exit(EXIT_FAILED) from None
    except _Failure as failure:
        _report_failure(failure, as_json)
        raise typer.Exit(failure.code) from None
    document = _outcome_document(outcome, source, from_file)
    if as_json:
        typer.echo(json.dumps(document, indent=2))
    else:
        _render_outcome(outcome, document)
    if outcome.refused:
        raise typer.Exit(EXIT_FAILED)


def _check_one_source(source: str | None, from_file: Path | None) -> None:
    """Exactly one of --source and --from-file: a usage error (exit code 2) otherwise."""
    usage = f"usage: mirrorline offsets apply {_APPLY_USAGE}"
    if source is None and from_file is None:
        raise _Failure(
            "one of --source SOURCE (the flow's checkpoints) or --from-file PATH is required",
            EXIT_USAGE,
            (usage,),
        )
    if source is not None and from_file is not None:
        raise _Failure(
            "--source and --from-file cannot be used together: give one of them",
            EXIT_USAGE,
            (usage,),
        )


@dataclass(frozen=True)
class _Outcome:
    """What `apply` found and did."""

    target: str
    group: str
    before: GroupOnCluster
    wanted: dict[tuple[str, int], OffsetAndMetadata]
    plan: MovePlan
    dry_run: bool
    allow_backwards: bool
    written: bool = False  # offsets were committed
    refused: str | None = None  # why a dry run's offsets could not be written now


def _apply(
    target: ClusterAccess,
    group: str,
    offsets: list[GroupOffset],
    dry_run: bool,
    allow_backwards: bool,
) -> _Outcome:
    _check_partitions(target, group, offsets)
    wanted = {(o.topic, o.partition): OffsetAndMetadata(o.offset, o.metadata) for o in offsets}
    before = target.describe(group, wanted)
    plan = plan_moves(before.offsets, wanted, allow_backwards=allow_backwards)
    refused = _active_message(before, target.alias) if before.active else None
    if refused and not dry_run:
        raise _Failure(refused, EXIT_FAILED)
    outcome = _Outcome(
        target.alias, group, before, wanted, plan, dry_run, allow_backwards, refused=refused
    )
    if dry_run or not plan.moves:
        return outcome
    try:
        target.commit(group, plan.moves)
    except KafkaOperationError as exc:  # ActiveGroupError too: members joined meanwhile
        raise _Failure(f"{target.alias}: {exc}", EXIT_FAILED) from None
    # Read back: a consumer that joined and committed meanwhile would be missed otherwise.
    after = target.describe(group, plan.moves).offsets
    differ = []
    for (topic, partition), offset in sorted(plan.moves.items()):
        now = after.get((topic, partition))
        if now is None or now.offset != offset.offset:
            found = "none" if now is None else now.offset
            differ.append(f"{topic} partition {partition}: {found} instead of {offset.offset}")
    if differ:
        raise _Failure(
            f"group {group} on {target.alias} does not have the offsets just committed "
            "(did a consumer commit meanwhile?)",
            EXIT_FAILED,
            tuple(differ),
        )
    return replace(outcome, written=True)


def _active_message(group: GroupOnCluster, target: str) -> str:
    return (
        f"consumer group {group.group} has {_count(group.members, 'active member')} on "
        f"{target} (state {group.state}): stop its consumers first, their offsets are "
        "theirs to commit"
    )


# --- the target cluster -------------------------------------------------------------


def _target(loaded: MirrorConfig, target: str, source: str | None, timeout: float) -> ClusterAccess:
    """`target` with the flow's target clients when a flow is named, else the cluster's."""
    problem = alias_problem(loaded, (target, "--target"), (source, "--source"))
    if problem is not None:
        raise _Failure(problem, EXIT_USAGE)
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
        raise _Failure(f"{loaded.file}: {exc}", EXIT_USAGE) from None
    return ClusterAccess(target, admin=admin, consumer=consumer, timeout=timeout)


def _load(path: Path) -> MirrorConfig:
    try:
        return load_config(path)
    except ConfigError as exc:
        raise _Failure(f"{path}: {exc}", EXIT_USAGE) from None


def _checkpointed(
    loaded: MirrorConfig, source: str, target: ClusterAccess, group: str
) -> list[GroupOffset]:
    """The group's offsets from the flow's latest checkpoints on the target."""
    flow = loaded.flow(source, target.alias)
    topic = flow.checkpoints_topic
    if topic not in target.topics():
        raise _Failure(
            f"{target.alias} has no topic {topic}: the flow {flow.name} has written no "
            "checkpoints there (is it running, with emit.checkpoints.enabled = true?)",
            EXIT_FAILED,
        )
    try:
        checkpoints = read_checkpoints(target.consumer_settings, topic, timeout=target.timeout)
    except KafkaOperationError as exc:
        raise _Failure(f"{target.alias}: {exc}", EXIT_FAILED) from None
    offsets = [
        GroupOffset.from_checkpoint(c)
        for (g, _, _), c in sorted(checkpoints.items())
        # A negative downstream offset is no offset: MM2 writes none, never commit one.
        if g == group and c.downstream_offset >= 0
    ]
    if not offsets:
        groups = sorted({g for g, _, _ in checkpoints})
        listed = ", ".join(groups[:10])
        if len(groups) > 10:
            listed += f" and {len(groups) - 10} more"
        has = f"groups with checkpoints: {listed}" if groups else "it holds no checkpoints yet"
        raise _Failure(
            f"no checkpoints of group {group} in {topic} on {target.alias} ({has})", EXIT_FAILED
        )
    return offsets


def _check_partitions(target: ClusterAccess, group: str, offsets: list[GroupOffset]) -> None:
    """Every partition exists on the target, and no offset is past its end.

    An offset past the end would make the group's consumers reset to
    `auto.offset.reset` on their first fetch; it usually means offsets made for
    another cluster.
    """
    topics = target.topics()
    problems: list[str] = []
    present: list[tuple[str, int]] = []
    for o in offsets:
        count = topics.get(o.topic)
        if count is None:
            missing = f"topic {o.topic} does not exist on {target.alias}"
            if missing not in problems:
                problems.append(missing)
        elif not 0 <= o.partition < count:
            problems.append(
                f"{o.topic} has no partition {o.partition} on {target.alias} (it has {count})"
            )
        else:
            present.append((o.topic, o.partition))
    ends = target.end_offsets(present)
    problems += [
        f"{o.topic} partition {o.partition}: offset {o.offset} is past the end of the "
        f"partition on {target.alias} ({ends[(o.topic, o.partition)]}); are these offsets "
        "for another cluster?"
        for o in offsets
        if (o.topic, o.partition) in ends and o.offset > ends[(o.topic, o.partition)]
    ]
    if problems:
        raise _Failure(
            f"cannot apply the offsets of group {group} to {target.alias}",
            EXIT_FAILED,
            tuple(problems),
        )


# --- output -------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _Failure(f"cannot write {path}: {exc.strerror}", EXIT_USAGE) from None


def _actions(outcome: _Outcome) -> dict[tuple[str, int], str]:
    """Each partition's fate: set, forward, backwards, unchanged or held back."""
    committed = outcome.before.offsets
    actions: dict[tuple[str, int], str] = {}
    for tp, offset in outcome.plan.moves.items():
        current = committed.get(tp)
        if current is None:
            actions[tp] = "set"
        else:
            actions[tp] = "forward" if current.offset < offset.offset else "backwards"
    actions.update({tp: "unchanged" for tp in outcome.plan.unchanged})
    actions.update({tp: "held back" for tp in outcome.plan.held_back})
    return actions


def _outcome_document(
    outcome: _Outcome, source: str | None, from_file: Path | None
) -> dict[str, Any]:
    actions = _actions(outcome)
    committed = outcome.before.offsets
    plan = outcome.plan
    return {
        "ok": outcome.refused is None,
        "group": outcome.group,
        "target": outcome.target,
        "source": source,
        "from_file": str(from_file) if from_file is not None else None,
        "dry_run": outcome.dry_run,
        "allow_backwards": outcome.allow_backwards,
        "group_state": outcome.before.state,
        "members": outcome.before.members,
        "written": outcome.written,
        "refused": outcome.refused,
        "summary": {
            "moved": len(plan.moves),
            "unchanged": len(plan.unchanged),
            "held_back": len(plan.held_back),
        },
        "partitions": [
            {
                "topic": topic,
                "partition": partition,
                "committed": committed[(topic, partition)].offset
                if (topic, partition) in committed
                else None,
                "offset": offset.offset,
                "action": actions[(topic, partition)].replace(" ", "_"),
            }
            for (topic, partition), offset in sorted(outcome.wanted.items())
        ],
    }


def _render_outcome(outcome: _Outcome, document: dict[str, Any]) -> None:
    out = _console(sys.stdout)
    before = outcome.before
    out.print(
        Text(
            f"Group {outcome.group} on {outcome.target}: {_count(before.members, 'member')} "
            f"(state {before.state}), {_count(len(before.offsets), 'committed partition')}",
            style="bold",
        )
    )
    table = Table()
    table.add_column("topic")
    table.add_column("partition", justify="right")
    table.add_column("committed", justify="right")
    table.add_column("new offset", justify="right")
    table.add_column("action")
    styles = {"held_back": "yellow", "backwards": "magenta", "unchanged": "dim"}
    for row in document["partitions"]:
        action = row["action"]
        table.add_row(
            row["topic"],
            str(row["partition"]),
            "-" if row["committed"] is None else str(row["committed"]),
            str(row["offset"]),
            Text(action.replace("_", " "), style=styles.get(action, "green")),
        )
    out.print(table)
    summary = document["summary"]
    counts = f"{summary['unchanged']} unchanged, {summary['held_back']} held back"
    moved = _count(summary["moved"], "partition")
    if outcome.written:
        out.print(Text(f"✓ committed {moved}; {counts}", style="bold green"))
    elif outcome.dry_run:
        out.print(Text(f"dry run: would commit {moved}; {counts}", style="bold"))
    else:
        out.print(Text(f"✓ nothing to commit; {counts}", style="bold green"))
    if summary["held_back"]:
        out.print(
            Text(
                f"Held back: the group's committed offset is ahead of the new one (its "
                f"consumers already read further on {outcome.target}). --allow-backwards "
                "moves them back, and its consumers read those records again.",
                style="yellow",
            )
        )
    if outcome.refused:
        _err().print(Text(f"✗ apply would be refused: {outcome.refused}", style="red"))


def _report_failure(failure: _Failure, as_json: bool) -> None:
    if as_json:
        document = {"ok": False, "error": str(failure), "problems": list(failure.details)}
        typer.echo(json.dumps(document, indent=2))
        return
    err = _err()
    err.print(Text(f"error: {failure}", style="red"))
    for detail in failure.details:
        err.print(Text(f"  {detail}"))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _console(stream: Any) -> Console:
    # Outside a terminal, tables keep their natural width instead of folding at 80 columns.
    width = None if stream.isatty() else 1000
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def _err() -> Console:
    return _console(sys.stderr)
