"""`mirrorline offsets`: mistakes in the command, the configuration or a file, without clusters.

Each is a clear message and exit code 2 (1 for a cluster that does not
answer), never a stack trace, never a secret.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app

SERVERS = "hidden-broker.internal:1"
CONFIG = """\
clusters = east, west
east.bootstrap.servers = 127.0.0.1:1
west.bootstrap.servers = ${env:WEST_SERVERS}
east->west.enabled = true
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "mm2.properties"
    path.write_text(CONFIG)
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["offsets", *args], env={"WEST_SERVERS": SERVERS})
    assert "Traceback" not in result.output
    assert SERVERS not in result.output
    return result.exit_code, result.stdout, result.stderr


APPLY = "mirrorline offsets apply -c FILE -t TARGET -g GROUP (--source SOURCE | --from-file PATH)"


def test_apply_without_source_or_file_is_a_usage_error(config):
    code, out, err = run("apply", "-c", str(config), "-t", "west", "-g", "billing")
    assert code == 2
    assert out == ""
    assert "one of --source SOURCE (the flow's checkpoints) or --from-file PATH is required" in err
    assert f"usage: {APPLY}" in err


def test_apply_with_both_source_and_file_is_a_usage_error(config):
    args = ("apply", "-c", str(config), "-t", "west", "-g", "billing")
    code, _, err = run(*args, "--source", "east", "--from-file", "x.csv")
    assert code == 2
    assert "--source and --from-file cannot be used together: give one of them" in err

    code, out, _ = run(*args, "-s", "east", "--from-file", "x.csv", "--json")
    assert code == 2
    document = json.loads(out)
    assert document["ok"] is False
    assert document["error"] == "--source and --from-file cannot be used together: give one of them"


def test_apply_help_says_one_of_source_and_file_is_required():
    result = CliRunner().invoke(app, ["offsets", "apply", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    words = " ".join(result.output.split())  # the usage line folds at 80 columns
    assert f"Usage: {APPLY} [OPTIONS]" in words
    assert "Where the offsets come from (exactly one)" in result.output
    for option in ("--source", "--from-file"):
        line = next(x for x in result.output.splitlines() if f"│ {option} " in x)
        assert "One of --source or --from-file is required." in line


def test_unknown_cluster_alias_lists_the_known_ones(config):
    code, out, err = run("export", "-c", str(config), "-s", "central", "-t", "west", "-g", "g")
    assert code == 2
    assert out == ""
    assert "has no cluster central (--source); its clusters: east, west" in err


def test_config_errors_exit_2(tmp_path):
    bad = tmp_path / "bad.properties"
    bad.write_text("clusters = a, b\na->b.enabled = true\n")
    code, _, err = run("export", "-c", str(bad), "-s", "a", "-t", "b", "-g", "g")
    assert code == 2
    assert "bootstrap.servers" in err


def test_bad_file_lines_are_named_before_any_cluster_is_asked(config, tmp_path):
    offsets = tmp_path / "billing.csv"
    offsets.write_text("east.orders,0,5\neast.orders,one,6\n")
    args = ("apply", "-c", str(config), "-t", "west", "-g", "billing")
    code, _, err = run(*args, "--from-file", str(offsets))
    assert code == 2
    assert f"{offsets}:2: partition must be a non-negative integer, got 'one'" in err

    code, out, _ = run(*args, "--from-file", str(offsets), "--json")
    assert code == 2
    document = json.loads(out)
    assert document["ok"] is False
    assert document["problems"] == [
        f"{offsets}:2: partition must be a non-negative integer, got 'one'"
    ]


def test_unreachable_cluster_exits_1_naming_it_without_its_secret_servers(config, tmp_path):
    offsets = tmp_path / "billing.csv"
    offsets.write_text("east.orders,0,5\n")
    code, _, err = run(
        "apply", "-c", str(config), "-t", "west", "-g", "billing",
        "--from-file", str(offsets), "--timeout", "1",
    )  # fmt: skip
    assert code == 1
    assert "cluster west ([hidden]) does not answer" in err
