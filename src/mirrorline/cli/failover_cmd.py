"""`mirrorline failover` and `mirrorline failback`: the disaster-recovery runbook as commands.

The procedures live in `mirrorline.failover`; this module reads the command
line, shows progress on stderr (rich) and renders the outcome: a summary on
stdout, or with `--json` one JSON document on stdout (messages stay on
stderr).

Exit codes, as `mirrorline offsets`: 0 done (or a dry run whose checks
pass), 1 a check failed or a cluster refused (the message says what and what
to do; the state file keeps what is done), 2 a mistake in the command line,
the configuration or the state file.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from mirrorline.cli.failover_render import RichReporter, console, render
from mirrorline.cli.flow_args import (
    alias_problem,
)
from mirrorline.cluster_access import Unreachable
from mirrorline.config import ConfigError, MirrorConfig, load_config
from mirrorline.failover.context import (
    FailoverContext,
    FailoverError,
    Options,
)
from mirrorline.failover.failback import FailbackOptions, reverse_state_path, run_failback
from mirrorline.failover.planned import run_planned
from mirrorline.failover.state import StateFileError, default_state_path
from mirrorline.failover.unplanned import run_unplanned
from mirrorline.java_bridge import JavaCallError
from mirrorline.kafka import KafkaOperationError
from mirrorline.operations.failure import EXIT_FAILED, EXIT_USAGE

UNPLANNED_SOURCE_TIMEOUT_S = 5.0

ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", help="MM2-format properties file naming the clusters.")
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout (messages on stderr).")
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Check and show the plan; change nothing.")
]
StateFileOption = Annotated[
    Path | None,
    typer.Option(
        "--state-file",
        help="The failover's state file (default: ~/.local/state/mirrorline/failover/"
        "<from>-to-<to>.json, or under $XDG_STATE_HOME).",
    ),
]
TimeoutOption = Annotated[
    float,
    typer.Option("--timeout", min=1, help="Seconds each wait (lag 0, stopped, checkpoints) lasts."),
]
RequestTimeoutOption = Annotated[
    float, typer.Option("--request-timeout", min=1, help="Seconds each cluster request waits.")
]


def failover(
    config: ConfigOption,
    source: Annotated[
        str, typer.Option("--from", help="The cluster to leave (the flow's source).")
    ],
    target: Annotated[str, typer.Option("--to", help="The cluster to move to (its target).")],
    planned: Annotated[
        bool | None,
        typer.Option(
            "--planned/--unplanned",
            help="Planned: the source answers, lose nothing. Unplanned: the source is gone.",
        ),
    ] = None,
    dry_run: DryRunOption = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Planned: do not wait for lag 0 (what is left behind is recorded). Both: "
            "also move group offsets backwards.",
        ),
    ] = False,
    as_json: JsonOption = False,
    state_file: StateFileOption = None,
    timeout: TimeoutOption = 300.0,
    request_timeout: RequestTimeoutOption = 30.0,
    source_timeout: Annotated[
        float | None,
        typer.Option(
            "--source-timeout",
            min=0.5,
            help="Seconds each request to the source waits (default: 5 unplanned, else "
            "--request-timeout).",
        ),
    ] = None,
) -> None:
    """Fail over from cluster FROM to cluster TO over the flow FROM->TO.

    Planned (--planned): pre-flight checks, then waits until the flow has
    replicated everything (stop producers on FROM), stops the flow, records
    the offsets on TO in the state file, waits for the consumer groups' final
    checkpoints and sets their offsets on TO; then says what to point where.
    Refused when the flow is not enabled, no driver leads it, or the lag is not
    0 by --timeout (unless --force).

    Unplanned (--unplanned): works while FROM does not answer. Stops the flow,
    sets each group's latest checkpointed offsets on TO, and reports the loss
    window: the age of the newest replicated record per topic and, if FROM
    answers, the records it holds that TO does not.

    Each step is recorded in the state file: running the command again
    continues where it stopped, and says when it is done. Exit code 0 done, 1 a
    check failed or a cluster refused, 2 a mistake in the command or the files.

    \b
    Examples:
      mirrorline failover -c mm2.properties --from east --to west --planned --dry-run
      mirrorline failover -c mm2.properties --from east --to west --planned
      mirrorline failover -c mm2.properties --from east --to west --unplanned --json
    """
    logging.getLogger("mirrorline").setLevel(logging.ERROR)  # the report says it all
    reporter = RichReporter(quiet=as_json)
    try:
        if planned is None:
            raise FailoverError("say which failover: --planned or --unplanned", EXIT_USAGE)
        loaded = _load(config)
        _check_aliases(loaded, source, target)
        path = state_file or default_state_path(source, target)
        if source_timeout is None:
            source_timeout = request_timeout if planned else UNPLANNED_SOURCE_TIMEOUT_S
        ctx = _context(loaded, source, target, request_timeout, source_timeout)
        try:
            options = Options(path, dry_run=dry_run, force=force, timeout=timeout)
            run = run_planned if planned else run_unplanned
            report = run(ctx, options, reporter)
        finally:
            ctx.close()
    except (FailoverError, StateFileError, KafkaOperationError, JavaCallError) as exc:
        _fail(exc, as_json, {"command": "failover", "flow": f"{source}->{target}"})
    _finish(report, as_json)


def failback(
    config: ConfigOption,
    source: Annotated[
        str, typer.Option("--from", help="The cluster producers and consumers use now.")
    ],
    target: Annotated[str, typer.Option("--to", help="The cluster to go back to.")],
    dry_run: DryRunOption = False,
    full_resync: Annotated[
        bool,
        typer.Option(
            "--full-resync",
            help="Copy everything FROM holds of the failed-over topics, not only what was "
            "written since the failover (when FROM no longer holds where it started).",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Do not wait for lag 0 on the way back; move offsets backwards too."
        ),
    ] = False,
    as_json: JsonOption = False,
    state_file: Annotated[
        Path | None,
        typer.Option(
            "--state-file",
            help="The state file of the failover TO->FROM (default: ~/.local/state/mirrorline/"
            "failover/<to>-to-<from>.json, or under $XDG_STATE_HOME).",
        ),
    ] = None,
    timeout: TimeoutOption = 300.0,
    request_timeout: RequestTimeoutOption = 30.0,
) -> None:
    """Go back to cluster TO after a failover TO->FROM, copying only what was written on FROM.

    Reads the failover's state file; checks that FROM still holds every offset
    recorded at failover (else --full-resync); has the flow FROM->TO (enable it
    in the file) start at those offsets, so it copies the delta alone; then runs
    a planned failover FROM->TO (stop producers on FROM when asked) and resumes
    TO->FROM. Running it again continues where it stopped. Exit code 0 done, 1 a
    check failed or a cluster refused, 2 a mistake in the command or the files.

    \b
    Examples:
      mirrorline failback -c mm2.properties --from west --to east --dry-run
      mirrorline failback -c mm2.properties --from west --to east
    """
    logging.getLogger("mirrorline").setLevel(logging.ERROR)
    reporter = RichReporter(quiet=as_json)
    try:
        loaded = _load(config)
        _check_aliases(loaded, source, target)
        path = state_file or default_state_path(target, source)
        ctx = _context(loaded, source, target, request_timeout, request_timeout)
        try:
            options = FailbackOptions(
                path,
                reverse_state_path(path, source, target),
                dry_run=dry_run,
                full_resync=full_resync,
                force=force,
                timeout=timeout,
            )
            report = run_failback(ctx, options, reporter)
        finally:
            ctx.close()
    except (FailoverError, StateFileError, KafkaOperationError, JavaCallError) as exc:
        _fail(exc, as_json, {"command": "failback", "flow": f"{source}->{target}"})
    _finish(report, as_json)


# -- helpers -------------------------------------------------------------------------


def _load(path: Path) -> MirrorConfig:
    try:
        return load_config(path)
    except ConfigError as exc:
        raise FailoverError(f"{path}: {exc}", EXIT_USAGE) from None


def _check_aliases(loaded: MirrorConfig, source: str, target: str) -> None:
    problem = alias_problem(loaded, (source, "--from"), (target, "--to"))
    if problem is not None:
        raise FailoverError(problem, EXIT_USAGE)


def _context(
    loaded: MirrorConfig, source: str, target: str, request_timeout: float, source_timeout: float
) -> FailoverContext:
    try:
        return FailoverContext(
            loaded,
            source,
            target,
            request_timeout=request_timeout,
            source_timeout=source_timeout,
        )
    except ConfigError as exc:
        raise FailoverError(f"{loaded.file}: {exc}", EXIT_USAGE) from None


def _fail(exc: Exception, as_json: bool, where: dict[str, Any]) -> None:
    code = exc.code if isinstance(exc, FailoverError) else EXIT_USAGE
    if isinstance(exc, Unreachable | KafkaOperationError | JavaCallError):
        code = EXIT_FAILED
    details = list(exc.details) if isinstance(exc, FailoverError) else []
    if as_json:
        document = {"ok": False, **where, "error": str(exc), "problems": details}
        if isinstance(exc, FailoverError) and exc.report:
            document = {**exc.report, **document}
        typer.echo(json.dumps(document, indent=2))
    else:
        err = console(sys.stderr)
        err.print(Text(f"error: {exc}", style="red"))
        for detail in details:
            err.print(Text(f"  {detail}"))
    raise typer.Exit(code)


def _finish(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        render(report, console(sys.stdout))
    if not report.get("ok"):
        raise typer.Exit(EXIT_FAILED)
