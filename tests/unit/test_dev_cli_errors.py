"""`mirrorline dev` refuses wrong arguments with a clear message and no stack trace."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.devnode import DevNode
from mirrorline.devstate import DevCluster, write_state


@pytest.fixture
def directory(tmp_path):
    """A recorded 3-node cluster `east` whose node 2 is stopped (no process is started)."""
    nodes = tuple(
        DevNode(i, 1, 2, str(tmp_path / f"east/node-{i}"), None if i == 2 else 999_999_999)
        for i in (1, 2, 3)
    )
    write_state(tmp_path / "clusters.json", [DevCluster("east", "id", str(tmp_path), nodes)])
    return tmp_path


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["stop", "east", "--broker", "4"], 1, "has nodes 1 to 3; there is no node 4"),
        (["stop", "east", "--broker", "2"], 1, "node 2 of east is already stopped"),
        (["start", "nowhere", "--broker", "1"], 1, "no dev cluster named 'nowhere'"),
        (["start", "east"], 1, "already running"),
        (["restart", "east", "--broker", "0"], 1, "there is no node 0"),
        (["restart", "east"], 2, "Missing option '--broker'"),
        (["stop", "--broker", "1"], 2, "Missing argument"),
        (["up", "--clusters", "x", "--brokers", "0"], 1, "at least one broker, not 0"),
        (["up", "--clusters", "x", "--brokers", "three"], 2, "Invalid value for '--brokers'"),
    ],
)
def test_bad_node_commands_fail_clearly(directory, args, code, message):
    result = CliRunner().invoke(app, ["dev", *args, "--dir", str(directory)])
    assert result.exit_code == code, result.output
    assert message in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output
