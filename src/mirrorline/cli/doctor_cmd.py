"""`mirrorline doctor`: can Mirrorline run on this host, and use a configuration's clusters?

The checks are `mirrorline.doctor` (the host) and `mirrorline.doctor_clusters`
(the clusters); this module only renders their findings: one line each for
people, reading top to bottom in the order the checks ran, or one JSON
document for automation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from mirrorline.config import ConfigError, load_config
from mirrorline.doctor import Finding, check_host, exit_code
from mirrorline.operations.failure import EXIT_USAGE
from mirrorline.text import counted

err = Console(stderr=True)

DEFAULT_TIMEOUT_S = 10.0

_TAGS = {"ok": ("ok  ", "green"), "error": ("FAIL", "red"), "warning": ("warn", "yellow")}


def doctor(
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Also check the clusters of this MM2-format file."
    ),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT_S, "--timeout", min=1, help="Seconds to wait for each cluster."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON document."),
) -> None:
    """Check that Mirrorline can run here and, with --config, reach and use its clusters.

    The host: Java 17+, the writer jar, the jars in the jar cache (never fetched:
    that is `mirrorline setup`), PySpark against Spark's Kafka connector. With
    --config, every cluster an enabled flow uses: it answers, the configured
    login works, and its principal holds the ACLs `mirrorline acls` lists.
    One line per check; a problem comes with its fix. Exit code 0 when all is
    well (warnings allowed), 1 for a problem, 2 when the file does not load.
    """
    try:
        loaded = load_config(config) if config is not None else None
        findings = check_host()
        if loaded is not None:
            from mirrorline.doctor_clusters import check_clusters  # Kafka clients: when asked

            findings += check_clusters(loaded, timeout)
    except ConfigError as exc:  # also a flow's client settings that do not translate
        message = f"[red]{escape(str(config))}:[/red] {escape(str(exc))}"
        err.print(message, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from None
    if as_json:
        typer.echo(json.dumps(document(findings), indent=2))
    else:
        for line in lines(findings, color=True):
            typer.echo(line)
    raise typer.Exit(exit_code(findings))


def lines(findings: Sequence[Finding], *, color: bool = False) -> list[str]:
    """One line per finding, then the count of problems (or `all good`).

    Colors are dropped by `typer.echo` when the output is no terminal.
    """
    shown = []
    for finding in findings:
        kind = "ok" if finding.ok else finding.severity
        tag, fg = _TAGS[kind]
        if color:
            tag = typer.style(tag, fg=fg, bold=kind != "ok")
        if finding.ok:
            shown.append(f"{tag} {finding.check}: {finding.detail}")
        else:
            fix = f" — fix: {finding.fix}" if finding.fix else ""
            shown.append(f"{tag} {finding.detail}{fix}")
    return [*shown, summary(findings)]


def summary(findings: Sequence[Finding]) -> str:
    """`N problems`, or `all good`; warnings counted apart."""
    errors = sum(f.fails for f in findings)
    warnings = sum(not f.ok and f.severity == "warning" for f in findings)
    note = f" ({counted(warnings, 'warning')})" if warnings else ""
    return (counted(errors, "problem") if errors else "all good") + note


def document(findings: Sequence[Finding]) -> dict[str, Any]:
    """The `--json` document: overall `ok`, then each check's answer."""
    checks: list[dict[str, Any]] = []
    for f in findings:
        if f.ok:
            checks.append({"check": f.check, "ok": True, "detail": f.detail})
        else:
            entry = {"check": f.check, "ok": False, "problem": f.detail, "fix": f.fix}
            checks.append({**entry, "severity": f.severity})
    return {"ok": exit_code(findings) == 0, "checks": checks}
