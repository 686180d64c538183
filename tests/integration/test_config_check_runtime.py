"""`mirrorline config check` shows the list changes and state operators asked for at run time,
read from the flow's target cluster."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config.loader import load_config
from mirrorline.control.control_store import ControlStore
from mirrorline.kafka import ClusterClients
from support.kafka_io import unique_name


def test_config_check_shows_run_time_list_changes_and_the_wanted_state(
    two_clusters, tmp_path: Path
) -> None:
    east, west = two_clusters
    # Aliases of this test only: no driver of another test follows this flow's control records.
    source, target = unique_name("src"), unique_name("dst")
    path = tmp_path / "mm2.properties"
    path.write_text(
        f"clusters = {source}, {target}\n"
        f"{source}.bootstrap.servers = {east.bootstrap_servers}\n"
        f"{target}.bootstrap.servers = {west.bootstrap_servers}\n"
        f"{source}->{target}.enabled = true\n"
        f"{source}->{target}.topics = orders.*, payments\n"
        "emit.heartbeats.enabled = false\n"
    )
    flow = load_config(path).flow(source, target)
    store = ControlStore(
        ClusterClients.of(target, {"bootstrap.servers": west.bootstrap_servers}),
        replication_factor=1,
    )
    try:
        store.change_list(flow, "topics", add=["invoices.*"], remove=["payments"])
        store.set_state(flow.name, "paused")
    finally:
        store.close()

    result = CliRunner().invoke(app, ["config", "check", str(path)])
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in result.output.splitlines()]
    summary = lines[lines.index(f"Flow {flow.name} (enabled)") + 1 :]
    assert summary[:4] == [
        "  topics          orders.*, invoices.* (effective, changed at run time)",
        "                  in the file: orders.*, payments",
        "                  added at run time: invoices.*",
        "                  removed at run time: payments",
    ]
    assert f"  run time        2 list changes (shown above), read from {target}" in summary
    assert "  wanted state    paused (an operator asked for it at run time)" in summary

    result = CliRunner().invoke(app, ["config", "check", "--json", str(path)])
    assert result.exit_code == 0, result.output
    (document,) = [f for f in json.loads(result.output)["flows"] if f["name"] == flow.name]
    runtime = document["runtime"]
    assert runtime["read_from"] == target
    assert runtime["state"] == "paused"
    assert runtime["lists"]["topics"] == {
        "file": ["orders.*", "payments"],
        "added": ["invoices.*"],
        "removed": ["payments"],
        "effective": ["orders.*", "invoices.*"],
    }
    assert document["runtime_note"] is None
