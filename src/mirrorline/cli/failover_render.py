"""How `mirrorline failover` and `failback` show their work: progress on stderr, a summary.

`RichReporter` is the procedures' `Reporter` (`failover.context`): one line
per thing done, and a progress bar (rich) while a wait lasts, on stderr.
`render` turns a report document (the one `--json` prints) into the summary
for people on stdout: the pre-flight checks, the lag, the loss window or the
delta, the consumer groups, and the numbered steps left to the operator.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text


def render(report: dict[str, Any], out: Console) -> None:
    """The report for people: checks, lag, groups, loss window, what to do next."""
    title = f"{report['command']} {report['flow']}"
    if report.get("mode"):
        title += f" ({report['mode']})"
    if report.get("dry_run"):
        title += ": dry run, nothing changed"
    out.print(Text(title, style="bold"))
    if report.get("already_done"):
        out.print(Text(f"✓ already done (recorded in {report['state_file']})", style="green"))
    if report.get("resumed_after"):
        out.print(Text(f"continued after: {', '.join(report['resumed_after'])}", style="dim"))
    _checks(report, out)
    if "lag" in report:
        lag = report["lag"]
        out.print(Text(f"lag: {lag['total'] if lag['total'] is not None else 'unknown'} records"))
    if report.get("source_reachable") is False:
        out.print(Text(f"source did not answer: {report.get('source_error')}", style="yellow"))
    for line in report.get("plan", []):
        out.print(Text(f"  • {line}"))
    if report.get("stopped"):
        out.print(Text(f"✓ {report['stopped']}", style="green"))
    left = report.get("left_behind") or []
    if left:
        total = sum(r["records"] for r in left)
        out.print(Text(f"left behind: {total} records not replicated", style="yellow"))
    _loss(report, out)
    _delta(report, out)
    if isinstance(report.get("failover"), dict):
        render(report["failover"], out)
    _groups(report, out)
    if report.get("finished"):
        out.print(Text(f"✓ {report['command']} {report['flow']} done", style="bold green"))
    steps = report.get("next_steps") or []
    if steps:
        out.print(Text("Now:", style="bold"))
        for number, step in enumerate(steps, 1):
            out.print(Text(f"  {number}. {step}"))


def _checks(report: dict[str, Any], out: Console) -> None:
    checks = report.get("preflight") or []
    if not checks:
        return
    table = Table(title="pre-flight checks", title_justify="left")
    table.add_column("check")
    table.add_column("verdict")
    table.add_column("detail")
    styles = {"ok": "green", "warning": "yellow", "failed": "red"}
    for c in checks:
        table.add_row(c["check"], Text(c["verdict"], style=styles[c["verdict"]]), c["detail"])
    out.print(table)


def _groups(report: dict[str, Any], out: Console) -> None:
    groups = report.get("groups") or []
    if not groups:
        return
    table = Table(title="consumer groups", title_justify="left")
    for column in ("group", "status", "partitions", "problems"):
        table.add_column(column)
    for g in groups:
        table.add_row(
            g["group"],
            g["status"],
            str(len(g["partitions"])),
            "; ".join(g["problems"] + g.get("warnings", [])) or "-",
        )
    out.print(table)


def _loss(report: dict[str, Any], out: Console) -> None:
    topics = report.get("loss_window") or []
    if not topics:
        return
    table = Table(title="loss window", title_justify="left")
    for column in ("topic", "remote topic", "newest replicated", "window", "not replicated"):
        table.add_column(column)
    for t in topics:
        window = t["window_s"]
        missing = t["records_not_replicated"]
        table.add_row(
            t["topic"],
            t["remote_topic"],
            "-" if t["newest_replicated_ms"] is None else str(t["newest_replicated_ms"]),
            "-" if window is None else f"{window:.1f}s",
            "unknown (source did not answer)" if missing is None else str(missing),
        )
    out.print(table)


def _delta(report: dict[str, Any], out: Console) -> None:
    if "delta" not in report:
        return
    out.print(
        Text(
            f"delta: {report.get('delta_records', 0)} records written on {report['source']} "
            f"since the failover, over {len(report['delta'])} partitions"
        )
    )


class RichReporter:
    """Messages and progress bars on stderr."""

    def __init__(self, *, quiet: bool) -> None:
        self._err = console(sys.stderr)
        self._quiet = quiet

    def say(self, text: str, style: str = "") -> None:
        self._err.print(Text(text, style=style or ("dim" if self._quiet else "")))

    @contextmanager
    def waiting(self, what: str, total: int | None = None) -> Iterator[_Bar]:
        progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self._err,
            transient=True,
        )
        task = progress.add_task(what, total=total, detail="")
        with progress:
            yield _Bar(progress, task)
        self._err.print(Text(f"✓ {what}: done", style="dim"))


class _Bar:
    def __init__(self, progress: Progress, task: Any) -> None:
        self._progress = progress
        self._task = task

    def update(
        self, *, completed: int | None = None, total: int | None = None, detail: str = ""
    ) -> None:
        self._progress.update(self._task, completed=completed, total=total, detail=detail)


def console(stream: Any) -> Console:
    """A console on `stream`; outside a terminal, lines keep their natural width."""
    width = None if stream.isatty() else 1000
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)
