"""`mirrorline positions show|set`: where a flow reads each source partition, and moving it.

`show` prints each partition's saved position (the next source offset the
flow replicates), the source log's start and end, and the lag. `set` moves a
stopped flow: the offsets are resolved and checked here, written as a
position request to the flow's control records, and saved as the flow's
progress by its leading driver (`engine.lifecycle`); the flow then starts
from them (`mirrorline start`). `set` refuses a flow that is not stopped.

Offsets files: JSON as `show --json` prints it (``{"positions": [{"topic": …,
"partition": …, "offset": …}, …]}``) or CSV lines `topic,partition,offset`.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

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
from mirrorline.config.start_position import StartPosition, parse_start_position
from mirrorline.engine.progress import SourcePartition
from mirrorline.operations.failure import EXIT_USAGE, Failure
from mirrorline.operations.positions import read_positions, replicated_partitions, resolve

positions_app = typer.Typer(
    help="Show or set where a flow reads each source partition (Kafka Connect's offsets API).",
    no_args_is_help=True,
    add_completion=False,
)

TopicOption = Annotated[
    str | None, typer.Option("--topic", help="Only this source topic's partitions.")
]


@positions_app.command("show")
def show(
    config: ConfigOption,
    source: SourceOption,
    target: TargetOption,
    topic: TopicOption = None,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Print each source partition's saved position, log start and end, and lag."""
    with failures(as_json), flow_target(config, source, target) as ft:
        store = ft.control()
        try:
            control = store.read(ft.flow.name, timeout)
        finally:
            store.close()
        flow = control.effective(ft.flow)
        rows = read_positions(flow, ft.source, ft.target, topic=topic, timeout=timeout)
        if as_json:
            emit_json(
                {
                    "flow": flow.name,
                    "state": control.state,
                    "positions": [r.to_dict() for r in rows],
                    "pending": control.to_dict()["pending_positions"],
                }
            )
            return
        table = Table(title=f"{flow.name} ({control.state})")
        for column in ("topic", "partition", "position", "log start", "log end", "lag"):
            table.add_column(column, justify="left" if column == "topic" else "right")
        for r in rows:
            position = "-" if r.next_offset is None else str(r.next_offset)
            table.add_row(
                r.topic,
                str(r.partition),
                position,
                str(r.log_start),
                str(r.log_end),
                str(r.lag),
            )
        Console().print(table)
        if control.positions is not None:
            say(
                "a position request is pending: "
                "the flow's leader saves it while the flow is stopped"
            )


