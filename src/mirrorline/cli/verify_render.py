"""How `mirrorline verify` shows its work: a progress bar on stderr, the report on stdout.

`progress_bar` counts the offsets read of the total on a terminal's stderr
(nothing under `--json` or when stderr is not a terminal, as other long
commands); `render` prints the report for people: a table per topic, then one
line per partition and kind of finding with its first offsets, then what was
counted but not compared, and the verdict.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from mirrorline.verification.report import KINDS, VerifyReport, topic_summary


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
def progress_bar(as_json: bool) -> Iterator[_Bar | None]:
    """A bar while the verification reads, or None (under `--json`, or off a terminal)."""
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
