"""Which flows emit heartbeats, when the next beat is due, and what gets logged."""

from __future__ import annotations

import pytest

from mirrorline.config import parse_config
from mirrorline.control.heartbeats import (
    BeatTracker,
    HeartbeatEmitter,
    heartbeat_flows_for,
    next_due,
)
from mirrorline.driver import check_supported, select_flows

BASE = """
clusters = a, b, c
a.bootstrap.servers = 127.0.0.1:1
b.bootstrap.servers = 127.0.0.1:2
c.bootstrap.servers = 127.0.0.1:3
a->b.enabled = true
"""


def _names(flows) -> list[str]:
    return sorted(f.name for f in flows)


def test_every_pair_emits_into_every_served_cluster_enabled_or_not():
    config = parse_config(BASE)
    assert _names(heartbeat_flows_for(config, None)) == [
        "a->b",
        "a->c",
        "b->a",
        "b->c",
        "c->a",
        "c->b",
    ]


def test_clusters_limits_heartbeats_to_flows_into_them():
    config = parse_config(BASE)
    assert _names(heartbeat_flows_for(config, ["a"])) == ["b->a", "c->a"]


def test_a_disabled_flow_without_heartbeats_does_nothing():
    config = parse_config(BASE + "c->a.emit.heartbeats.enabled = false\n")
    assert "c->a" not in _names(heartbeat_flows_for(config, None))
    # ...while an enabled flow with heartbeats switched off still replicates.
    off = parse_config(BASE + "a->b.emit.heartbeats.enabled = false\n")
    assert "a->b" not in _names(heartbeat_flows_for(off, None))
    assert _names(select_flows(off, None)) == ["a->b"]


def test_a_cluster_without_bootstrap_servers_gets_no_heartbeats():
    config = parse_config(BASE.replace("c.bootstrap.servers = 127.0.0.1:3\n", ""))
    assert not any(f.target == "c" for f in heartbeat_flows_for(config, None))


def test_heartbeats_are_no_longer_noted_as_missing():
    notes = check_supported(select_flows(parse_config(BASE), None))
    assert not any("heartbeats" in n for n in notes)


def test_emitter_uses_the_flow_interval_topic_and_target_producer():
    config = parse_config(BASE + "b->a.emit.heartbeats.interval.seconds = 7\n")
    emitter = HeartbeatEmitter(config.flow("b", "a"))
    assert emitter.interval == 7.0
    assert emitter.topic == "heartbeats"
    status = emitter.status()
    assert (status.flow, status.target, status.emitted, status.error) == ("b->a", "a", 0, "")


def test_emitter_refuses_a_flow_that_emits_no_heartbeats():
    config = parse_config(BASE + "b->a.emit.heartbeats.enabled = false\n")
    with pytest.raises(ValueError, match="b->a does not emit heartbeats"):
        HeartbeatEmitter(config.flow("b", "a"))


@pytest.mark.parametrize(
    ("due", "now", "expected"),
    [
        (10.0, 10.01, 11.0),  # a quick beat: the next slot
        (10.0, 10.99, 11.0),
        (10.0, 11.5, 12.0),  # a slow beat overran one slot: skipped, not made up
        (10.0, 14.2, 15.0),
        (10.0, 9.0, 11.0),  # a clock read before the slot (cannot happen, stays sane)
    ],
)
def test_next_beat_keeps_the_rhythm_and_skips_missed_slots(due, now, expected):
    assert next_due(due, 1.0, now) == pytest.approx(expected)


def test_tracker_logs_changes_of_state_only():
    tracker = BeatTracker("a->b", "b", "heartbeats")
    assert "emitting heartbeats to b" in tracker.succeeded(1000)
    assert tracker.succeeded(2000) is None
    first = tracker.failed("Connection refused")
    assert first is not None and "a->b" in first and "Connection refused" in first
    assert tracker.failed("Connection refused") is None
    assert tracker.failed("another reason") is None  # still failing: the status says why
    status = tracker.status()
    assert status.failing and status.error == "another reason"
    assert (status.emitted, status.last_emitted_ms) == (2, 2000)
    assert "after 3 failed" in tracker.succeeded(5000)
    assert tracker.status().error == "" and tracker.status().emitted == 3


def test_status_text_for_the_driver_line():
    tracker = BeatTracker("a->b", "b", "heartbeats")
    tracker.succeeded(1)
    assert str(tracker.status()) == "a->b 1 sent"
    tracker.failed("Connection refused")
    assert str(tracker.status()) == "a->b failing: Connection refused"
