"""`mirrorline failover` and `failback`: mistakes in the command, the files or an unreachable
cluster, without real clusters. Each is a clear message and its exit code (2 usage, 1 a
cluster or a check), never a stack trace, never a secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.failover.state import FailoverState, save_state

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
    result = CliRunner().invoke(app, [str(a) for a in args], env={"WEST_SERVERS": SERVERS})
    assert "Traceback" not in result.output
    assert SERVERS not in result.output
    return result.exit_code, result.stdout, result.stderr


def test_failover_needs_planned_or_unplanned(config):
    code, _, err = run("failover", "-c", config, "--from", "east", "--to", "west")
    assert code == 2 and "--planned or --unplanned" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "east", "--to", "north"], "has no cluster north (--to); its clusters: east"),
        (["--from", "west", "--to", "west"], "--from and --to are both west"),
    ],
)
def test_failover_names_clusters_of_the_file(config, args, message):
    code, _, err = run("failover", "-c", config, *args, "--planned")
    assert code == 2 and message in err.replace("\n", " ")


def test_a_broken_configuration_is_a_usage_error(tmp_path):
    broken = tmp_path / "broken.properties"
    broken.write_text("clusters = east\neast->west.enabled = maybe\n")
    code, out, _ = run(
        "failover", "-c", broken, "--from", "east", "--to", "west", "--planned", "--json"
    )
    document = json.loads(out)
    assert code == 2 and document["ok"] is False and str(broken) in document["error"]


def test_failback_without_a_recorded_failover_says_where_it_looked(config, tmp_path):
    missing = tmp_path / "nowhere.json"
    code, _, err = run(
        "failback", "-c", config, "--from", "west", "--to", "east", "--state-file", missing
    )
    assert code == 1
    assert "no failover east->west is recorded in" in err and "--state-file" in err


def test_failback_refuses_the_state_of_another_failover(config, tmp_path):
    other = tmp_path / "other.json"
    save_state(other, FailoverState.new("planned", "west", "east", str(config)))
    code, _, err = run(
        "failback", "-c", config, "--from", "west", "--to", "east", "--state-file", other
    )
    assert code == 2 and "records a failover of west->east, not east->west" in err


def test_failback_of_an_unfinished_failover_says_to_finish_it(config, tmp_path):
    unfinished = tmp_path / "east-to-west.json"
    save_state(unfinished, FailoverState.new("unplanned", "east", "west", str(config)))
    code, out, _ = run(
        "failback",
        "-c",
        config,
        "--from",
        "west",
        "--to",
        "east",
        "--state-file",
        unfinished,
        "--json",
    )
    document = json.loads(out)
    assert code == 1 and document["ok"] is False and document["command"] == "failback"
    assert "is not finished" in document["error"]
    assert "mirrorline failover --from east --to west --unplanned" in document["error"]


def test_a_failover_state_file_of_the_other_mode_is_refused(config, tmp_path):
    state_file = tmp_path / "east-to-west.json"
    save_state(state_file, FailoverState.new("unplanned", "east", "west", str(config)))
    code, _, err = run(
        "failover",
        "-c",
        config,
        "--from",
        "east",
        "--to",
        "west",
        "--planned",
        "--state-file",
        state_file,
        "--request-timeout",
        "1",
    )
    assert code == 2 and "records an unplanned failover of east->west" in err
    assert "continue it with --unplanned" in err


def test_a_planned_failover_from_a_silent_cluster_fails_naming_it(config, tmp_path):
    code, out, _ = run(
        "failover",
        "-c",
        config,
        "--from",
        "east",
        "--to",
        "west",
        "--planned",
        "--state-file",
        tmp_path / "s.json",
        "--request-timeout",
        "1",
        "--json",
    )
    document = json.loads(out)
    assert code == 1 and document["ok"] is False
    assert "does not answer" in document["error"] or "cannot" in document["error"]
    assert not (tmp_path / "s.json").exists()
