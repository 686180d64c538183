"""Leadership's pure parts: names, the group consumer's settings, announcements, terms."""

from __future__ import annotations

import io
import os
import socket

from rich.console import Console

from mirrorline.cli import driver_cmd
from mirrorline.engine.leadership import (
    SESSION_TIMEOUT_MS,
    Term,
    driver_id,
    group_consumer_settings,
    group_id,
)
from mirrorline.engine.leadership_holder import LEADERSHIP_TOPIC, Announcement, announcement
from mirrorline.engine.status import FlowStatus
from mirrorline.policy import DefaultReplicationPolicy


def test_group_is_named_after_the_flow():
    assert group_id("us-east->us-west") == "mirrorline.leader.us-east->us-west"
    assert group_id("a.b->c") != group_id("a->b.c")


def test_driver_id_names_host_and_process():
    assert driver_id() == f"mirrorline-driver@{socket.gethostname()}:{os.getpid()}"


def test_group_settings_keep_connection_settings_and_impose_the_groups_own():
    user = {
        "bootstrap.servers": "west:9092",
        "security.protocol": "SASL_SSL",
        "group.id": "someone-elses",
        "client.id": "app",
        "session.timeout.ms": 45000,
        "group.protocol": "consumer",
        "partition.assignment.strategy": "range",
        "group.instance.id": "static-1",
        "enable.auto.commit": True,
    }
    settings = group_consumer_settings(user, "east->west", "mirrorline-driver@h:1")
    assert settings["bootstrap.servers"] == "west:9092"
    assert settings["security.protocol"] == "SASL_SSL"
    assert settings["group.id"] == "mirrorline.leader.east->west"
    assert settings["client.id"] == "mirrorline-driver@h:1"
    assert settings["session.timeout.ms"] == SESSION_TIMEOUT_MS
    assert settings["group.protocol"] == "classic"
    assert settings["partition.assignment.strategy"] == "cooperative-sticky"
    assert settings["enable.auto.commit"] is False
    # A static member would keep a dead driver's leadership until its session ends
    # and would be refused a second membership: never used.
    assert "group.instance.id" not in settings


def test_the_leaders_announcement_is_carried_by_its_commit_metadata():
    said = Announcement("mirrorline-driver@a:1", 1_796_400_000_000)
    commit = said.offset()
    assert (commit.topic, commit.partition, commit.offset) == (LEADERSHIP_TOPIC, 0, 0)
    assert Announcement.of(commit.metadata) == said
    assert said.since() == "2026-12-04 16:00:00 UTC"
    assert announcement("me").driver == "me"


def test_metadata_that_is_no_announcement_names_nobody():
    for metadata in ("", "x", "[]", '{"driver": "a"}', '{"driver": "a", "since_ms": "soon"}'):
        assert Announcement.of(metadata) is None


def test_terms_number_each_period_of_leadership():
    term = Term()
    assert term.current is None
    assert term.end() is False
    assert term.gain() == 1
    assert term.gain() == 1  # a repeated assignment is the same period
    assert term.current == 1
    assert term.end() is True
    assert term.current is None
    assert term.gain() == 2


def test_the_leadership_topic_is_never_replicated():
    assert DefaultReplicationPolicy().is_mirror_internal_topic(LEADERSHIP_TOPIC)


def test_status_line_of_a_standby_flow_names_the_active_driver(monkeypatch):
    printed = io.StringIO()
    monkeypatch.setattr(driver_cmd, "out", Console(file=printed, width=200))
    printer = driver_cmd._StatusPrinter(every=0.001)
    printer._next = 0
    reason = "active driver: mirrorline-driver@a:1 (leading since 2026-12-04 16:00:00 UTC)"
    printer(
        [
            FlowStatus("east->west", "standby", reason),
            FlowStatus("west->east", "running", "", ("orders",), 3, 10),
        ]
    )
    lines = printed.getvalue().splitlines()
    assert lines[0] == f"east->west: standby — {reason}"
    assert lines[1].startswith("west->east: running, 1 topics / 3 partitions, 10 records")
