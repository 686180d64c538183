"""Which flows a driver runs, and what it refuses to run rather than weaken silently."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config import parse_config
from mirrorline.driver import (
    NoFlowsError,
    UnsupportedSettingError,
    check_supported,
    select_flows,
)

BASE = """
clusters = a, b, c
a.bootstrap.servers = 127.0.0.1:1
b.bootstrap.servers = 127.0.0.1:2
c.bootstrap.servers = 127.0.0.1:3
a->b.enabled = true
a->c.enabled = true
"""


def test_all_enabled_flows_by_default():
    assert [f.name for f in select_flows(parse_config(BASE), None)] == ["a->b", "a->c"]


def test_clusters_limits_to_flows_targeting_them():
    assert [f.name for f in select_flows(parse_config(BASE), ["c"])] == ["a->c"]


def test_unknown_cluster_is_named():
    with pytest.raises(NoFlowsError, match="unknown cluster.*zz"):
        select_flows(parse_config(BASE), ["zz"])


def test_nothing_enabled_says_how_to_enable():
    text = BASE.replace("a->b.enabled = true", "").replace("a->c.enabled = true", "")
    with pytest.raises(NoFlowsError, match=r"A->B.enabled = true"):
        select_flows(parse_config(text), None)


@pytest.mark.parametrize(
    "line, named",
    [
        ("a->b.exactly.once.source.support = enabled", "exactly.once.source.support"),
        ("errors.tolerance = all", "errors.tolerance"),
    ],
)
def test_refuses_guarantees_it_cannot_give(line, named):
    flows = select_flows(parse_config(BASE + line + "\n"), None)
    with pytest.raises(UnsupportedSettingError, match=named) as raised:
        check_supported(flows)
    assert "<text>:8" in str(raised.value)  # the line that asked for it


def test_notes_loops_not_built_yet_and_quiet_when_disabled():
    notes = check_supported(select_flows(parse_config(BASE), None))
    assert any("checkpoints" in n and "a->b" in n for n in notes)
    quiet = BASE + "".join(
        f"{k}.enabled = false\n" for k in ("emit.checkpoints", "emit.heartbeats", "sync.topic.acls")
    )
    assert check_supported(select_flows(parse_config(quiet), None)) == []


def test_driver_command_reports_config_errors_without_traceback(tmp_path):
    bad = tmp_path / "bad.properties"
    bad.write_text("clusters = a, b\na->b.enabled = true\n")
    result = CliRunner().invoke(app, ["driver", "--config", str(bad)])
    assert result.exit_code == 2
    assert "bootstrap.servers" in result.output
    assert "Traceback" not in result.output
