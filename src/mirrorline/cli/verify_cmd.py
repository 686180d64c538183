"""`mirrorline verify`: prove that a flow's copy is complete, or show where it is not.

The work is `verification.run.verify_flow`; this module reads the command
line, shows progress on stderr (a bar on a terminal, nothing under `--json`)
and prints the report: a table per topic, then the first offsets of each
finding per partition, or with `--json` the report's document. The summary
(time, range, counts, verdict) is then kept on the target for the service
(`verification.summary`); a target that refuses it costs a warning only.

Exit codes: 0 the copy is identical over the range, 1 it differs, 2 the
command line, the configuration or the flow does not allow a verification
(unknown cluster or topic, transforms that change records, a cluster that
does not answer).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from mirrorline.cli.flow_args import (
    ConfigOption,
    FlowTarget,
    JsonOption,
    SourceOption,
    TargetOption,
    TimeoutOption,
    emit_json,
    flow_target,
)
from mirrorline.cluster_access import ClusterAccess
from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.model import FlowConfig, Side
from mirrorline.java_bridge import JavaCallError
from mirrorline.kafka import ClusterClients, KafkaOperationError
from mirrorline.operations.failure import EXIT_FAILED, EXIT_USAGE, Failure
from mirrorline.verification.ranges import parse_when
from mirrorline.verification.report import KINDS, VerifyReport, topic_summary
from mirrorline.verification.run import VerifyRefused, Window, refuse_transforms, verify_flow
from mirrorline.verification.summary import VerificationSummary, save_summary

TopicsOption = Annotated[
    str | None,
    typer.Option(
        "--topics",
        help="Only these source topics: names or regular expressions, comma-separated.",
    ),
]
WhenHelp = "ISO-8601 time with a zone, epoch ms, or a duration ago (30m, 1h, 2d)."


def verify(
    config: ConfigOption,
    source: SourceOption,
    target: TargetOption,
    topics: TopicsOption = None,
    since: Annotated[
        str | None, typer.Option("--since", help=f"Check records from this time on. {WhenHelp}")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help=f"Check records before this time. {WhenHelp}")
    ] = None,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Prove the flow SOURCE->TARGET's copy complete: every source record in the range has
    exactly one copy on the remote topic, with equal key, value, headers and timestamp.

    Compared through the flow's exact offset mapping, from the start of what the flow
    copied up to its saved progress (records past it are "not yet copied"). Exit code 0
    identical, 1 different, 2 a usage or configuration error.

    \b
    Examples:
      mirrorline verify -c mm2.properties -s east -t west
      mirrorline verify -c mm2.properties -s east -t west --topics orders --since 1h --json
    """
    try:
        now = int(time.time() * 1000)
        window = Window(_when(since, "--since", now), _when(until, "--until", now), since, until)
        with flow_target(config, source, target) as ft:
            refuse_transforms(ft.flow)  # before any cluster is asked
            with _quiet(ft, timeout) as (src, dst):
                with _bar(as_json) as bar:
                    report = verify_flow(
                        ft.flow, src, dst, topics=topics, window=window, progress=bar,
                        timeout=timeout,
                    )  # fmt: skip
                recorded = _record(ft.flow, dst, report, topics, timeout)
    except Failure as failure:
        _fail(str(failure), EXIT_USAGE, as_json)
    except (VerifyRefused, KafkaOperationError, JavaCallError) as exc:
        _fail(str(exc), EXIT_USAGE, as_json)
    if as_json:
        emit_json({**report.to_dict(), "recorded": recorded})
    else:
        render(report, Console(highlight=False, width=None if sys.stdout.isatty() else 200))
    raise typer.Exit(0 if report.identical else EXIT_FAILED)


@contextmanager
def _quiet(ft: FlowTarget, timeout: float) -> Iterator[tuple[ClusterClients, ClusterClients]]:
    """The flow's two clusters, checked to answer within `timeout` (`Unreachable` names the
    one that does not, with the client's reason), with clients whose logs stay quiet."""
    named: tuple[tuple[Side, str], ...] = (("source", ft.flow.source), ("target", ft.flow.target))
    sides = [
        ClusterAccess(
            alias,
            admin=ft.flow.client_settings(side, "admin"),
            consumer=ft.flow.client_settings(side, "consumer"),
            producer=ft.flow.client_settings(side, "producer"),
            timeout=timeout,
        )
        for side, alias in named
    ]
    try:
        for access in sides:
            access.topics()
        yield sides[0].clients(), sides[1].clients()
    finally:
        for access in sides:
            access.close()