@positions_app.command("set")
def set_positions(
    config: ConfigOption,
    source: SourceOption,
    target: TargetOption,
    topic: TopicOption = None,
    earliest: Annotated[bool, typer.Option("--earliest", help="The log start.")] = False,
    latest: Annotated[bool, typer.Option("--latest", help="The log end.")] = False,
    timestamp: Annotated[
        str | None,
        typer.Option(
            "--timestamp",
            help="The first record at or after this time (ISO-8601 with a zone, or epoch ms).",
        ),
    ] = None,
    offsets: Annotated[
        Path | None,
        typer.Option("--offsets", help="Offsets from a file (JSON as `show --json`, or CSV)."),
    ] = None,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Move the stopped flow SOURCE->TARGET to new source offsets (one of the four choices).

    Refused unless the flow is stopped (`mirrorline stop`). The flow's leading
    driver saves the offsets as its progress; `mirrorline start` then
    replicates from them. Records before them are not replicated, records
    after them already on the target are written again.

    \b
    Examples:
      mirrorline positions set -c mm2.properties -s east -t west \\
          --timestamp 2024-05-01T08:00:00Z
      mirrorline positions set -c mm2.properties -s east -t west --offsets saved.json
    """
    with failures(as_json):
        position = _position(earliest, latest, timestamp, offsets)
        explicit = _read_offsets(offsets) if offsets is not None else None
        with flow_target(config, source, target) as ft:
            _set(ft, position, explicit, topic, as_json, timeout)


def _set(
    ft: FlowTarget,
    position: StartPosition,
    explicit: dict[SourcePartition, int] | None,
    topic: str | None,
    as_json: bool,
    timeout: float,
) -> None:
    store = ft.control()
    try:
        control = store.read(ft.flow.name, timeout)
        if control.state != "stopped":
            raise Failure(
                f"flow {ft.flow.name} is {control.state}: positions are set only on a stopped "
                f"flow; run `mirrorline stop -c {ft.config.file} -s {ft.flow.source} "
                f"-t {ft.flow.target}` first"
            )
        flow = control.effective(ft.flow)
        partitions = replicated_partitions(flow, ft.source, timeout)
        if topic is not None:
            partitions = [tp for tp in partitions if tp[0] == topic]
            if not partitions:
                raise Failure(f"--topic {topic}: the flow {flow.name} replicates no such topic")
        if explicit is not None and topic is not None:
            explicit = {tp: o for tp, o in explicit.items() if tp[0] == topic}
        try:
            resolved = resolve(position, partitions, ft.source, explicit=explicit, timeout=timeout)
        except ValueError as exc:
            raise Failure(str(exc), EXIT_USAGE) from None
        request = store.request_positions(flow.name, resolved, timeout)
        with Console(stderr=True, quiet=as_json).status(
            "waiting for the flow's leader to save them"
        ):
            applied = store.wait_saved(ft.flow.name, request.id, timeout)
    finally:
        store.close()
    if as_json:
        emit_json(
            {
                "ok": True,
                "flow": ft.flow.name,
                "applied": applied,
                "positions": [
                    {"topic": t, "partition": p, "offset": o}
                    for (t, p), o in sorted(resolved.items())
                ],
            }
        )
    else:
        for (t, p), o in sorted(resolved.items()):
            typer.echo(f"{t}[{p}] -> {o}")
        if applied:
            say(
                f"saved as flow {ft.flow.name}'s progress; `mirrorline start` replicates from there"
            )
        else:
            say(
                f"no driver saved it within {timeout:.0f}s: the flow's leader saves it when it "
                "runs, before the flow starts"
            )


def _position(
    earliest: bool, latest: bool, timestamp: str | None, offsets: Path | None
) -> StartPosition:
    chosen = [earliest, latest, timestamp is not None, offsets is not None]
    if sum(chosen) != 1:
        raise Failure(
            "give exactly one of --earliest, --latest, --timestamp, --offsets", EXIT_USAGE
        )
    if earliest:
        return StartPosition(kind="earliest")
    if latest:
        return StartPosition(kind="latest")
    if timestamp is not None:
        try:
            parsed = parse_start_position(timestamp)
        except ValueError as exc:
            raise Failure(f"--timestamp {timestamp}: {exc}", EXIT_USAGE) from None
        if parsed.kind != "timestamp":
            raise Failure(f"--timestamp {timestamp}: not a time", EXIT_USAGE)
        return parsed
    return StartPosition(kind="offsets")


def _read_offsets(path: Path) -> dict[SourcePartition, int]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Failure(f"--offsets {path}: cannot read: {exc}", EXIT_USAGE) from None
    try:
        if text.lstrip().startswith("{"):
            entries = [
                [e.get("topic"), e.get("partition"), e.get("offset")]
                for e in json.loads(text)["positions"]
            ]
        else:
            entries = [row for row in csv.reader(io.StringIO(text)) if row]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise Failure(f"--offsets {path}: not an offsets file ({exc})", EXIT_USAGE) from None
    result: dict[SourcePartition, int] = {}
    for number, entry in enumerate(entries, 1):
        if len(entry) == 3 and entry[2] is None:
            continue  # `show --json` lists partitions never replicated without an offset
        try:
            topic, partition, offset = entry
            result[(str(topic).strip(), int(partition))] = int(offset)
        except (ValueError, TypeError) as exc:
            raise Failure(
                f"--offsets {path}: entry {number} is not topic, partition, offset ({exc})",
                EXIT_USAGE,
            ) from None
    if not result:
        raise Failure(f"--offsets {path}: no offsets in the file", EXIT_USAGE)
    return result
