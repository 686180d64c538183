"""Every example configuration passes `mirrorline config check` as it stands, from any directory;
the systemd units name only commands and options that exist."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Files the examples read through ${file:...} placeholders, and service manager units:
# not configurations themselves.
SECRETS = EXAMPLES / "secrets"
SYSTEMD = EXAMPLES / "systemd"
CONFIGS = sorted(
    p
    for p in EXAMPLES.rglob("*")
    if p.is_file() and SECRETS not in p.parents and SYSTEMD not in p.parents
)
UNITS = sorted(SYSTEMD.glob("*.service"))


def test_there_are_examples_and_all_are_properties_files() -> None:
    assert CONFIGS
    assert all(p.suffix == ".properties" for p in CONFIGS), CONFIGS


@pytest.mark.parametrize("example", CONFIGS, ids=[p.name for p in CONFIGS])
def test_example_passes_config_check_without_warnings(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # relative ${file:...} paths are read from the example's directory
    # Offline: the examples' clusters do not exist (a cluster that does not answer is a
    # note, tested in test_config_check).
    result = CliRunner().invoke(app, ["config", "check", "--offline", str(example)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "Warnings" not in result.output


@pytest.mark.parametrize("unit", UNITS, ids=[p.name for p in UNITS])
def test_systemd_unit_runs_a_mirrorline_command_that_exists(unit: Path) -> None:
    """The unit's ExecStart, run with --help instead of its own options, is accepted:
    every global option and the command are real (a unit is not run here: no systemd)."""
    (line,) = [ln for ln in unit.read_text().splitlines() if ln.startswith("ExecStart=")]
    words = line.removeprefix("ExecStart=").split()
    assert words[0].endswith("/mirrorline"), words
    args = words[1:]
    command = 0  # the first word after the global options (and their values)
    while args[command].startswith("-"):
        command += 2 if args[command] in ("--log-format", "--log-level", "--jvm-lib") else 1
    result = CliRunner().invoke(app, [*args[: command + 1], "--help"])
    assert result.exit_code == 0, result.output
    for option in (w for w in args[command + 1 :] if w.startswith("--")):
        assert option in result.output, (option, result.output)
