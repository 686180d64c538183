"""Every command's --help: flags show no value placeholder, options with values keep theirs."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
import typer.main
from typer.testing import CliRunner

from mirrorline.cli.main import app


def commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command of the tree under `command`, with the words that call it."""
    yield path, command
    # Typer's groups are no click.Group subclass in every Typer version: ask for the methods.
    list_commands = getattr(command, "list_commands", None)
    get_command = getattr(command, "get_command", None)
    if list_commands is not None and get_command is not None:
        ctx = click.Context(command)
        for name in list_commands(ctx):
            sub = get_command(ctx, name)
            if sub is not None:
                yield from commands(sub, (*path, name))


ROOT = typer.main.get_command(app)
ALL = sorted(commands(ROOT), key=lambda item: item[0])


def test_the_walk_finds_every_command_group_and_subcommand() -> None:
    names = {" ".join(path) for path, _ in ALL}
    assert {"", "driver", "status", "config check", "offsets apply", "dev up"} <= names
    assert len(names) > 10


@pytest.mark.parametrize(
    ("path", "command"), ALL, ids=[" ".join(p) or "mirrorline" for p, _ in ALL]
)
def test_flags_show_no_value_placeholder(path: tuple[str, ...], command: click.Command) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    ctx = click.Context(command, info_name=path[-1] if path else "mirrorline")
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option) or param.hidden:
            continue
        lines = [line for line in result.output.splitlines() if f" {param.opts[-1]} " in line]
        assert lines, f"{param.opts} missing from the help of {' '.join(path)!r}"
        if param.is_flag or param.count:
            assert not any("<bool>" in line for line in lines), lines
            assert not any(_placeholder_after(line, param.opts) for line in lines), lines
    assert "<bool>" not in result.output


def _placeholder_after(line: str, opts: list[str]) -> bool:
    """Whether a `<type>` placeholder follows the option's names on its help line."""
    cells = [c.strip() for c in line.strip("│ ").split("  ") if c.strip()]
    return any(c.startswith("<") for c in cells[: len(opts) + 2] if c not in opts)


def test_options_taking_values_keep_their_placeholder() -> None:
    result = CliRunner().invoke(app, ["status", "--help"], env={"COLUMNS": "200"})
    config_line = next(line for line in result.output.splitlines() if "--config" in line)
    assert "<path>" in config_line
    json_line = next(line for line in result.output.splitlines() if "--json" in line)
    assert "<" not in json_line
    result = CliRunner().invoke(app, ["offsets", "apply", "--help"], env={"COLUMNS": "200"})
    timeout_line = next(line for line in result.output.splitlines() if "--timeout" in line)
    assert "<float range>" in timeout_line
