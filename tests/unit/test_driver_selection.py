"""Which flows a driver runs, and what it refuses to run rather than weaken silently."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config import parse_config
from mirrorline.driver import (
    NoFlowsError,
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


def test_accepts_exactly_once_and_error_tolerance():
    text = BASE + "a->b.exactly.once.source.support = enabled\nerrors.tolerance = all\n"
    flows = select_flows(parse_config(text), None)
    assert flows[0].value("exactly.once.source.support") == "enabled"
    assert not any("exactly" in n or "tolerance" in n for n in check_supported(flows))


def test_notes_an_unused_dead_letter_topic_with_its_line():
    text = BASE + "errors.deadletterqueue.topic.name = dlq\n"
    notes = check_supported(select_flows(parse_config(text), None))
    unused = [n for n in notes if "errors.deadletterqueue.topic.name" in n]
    assert len(unused) == 2 and "<text>:8" in unused[0] and "errors.tolerance = all" in unused[0]


def test_every_default_loop_is_built_so_nothing_is_noted():
    assert check_supported(select_flows(parse_config(BASE), None)) == []


def test_driver_command_reports_config_errors_without_traceback(tmp_path):
    bad = tmp_path / "bad.properties"
    bad.write_text("clusters = a, b\na->b.enabled = true\n")
    result = CliRunner().invoke(app, ["driver", "--config", str(bad)])
    assert result.exit_code == 2
    assert "bootstrap.servers" in result.output
    assert "Traceback" not in result.output
