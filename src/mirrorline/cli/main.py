"""Entry point of the `mirrorline` command: composes the command groups."""

from __future__ import annotations

import os

import typer

from mirrorline import __version__, jvm
from mirrorline.cli import logs
from mirrorline.cli.acls_cmd import acls
from mirrorline.cli.config_cmd import config_app
from mirrorline.cli.demo import demo
from mirrorline.cli.dev import dev_app
from mirrorline.cli.doctor_cmd import doctor
from mirrorline.cli.driver_cmd import driver
from mirrorline.cli.failover_cmd import failback, failover
from mirrorline.cli.lifecycle_cmd import pause, restart, resume, start, stop
from mirrorline.cli.lists_cmd import groups, topics
from mirrorline.cli.offsets_cmd import offsets_app
from mirrorline.cli.positions_cmd import positions_app
from mirrorline.cli.service_cmd import service_app
from mirrorline.cli.setup_cmd import setup
from mirrorline.cli.status_cmd import status
from mirrorline.cli.verify_cmd import verify

app = typer.Typer(
    name="mirrorline",
    help="Cross-cluster Apache Kafka replication on Apache Spark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("driver")(driver)
app.add_typer(config_app, name="config")
app.add_typer(dev_app, name="dev")
app.add_typer(offsets_app, name="offsets")
app.add_typer(service_app, name="service")
app.command("status")(status)
app.command("acls")(acls)
app.command("topics")(topics)
app.command("groups")(groups)
for command in (pause, resume, stop, start, restart):
    app.command(command.__name__)(command)
app.add_typer(positions_app, name="positions")
app.command("failover")(failover)
app.command("failback")(failback)
app.command("verify")(verify)
app.command("demo")(demo)
app.command("setup")(setup)
app.command("doctor")(doctor)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"mirrorline {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
    log_level: str = typer.Option(
        "",
        "--log-level",
        help=f"Log level ({', '.join(logs.LEVELS)}); default: info for driver and service, "
        "warnings only for other commands.",
    ),
    log_format: str = typer.Option(
        "text",
        "--log-format",
        help="text, or json: one JSON object per line (time, level, logger, flow, message).",
    ),
    jvm_lib: str = typer.Option(
        "",
        "--jvm-lib",
        help=f"The jar cache (as ${jvm.JVM_LIB_ENV}); default $XDG_CACHE_HOME/mirrorline/jvm.",
        show_default=False,
    ),
) -> None:
    """Cross-cluster Apache Kafka replication on Apache Spark."""
    if log_format.lower() not in logs.FORMATS:
        raise typer.BadParameter(f"use one of {', '.join(logs.FORMATS)}", param_hint="--log-format")
    logs.choose_format(log_format.lower())
    if jvm_lib:
        os.environ[jvm.JVM_LIB_ENV] = os.path.abspath(os.path.expanduser(jvm_lib))
    if log_level:
        if log_level.lower() not in logs.LEVELS:
            raise typer.BadParameter(
                f"use one of {', '.join(logs.LEVELS)}", param_hint="--log-level"
            )
        logs.choose(log_level.lower())
