"""`mirrorline verify`: prove that a flow's copy is complete, or show where it is not.

The work is `verification.run.verify_flow`; this module reads the command
line, reaches the two clusters and turns the outcome into output and an exit
code: the report for people (`cli.verify_render`, with a progress bar on
stderr while it reads) or, with `--json`, the report's document. The summary
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
from typing import Annotated

import typer
from rich.console import Console
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
from mirrorline.cli.verify_render import progress_bar, render
from mirrorline.cluster_access import ClusterAccess
from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.model import FlowConfig, Side
from mirrorline.java_bridge import JavaCallError
from mirrorline.kafka import ClusterClients, KafkaOperationError
from mirrorline.operations.failure import EXIT_FAILED, EXIT_USAGE, Failure
from mirrorline.verification.ranges import parse_when
from mirrorline.verification.report import VerifyReport
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
                with progress_bar(as_json) as bar:
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
