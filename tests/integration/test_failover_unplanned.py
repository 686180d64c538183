"""`mirrorline failover --unplanned` with the source cluster down, on clusters of this test alone.

East replicates a first batch to west, then the flow's driver goes away and
east receives a second batch nobody replicates; then east stops. The unplanned
failover completes without east: it stops the flow through west, sets each
group's latest checkpointed offsets on west (and leaves a group that is ahead
on west where it is, saying why), and its loss window says up to when west
has east's data: exactly the newest replicated record, with every lost record
after it. While east still answered, a dry run counted the records not
replicated, exactly.
"""

from __future__ import annotations

import json
import subprocess
import time
from contextlib import ExitStack

import pytest

from mirrorline.control.control_store import ControlStore
from mirrorline.devcluster import DevClusters
from support.driver_process import run_mirrorline
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    checkpoints_of,
    cluster_clients,
    commit_offsets,
    committed_offsets,
    create_topic,
    end_offsets,
    produce,
    recent_timestamp,
    unique_name,
)
from support.wait import wait_until

PARTITIONS = 2


@pytest.fixture
def own_clusters(tmp_path):
    """Clusters of this test alone: it stops one of them."""
    dev = DevClusters(tmp_path / "clusters")
    east, west = dev.up(["east", "west"], die_with_parent=True)
    yield dev, east, west
    dev.down()


@pytest.mark.parametrize("driver", ["gone", "running"])
def test_unplanned_failover_with_the_source_down_reports_the_loss_window(
    own_clusters, spark, tmp_path, driver
):
    """`gone`: the flow's driver went away before east did. `running`: it still runs (the flow
    paused, so the second batch is not replicated) and is stopped through the control topic."""
    dev, east, west = own_clusters
    topic = unique_name("payments")
    remote = f"east.{topic}"
    group, ahead = unique_name("billing"), unique_name("audit")
    create_topic(east.bootstrap_servers, topic, PARTITIONS)
    # Timestamps in order, a minute ago and later: the writer keeps them on west.
    replicated = produce(
        east.bootstrap_servers,
        topic,
        [
            Record(
                b"k",
                f"first-{i}".encode(),
                timestamp=recent_timestamp(60_000 - i * 10),
                partition=i % PARTITIONS,
            )
            for i in range(400)
        ],
    )
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        "east->west.enabled = true\n"
        f"east->west.topics = {topic}\n"
        f"east->west.groups = {group}, {ahead}\n"
        "emit.checkpoints.interval.seconds = 1\n"
        "refresh.groups.interval.seconds = 1\n"
        "emit.metrics.interval.seconds = 1\n",
    )
    commit_offsets(east.bootstrap_servers, group, topic, {0: 120, 1: 35})
    commit_offsets(east.bootstrap_servers, ahead, topic, {0: 10, 1: 10})
    with ExitStack() as running:
        flow = running.enter_context(running_driver(config, spark, tmp_path / "work"))
        wait_until(
            lambda: _ends(west, remote) == {0: 200, 1: 200},
            timeout=120,
            what="the first batch replicated",
        )
        for name, wanted in ((group, {0: 120, 1: 35}), (ahead, {0: 10, 1: 10})):
            wait_until(
                lambda name=name, wanted=wanted: (
                    {
                        p: c.upstream_offset
                        for p, c in checkpoints_of(
                            west.bootstrap_servers, "east", name, remote
                        ).items()
                    }
                    == wanted
                ),
                timeout=60,
                what=f"checkpoints of {name}",
            )
        if driver == "running":
            ControlStore(cluster_clients(west)).set_state("east->west", "paused")
            wait_until(lambda: flow.statuses()[0].state == "paused", timeout=30, what="flow paused")
            running = running.pop_all()  # the driver outlives this block
        # `ahead` already reads on west, further than its checkpoint.
        commit_offsets(west.bootstrap_servers, ahead, remote, {0: 50})
    lost = produce(
        east.bootstrap_servers,
        topic,
        [
            Record(
                b"k",
                f"lost-{i}".encode(),
                timestamp=recent_timestamp(20_000 - i * 10),
                partition=i % PARTITIONS,
            )
            for i in range(30)
        ],
    )
    state_file = tmp_path / "failover.json"
    args = ["-c", config, "--from", "east", "--to", "west", "--unplanned", "--json"]

    dry = _cli("failover", *args, "--dry-run", "--state-file", state_file)
    assert dry.returncode == 0, dry.stderr
    [preview] = json.loads(dry.stdout)["loss_window"]
    assert preview["records_not_replicated"] == len(lost)
    assert [p["records_not_replicated"] for p in preview["partitions"]] == [15, 15]
    assert not state_file.exists()
    assert ControlStore(cluster_clients(west)).read("east->west").state == (
        "paused" if driver == "running" else "running"
    )

    dev.stop("east")
    done = _cli("failover", *args, "--state-file", state_file)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["finished"] and report["source_reachable"] is False
    [loss] = report["loss_window"]
    newest = {
        p: max(r.timestamp for r in replicated if r.partition == p) for p in range(PARTITIONS)
    }
    assert [p["newest_replicated_ms"] for p in loss["partitions"]] == [newest[0], newest[1]]
    assert loss["newest_replicated_ms"] == max(newest.values())
    assert loss["records_not_replicated"] is None  # east does not answer
    assert all(r.timestamp > loss["newest_replicated_ms"] for r in lost)
    now_ms = int(time.time() * 1000)
    assert 0 < loss["window_s"] * 1000 <= now_ms - loss["newest_replicated_ms"]

    groups = {g["group"]: g for g in report["groups"]}
    assert groups[group]["status"] == "moved"
    checkpointed = {
        p: c.downstream_offset
        for p, c in checkpoints_of(west.bootstrap_servers, "east", group, remote).items()
    }
    assert committed_offsets(west.bootstrap_servers, group, remote, PARTITIONS) == checkpointed
    assert groups[ahead]["status"] in ("moved", "held back")
    assert any("ahead of" in p for p in groups[ahead]["problems"])
    assert committed_offsets(west.bootstrap_servers, ahead, remote, PARTITIONS)[0] == 50
    assert ControlStore(cluster_clients(west)).read("east->west").state == "stopped"

    again = _cli("failover", *args, "--state-file", state_file)
    assert again.returncode == 0 and json.loads(again.stdout)["already_done"], again.stderr
    if driver == "running":
        # Its driver waits for east to retry the failed flow; the control record it reads
        # then keeps the flow stopped.
        assert "stopped" in report["stopped"]
        with running:
            pass  # the driver stops


def _ends(cluster, topic: str) -> dict[int, int] | None:
    try:
        return end_offsets(cluster.bootstrap_servers, topic, timeout=2)
    except Exception:  # noqa: BLE001 - the remote topic does not exist yet
        return None


def _cli(*args) -> subprocess.CompletedProcess[str]:
    return run_mirrorline(*args, timeout=300)