def _record(
    flow: FlowConfig,
    target: ClusterClients,
    report: VerifyReport,
    topics: str | None,
    timeout: float,
) -> bool:
    """Keep the verification's summary on the target for the service; whether it was."""
    try:
        save_summary(
            flow.name,
            target,
            VerificationSummary.of(report, topics),
            replication_factor=FlowSettings.of(flow).replication_factor,
            timeout=timeout,
        )
        return True
    except KafkaOperationError as exc:
        Console(stderr=True, highlight=False).print(
            Text(f"warning: the verification is not recorded for the service: {exc}")
        )
        return False


def render(report: VerifyReport, out: Console) -> None:
    """The report for people: a summary per topic, then each partition's findings."""
    table = Table(title=f"verify {report.flow}{_range(report)}")
    columns = ("topic", "checked", *KINDS, "not yet copied", "not covered")
    for column in columns:
        table.add_column(column, justify="left" if column == "topic" else "right")
    grouped = report.topics()
    for topic, parts in grouped.items():
        s = topic_summary(parts)
        table.add_row(
            topic,
            *(str(s[k]) for k in ("checked", *KINDS, "not_yet_copied", "not_covered")),
        )
    out.print(table)
    for parts in grouped.values():
        for p in parts:
            for kind in KINDS:
                findings = getattr(p, kind)
                if findings.count:
                    shown = ", ".join(_entry(kind, e) for e in findings.first)
                    more = "" if findings.count <= len(findings.first) else ", ..."
                    out.print(
                        Text(f"{p.topic}[{p.partition}] {kind} ({findings.count}): {shown}{more}")
                    )
    totals = report.totals()
    notes = []
    if totals["not_yet_copied"]:
        notes.append(f"{totals['not_yet_copied']} offsets not yet copied (past the progress)")
    if totals["not_covered"]:
        notes.append(
            f"{totals['not_covered']} offsets not covered by an exact mapping "
            "(before the flow's first run), not compared"
        )
    if totals["skipped_by_flow"]:
        notes.append(f"{totals['skipped_by_flow']} records skipped by loop prevention")
    if totals["source_removed"]:
        notes.append(f"{totals['source_removed']} copies whose source record is gone")
    for note in notes:
        out.print(Text(note, style="dim"))
    if report.identical:
        out.print(Text(f"identical: {report.checked} records checked", style="green"))
    else:
        out.print(
            Text(
                f"{report.differences} differences in {report.checked} records checked",
                style="red",
            )
        )


def _entry(kind: str, e: dict[str, Any]) -> str:
    if kind == "missing":
        return f"{e['source_offset']}" + (
            f"→{e['target_offset']}" if e["target_offset"] is not None else " (no run)"
        )
    if kind == "extra":
        dup = e["duplicate_of"]
        return f"@{e['target_offset']}" + (f" (copy of {dup})" if dup is not None else "")
    if kind == "different":
        return f"{e['source_offset']}→{e['target_offset']} ({'/'.join(e['fields'])})"
    return f"{e['source_offset']}→{e['target_offset']} (at {e['found_at']})"


def _range(report: VerifyReport) -> str:
    parts = [f"since {report.since}" if report.since else ""]
    parts.append(f"until {report.until}" if report.until else "")
    shown = ", ".join(p for p in parts if p)
    return f" ({shown})" if shown else ""


def _when(text: str | None, option: str, now_ms: int) -> int | None:
    if text is None:
        return None
    try:
        return parse_when(text, now_ms)
    except ValueError as exc:
        raise Failure(f"{option} {text}: {exc}", EXIT_USAGE) from None


def _fail(message: str, code: int, as_json: bool) -> None:
    if as_json:
        emit_json({"ok": False, "error": message})
    Console(stderr=True, highlight=False).print(Text.assemble(("error: ", "red"), message))
    raise typer.Exit(code)


class _Bar:
    """Records read of the total, on a terminal's stderr."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task = progress.add_task("verifying", total=None)

    def start(self, total: int) -> None:
        self._progress.update(self._task, total=total)

    def advance(self, offsets: int) -> None:
        self._progress.update(self._task, advance=offsets)


@contextmanager
def _bar(as_json: bool) -> Iterator[_Bar | None]:
    if as_json or not sys.stderr.isatty():
        yield None
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with progress:
        yield _Bar(progress)
