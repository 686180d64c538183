"""Leadership through a consumer group on the target: who leads, handovers, a lost session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import mirrorline
from mirrorline.engine.leadership import FlowLeadership
from mirrorline.kafka import ClusterClients
from support.driving import running_driver, write_config
from support.kafka_io import Record, create_topic, end_offsets, produce, unique_name
from support.wait import assert_stays, wait_until


def _leadership(
    cluster, flow: str, client_id: str, wake: threading.Event | None = None
) -> FlowLeadership:
    settings = {"bootstrap.servers": cluster.bootstrap_servers}
    return FlowLeadership(
        flow,
        ClusterClients.of(cluster.alias, settings),
        replication_factor=1,
        client_id=client_id,
        wake=wake,
    )


def test_the_first_driver_leads_a_later_one_stands_by_and_takes_over_when_it_leaves(
    two_clusters,
):
    _, west = two_clusters
    flow = f"{unique_name('east')}->west"  # a fresh group
    woken = threading.Event()
    first = _leadership(west, flow, "first")
    second = _leadership(west, flow, "second", wake=woken)
    try:
        started = time.monotonic()
        first.start()
        wait_until(lambda: first.term() == 1, timeout=30, what="the first driver to lead")
        print(f"a lone driver leads {time.monotonic() - started:.1f}s after joining")

        second.start()
        wait_until(
            lambda: second.describe().startswith("active driver: first (leading since "),
            timeout=30,
            what="the second driver to name the leader",
        )
        # Sticky: joining never takes the flow away from its leader.
        assert_stays(
            lambda: first.term() == 1 and second.term() is None,
            seconds=5,
            what="the first driver's leadership",
        )

        left = time.monotonic()
        first.close()
        assert first.term() is None
        assert not woken.is_set()  # standing by is no news to its flow
        wait_until(lambda: second.term() == 1, timeout=30, what="the second driver to lead")
        assert woken.is_set()  # its flow acts at once, not at its next tick
        print(f"after a clean stop the next driver leads {time.monotonic() - left:.1f}s later")
    finally:
        first.close()
        second.close()


_MEMBER = textwrap.dedent(
    """
    import sys, time
    from mirrorline.engine.leadership import FlowLeadership
    from mirrorline.kafka import ClusterClients
    bootstrap, flow = sys.argv[1], sys.argv[2]
    clients = ClusterClients.of("west", {"bootstrap.servers": bootstrap})
    leadership = FlowLeadership(flow, clients, replication_factor=1, client_id="paused")
    leadership.start()
    last = "unknown"
    while True:
        term = leadership.term()
        if term != last:
            print(f"term {term}", flush=True)
            last = term
        time.sleep(0.05)
    """
)


def test_a_paused_leader_is_replaced_and_learns_it_lost_the_flow(two_clusters, tmp_path):
    """A leader that stops heartbeating (here: SIGSTOP) loses the flow to a standby."""
    _, west = two_clusters
    flow = f"{unique_name('east')}->west"
    output = tmp_path / "member.out"
    source_root = str(Path(mirrorline.__file__).resolve().parents[1])
    with open(output, "wb") as out:
        member = subprocess.Popen(
            [sys.executable, "-c", _MEMBER, west.bootstrap_servers, flow],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": source_root},
        )
    standby = _leadership(west, flow, "standby")
    try:
        wait_until(lambda: "term 1" in output.read_text(), timeout=60, what="the member to lead")
        standby.start()
        wait_until(
            lambda: standby.describe().startswith("active driver: paused"),
            timeout=30,
            what="the standby to name the leader",
        )

        member.send_signal(signal.SIGSTOP)
        paused = time.monotonic()
        wait_until(lambda: standby.term() == 1, timeout=30, what="the standby to lead")
        print(f"the standby leads {time.monotonic() - paused:.1f}s after the leader paused")

        member.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        wait_until(
            lambda: output.read_text().rstrip().endswith("term None"),
            timeout=15,
            what=f"the resumed member to learn it lost the flow: {output.read_text()}",
        )
        print(f"the old leader knew it had lost {time.monotonic() - resumed:.1f}s after resuming")
        assert standby.term() == 1
    finally:
        member.kill()
        member.wait(10)
        standby.close()


def test_a_flow_that_loses_leadership_stops_replicating_and_stands_by(
    two_clusters, spark, tmp_path
):
    east, west = two_clusters
    topic = unique_name("lead")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=2)
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n",
    )
    batch = [Record(f"k{i}".encode(), f"v{i}".encode(), partition=i % 2) for i in range(500)]
    produce(east.bootstrap_servers, topic, batch)
    with running_driver(config, spark, tmp_path / "work") as driver:
        runner = driver.runners[0]

        def copied() -> int:
            return sum(end_offsets(west.bootstrap_servers, remote).values())

        wait_until(lambda: copied() >= 500, timeout=180, what="the first records replicated")
        assert runner.status().state == "running"

        # Leaving the group is what a revoked assignment looks like to the flow.
        runner.leadership.close()
        wait_until(
            lambda: runner.status().state == "standby",
            timeout=60,
            what="the flow to stand by",
        )
        assert runner.status().reason.startswith("waiting for leadership")
        produce(east.bootstrap_servers, topic, batch)
        assert_stays(lambda: copied() == 500, seconds=5, what="no replication while standing by")
