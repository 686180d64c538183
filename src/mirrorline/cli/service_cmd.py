"""`mirrorline service`: the REST API, Prometheus and the web UI over the flows' raw metrics;
`mirrorline service passwd` and `mirrorline service token`: who may call it."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import typer
from rich.console import Console

from mirrorline.cli import logs
from mirrorline.config import ConfigError, load_config
from mirrorline.config.service_settings import ServiceSettings
from mirrorline.service.credentials import (
    ROLES,
    CredentialsFileError,
    Entry,
    Kind,
    check_name,
    check_role,
    hash_password,
    hash_token,
    new_token,
    remove_entry,
    save_entry,
)

err = Console(stderr=True, soft_wrap=True)
MIN_PASSWORD = 8

service_app = typer.Typer(
    help="Serve replication status and metrics; manage who may call the service.",
    invoke_without_command=True,
    add_completion=False,
)
_ROLE_HELP = f"Role: {' or '.join(ROLES)} (reads everything; operator also runs operations)."


@service_app.callback()
def service(
    ctx: typer.Context,
    config: Path | None = typer.Option(None, "--config", "-c", help="MM2-format properties file."),
    host: str = typer.Option(
        "", "--host", help="Address to listen on (default: service.host, else 127.0.0.1)."
    ),
    port: int = typer.Option(
        0, "--port", min=0, max=65535, help="Port (default: service.port, else 6670)."
    ),
) -> None:
    """Serve replication status and metrics: REST API (/v2, /docs), Prometheus (/metrics), UI (/).

    Reads the raw metrics, heartbeats, checkpoints and remote-topic metadata of the
    target clusters in `service.clusters` (default: every target of an enabled
    flow). Keeps no state of its own: several instances give the same answers.
    With service.tls.* it serves HTTPS; with service.auth.users.file or
    service.auth.tokens.file every request must authenticate (see `passwd`, `token`).
    """
    if ctx.invoked_subcommand is not None:
        return
    if config is None:
        err.print("[red]error:[/red] missing --config FILE (the properties file)", highlight=False)
        raise typer.Exit(2)
    if logs.is_json():
        logs.funnel_stderr()
    logs.configure(logging.INFO)
    try:
        loaded = load_config(config)
        settings = ServiceSettings.of(loaded)
    except ConfigError as exc:
        err.print(f"[red]{config}:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None
    if not settings.clusters:
        err.print(
            "[red]error:[/red] no cluster to report on: enable a flow, or list clusters in "
            "service.clusters",
            highlight=False,
        )
        raise typer.Exit(2)
    from mirrorline.service.server import Service

    try:
        running = Service(loaded, host=host or None, port=port or None)
    except (ConfigError, CredentialsFileError) as exc:
        err.print(f"[red]{config}:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None
    running.start()
    serving = (
        f"Mirrorline service on {running.url}/ (API docs {running.url}/docs, Prometheus "
        f"{running.url}/metrics), reporting flows into {', '.join(settings.clusters)}"
    )
    if logs.is_json():
        logging.getLogger("mirrorline.service").info("%s", serving)
    else:
        err.print(serving, highlight=False)
    try:
        running.serve()
    finally:
        running.close()


@service_app.command("passwd")
def passwd(
    name: str = typer.Argument(..., help="The user's name (letters, digits, . _ @ -)."),
    users_file: Path = typer.Option(
        ..., "--users-file", "-f", help="The users file (service.auth.users.file)."
    ),
    role: str = typer.Option("viewer", "--role", "-r", help=_ROLE_HELP),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="Read the password from the first line of stdin."
    ),
    delete: bool = typer.Option(False, "--delete", help="Remove the user instead."),
) -> None:
    """Add a user to a users file, or set their password and role (or remove them).

    The password is asked twice on the terminal, or read from stdin with
    --password-stdin; it is never an argument (arguments show in process lists
    and shell histories). Only its scrypt hash is stored, with a salt of its own.
    A running service reads the file again within a second or two.
    """
    _check(name, role)
    if delete:
        _remove(users_file, "users", name, "user")
        return
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt(f"Password for {name}", hide_input=True, confirmation_prompt=True)
    if len(password) < MIN_PASSWORD:
        err.print(
            f"[red]error:[/red] the password is shorter than {MIN_PASSWORD} characters: "
            "choose a longer one",
            highlight=False,
        )
        raise typer.Exit(2)
    entry = Entry(name, check_role(role), hash_password(password))
    replaced = _save(users_file, "users", entry)
    verb = "updated" if replaced else "added"
    err.print(f"user {name} ({role}) {verb} in {users_file}", highlight=False)


@service_app.command("token")
def token(
    name: str = typer.Argument(
        ..., help="What the token is for, like prometheus (letters, digits, . _ @ -)."
    ),
    tokens_file: Path = typer.Option(
        ..., "--tokens-file", "-f", help="The tokens file (service.auth.tokens.file)."
    ),
    role: str = typer.Option("viewer", "--role", "-r", help=_ROLE_HELP),
    delete: bool = typer.Option(False, "--delete", help="Revoke the token instead."),
) -> None:
    """Make a new bearer token NAME (replacing any of that name), or revoke it.

    Prints the token once, on stdout: only its SHA-256 is stored, so it cannot
    be shown again (make a new one if it is lost). A running service reads the
    file again within a second or two.
    """
    _check(name, role)
    if delete:
        _remove(tokens_file, "tokens", name, "token")
        return
    secret = new_token()
    replaced = _save(tokens_file, "tokens", Entry(name, check_role(role), hash_token(secret)))
    verb = "replaced" if replaced else "added"
    err.print(f"token {name} ({role}) {verb} in {tokens_file}; it is shown once:", highlight=False)
    typer.echo(secret)


def _check(name: str, role: str) -> None:
    try:
        check_name(name)
        check_role(role)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None


def _save(path: Path, kind: Kind, entry: Entry) -> bool:
    try:
        return save_entry(path, kind, entry)
    except (CredentialsFileError, OSError) as exc:
        err.print(f"[red]error:[/red] {_reason(exc)}", highlight=False)
        raise typer.Exit(1) from None


def _remove(path: Path, kind: Kind, name: str, what: str) -> None:
    try:
        found = path.exists() and remove_entry(path, kind, name)
    except (CredentialsFileError, OSError) as exc:
        err.print(f"[red]error:[/red] {_reason(exc)}", highlight=False)
        raise typer.Exit(1) from None
    if not found:
        err.print(f"[red]error:[/red] no {what} {name} in {path}", highlight=False)
        raise typer.Exit(1)
    err.print(f"{what} {name} removed from {path}", highlight=False)


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename or ''}: {exc.strerror}".lstrip(": ")
    return str(exc)
