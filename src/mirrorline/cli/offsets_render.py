"""How `mirrorline offsets` shows its work to people: the apply plan, failures, export counts.

`render_outcome` turns what `offsets apply` found and did (the outcome, and
the document `--json` prints instead) into a table on stdout, one row per
partition with its committed and its new offset and what happens to it, then
a summary line and, when partitions were held back or a dry run would be
refused, why. `report_failure` says why a command stopped: one line on stderr
per problem, or with `--json` one JSON document on stdout.

The offsets `export` writes are data, not messages (`offset_files`): they
alone go to stdout, so it stays a file `kafka-consumer-groups` can read, and
`report_export` counts them on stderr. Nothing here asks a cluster; the
outcome comes from `operations.offsets`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from mirrorline.cli.failover_render import console
from mirrorline.offset_files import GroupOffset
from mirrorline.operations.failure import Failure
from mirrorline.operations.offsets import (
    ApplyOutcome,
)
from mirrorline.text import counted


def render_outcome(outcome: ApplyOutcome, document: dict[str, Any]) -> None:
    """The group, a row per partition, what was (or would be) committed, and why not."""
    out = console(sys.stdout)
    before = outcome.before
    out.print(
        Text(
            f"Group {outcome.group} on {outcome.target}: {counted(before.members, 'member')} "
            f"(state {before.state}), {counted(len(before.offsets), 'committed partition')}",
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
    moved = counted(summary["moved"], "partition")
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
        console(sys.stderr).print(Text(f"✗ apply would be refused: {outcome.refused}", style="red"))


def report_export(
    offsets: Sequence[GroupOffset], group: str, source: str, target: str, output: Path | None
) -> None:
    """How many offsets `export` wrote, and where (nothing said: stdout); which were
    translated by timestamp rather than exactly."""
    where = "" if output is None else f" to {output}"
    approximate = [f"{o.topic}[{o.partition}]" for o in offsets if o.by_timestamp]
    note = (
        f"; translated by timestamp (not exactly: the data was copied before Mirrorline): "
        f"{', '.join(approximate)}"
        if approximate
        else ""
    )
    console(sys.stderr).print(
        Text(
            f"{len(offsets)} offsets of group {group} on {target} from {source}->{target}"
            f"{where}{note}"
        )
    )


def report_failure(failure: Failure, as_json: bool) -> None:
    """Why the command stopped, and each problem on a line of its own."""
    if as_json:
        document = {"ok": False, "error": str(failure), "problems": list(failure.details)}
        typer.echo(json.dumps(document, indent=2))
        return
    err = console(sys.stderr)
    err.print(Text(f"error: {failure}", style="red"))
    for detail in failure.details:
        err.print(Text(f"  {detail}"))
