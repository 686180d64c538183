"""Two 3-node clusters through a rolling restart of both and a leader kill: nothing lost.

The short chaos run (`tests/support/chaos_harness.py`; `benchmarks/chaos.py`
runs the long ones, with controller kills, an outage and driver kills): one
driver copies a stream east->west in exactly-once mode and west->east in
at-least-once mode while node i of both clusters is restarted, for every i in
turn, and then the node leading the exactly-once topic's first partition on
east is SIGKILLed. `mirrorline verify` and a census of the copies by sequence
number judge: exactly-once loses nothing and copies nothing twice,
at-least-once loses nothing; the driver stops on SIGTERM with exit code 0 and
no traceback. (A driver SIGKILL in both modes: `test_crash_safety.py`.)
"""

from __future__ import annotations

import pytest

from mirrorline.devcluster import DevClusters
from support.chaos_events import parse_schedule
from support.chaos_harness import ChaosPlan, run_chaos

SCHEDULE = "rolling-restart,leader-kill:east"


@pytest.mark.timeout(900)
def test_both_modes_keep_their_guarantees_through_restarts_and_a_leader_kill(tmp_path):
    dev = DevClusters(tmp_path / "clusters")
    dev.up(["east", "west"], brokers=3, die_with_parent=True)
    try:
        plan = ChaosPlan(parse_schedule(SCHEDULE, ("east", "west")), rate=500)
        report = run_chaos(dev, tmp_path / "run", plan)
    finally:
        dev.down()

    print(report.to_dict())
    assert report.violations() == []
    assert [e.event for e in report.events] == SCHEDULE.split(",")
    for flow in report.flows:
        assert flow.produced > 1_000 and flow.verify is not None
        assert flow.verify["checked"] == flow.produced, flow
