"""Every example configuration passes `mirrorline config check` as it stands, from any directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Files the examples read through ${file:...} placeholders, not configurations themselves.
SECRETS = EXAMPLES / "secrets"
CONFIGS = sorted(p for p in EXAMPLES.rglob("*") if p.is_file() and SECRETS not in p.parents)


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
