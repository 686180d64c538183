"""Operators change a running flow: its topic lists, its lifecycle and its positions.

Each test runs a real driver on the session's two clusters and drives it with
the `mirrorline` commands an operator would type (in-process, through Typer).
The topic refresh interval is five minutes, so a list change can only take
effect through the control topic, not through a routine refresh.
"""

from __future__ import annotations

import json
import logging
import time

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.engine.progress import ProgressStore
from support.control import reset_control
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    checkpoints_of,
    cluster_clients,
    commit_offsets,
    consume,
    consume_to_end,
    create_topic,
    delete_topics,
    end_offsets,
    produce,
    topic_names,
    unique_name,
)
from support.wait import assert_stays, wait_until

QUICK = (
    "east->west.refresh.topics.interval.seconds = 300\n"
    "emit.metrics.interval.seconds = 1\n"
    "emit.checkpoints.enabled = false\n"
)


@pytest.fixture(autouse=True)
def flow_as_new_afterwards(two_clusters):
    """Other tests use the flow east->west too: no list change or state is left behind."""
    yield
    reset_control(two_clusters[1], "east->west")


def _mirrorline(*args: str, expect: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    return result.output


def _flow(config) -> list[str]:
    return ["-c", str(config), "-s", "east", "-t", "west"]


def _remote_count(cluster, topic: str) -> int:
    if topic not in topic_names(cluster.bootstrap_servers):
        return -1
    return sum(end_offsets(cluster.bootstrap_servers, topic).values())


def _records(prefix: str, count: int, partitions: int = 2) -> list[Record]:
    return [Record(f"{prefix}-{i}".encode(), b"v", (), None, i % partitions) for i in range(count)]


def test_topics_added_and_removed_at_run_time(two_clusters, spark, tmp_path):
    east, west = two_clusters
    base, extra = unique_name("base"), unique_name("extra")
    for topic in (base, extra):
        create_topic(east.bootstrap_servers, topic, partitions=2)
        produce(east.bootstrap_servers, topic, _records(topic, 40))
    config = write_config(
        tmp_path / "lists.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {base}\n" + QUICK,
    )
    with running_driver(config, spark, tmp_path / "w") as driver:
        wait_until(lambda: _remote_count(west, f"east.{base}") == 40, timeout=60, what="base")
        base_ends = end_offsets(west.bootstrap_servers, f"east.{base}")

        added = time.monotonic()
        _mirrorline("topics", *_flow(config), "--add", extra)
        wait_until(
            lambda: _remote_count(west, f"east.{extra}") == 40, timeout=30, what="the added topic"
        )
        took = time.monotonic() - added
        print(f"the added topic's 40 records were on the target {took:.1f}s after the command")
        assert took < 10, f"the added topic took {took:.1f}s to be replicated"

        listed = json.loads(_mirrorline("topics", *_flow(config), "--list", "--json"))
        assert listed["lists"]["topics"] == {
            "configured": [base],
            "added": [extra],
            "removed": [],
            "effective": [base, extra],
        }

        flows = json.loads(_mirrorline("status", "-c", str(config), "--json"))["flows"]
        assert flows[0]["control"]["lists"] == {"topics": {"added": [extra], "removed": []}}

        _mirrorline("topics", *_flow(config), "--remove", extra)
        wait_until(
            lambda: driver.statuses()[0].topics == (base,), timeout=30, what="extra left out"
        )
        produce(east.bootstrap_servers, extra, _records(f"{extra}-late", 10))
        assert_stays(
            lambda: _remote_count(west, f"east.{extra}") == 40, seconds=3, what="extra not copied"
        )

        # Allowed again: only what it missed is copied, nothing twice.
        _mirrorline("topics", *_flow(config), "--add", extra)
        wait_until(lambda: _remote_count(west, f"east.{extra}") == 50, timeout=30, what="catch-up")
        assert_stays(lambda: _remote_count(west, f"east.{extra}") == 50, seconds=2, what="50")
        assert end_offsets(west.bootstrap_servers, f"east.{base}") == base_ends

    # A file pattern removed at run time: hidden, and back when added again.
    _mirrorline("topics", *_flow(config), "--remove", base)
    listed = json.loads(_mirrorline("topics", *_flow(config), "--list", "--json"))
    assert listed["lists"]["topics"]["effective"] == [extra]
    _mirrorline("topics", *_flow(config), "--add", base)
    listed = json.loads(_mirrorline("topics", *_flow(config), "--list", "--json"))
    assert listed["lists"]["topics"]["removed"] == []
    out = _mirrorline("topics", *_flow(config), "--remove", "nothing-like-it", expect=1)
    assert "is not in flow east->west's topics list" in out


def test_pause_holds_positions_and_resume_loses_and_duplicates_nothing(
    two_clusters, spark, tmp_path
):
    east, west = two_clusters
    topic = unique_name("paused")
    create_topic(east.bootstrap_servers, topic, partitions=2)
    produce(east.bootstrap_servers, topic, _records("a", 100))
    config = write_config(
        tmp_path / "pause.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "exactly.once.source.support = enabled\n" + QUICK,
    )
    remote = f"east.{topic}"
    with running_driver(config, spark, tmp_path / "w"):
        wait_until(lambda: _remote_count(west, remote) >= 100, timeout=60, what="100 records")
        _mirrorline("pause", *_flow(config))
        # --topic: the flow also replicates any heartbeats topic the cluster has.
        shown = ("positions", "show", *_flow(config), "--topic", topic, "--json")
        before = json.loads(_mirrorline(*shown))
        assert before["state"] == "paused"
        produce(east.bootstrap_servers, topic, _records("b", 60))
        wait_until(
            lambda: sum(p["lag"] for p in json.loads(_mirrorline(*shown))["positions"]) == 60,
            timeout=30,
            what="the lag to grow by what was produced",
        )
        ends = end_offsets(west.bootstrap_servers, remote)
        assert_stays(
            lambda: end_offsets(west.bootstrap_servers, remote) == ends,
            seconds=3,
            what="nothing written while paused",
        )
        after = json.loads(_mirrorline(*shown))
        assert [p["offset"] for p in after["positions"]] == [
            p["offset"] for p in before["positions"]
        ]
        _mirrorline("resume", *_flow(config))
        wait_until(
            lambda: len(consume(west.bootstrap_servers, remote, expected=160, timeout=5)) == 160,
            timeout=60,
            what="the paused records to arrive",
        )
    # Everything the driver wrote, read once it stopped: a duplicate would show.
    records = consume_to_end(west.bootstrap_servers, remote)
    produced = [f"a-{i}".encode() for i in range(100)] + [f"b-{i}".encode() for i in range(60)]
    assert sorted(r.key for r in records) == sorted(produced)


def test_positions_leave_out_a_topic_deleted_at_the_source(two_clusters, tmp_path):
    """The flow copied two topics; one was deleted on the source since. Its saved progress
    stays on the target, but there is nothing left of it to copy or to measure."""
    east, west = two_clusters
    kept, deleted = unique_name("kept"), unique_name("deleted")
    for topic in (kept, deleted):
        create_topic(east.bootstrap_servers, topic)
        produce(east.bootstrap_servers, topic, _records(topic, 5, partitions=1))
    progress = ProgressStore("east->west", cluster_clients(west), replication_factor=1)
    try:
        progress.ensure_topic()
        progress.save({(kept, 0): 3, (deleted, 0): 5})
    finally:
        progress.close()
    delete_topics(east.bootstrap_servers, [deleted])
    config = write_config(
        tmp_path / "c.properties", [east, west], f"east->west.enabled = true\ntopics = {kept}\n"
    )

    shown = json.loads(_mirrorline("positions", "show", *_flow(config), "--json"))

    by_topic = {p["topic"]: p for p in shown["positions"]}
    assert deleted not in by_topic
    assert (by_topic[kept]["offset"], by_topic[kept]["lag"]) == (3, 2)


def test_positions_set_on_a_stopped_flow_and_refused_on_a_running_one(
    two_clusters, spark, tmp_path
):
    east, west = two_clusters
    topic = unique_name("moved")
    create_topic(east.bootstrap_servers, topic, partitions=2)
    base_ms = int(time.time() * 1000) - 600_000
    produce(
        east.bootstrap_servers,
        topic,
        [Record(f"{i}".encode(), b"v", (), base_ms + i * 1000, i % 2) for i in range(100)],
    )
    config = write_config(
        tmp_path / "positions.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n" + QUICK,
    )
    remote = f"east.{topic}"
    moment = base_ms + 60 * 1000  # record 60: offset 30 of partition 0, and of partition 1
    with running_driver(config, spark, tmp_path / "w"):
        wait_until(lambda: _remote_count(west, remote) == 100, timeout=60, what="100 records")
        out = _mirrorline("positions", "set", *_flow(config), "--timestamp", str(moment), expect=1)
        assert "positions are set only on a stopped flow" in out
        _mirrorline("stop", *_flow(config))
        moved = json.loads(
            _mirrorline(
                "positions",
                "set",
                *_flow(config),
                "--topic",
                topic,
                "--timestamp",
                str(moment),
                "--json",
            )
        )  # --topic: the flow also replicates any heartbeats topic the cluster has
        assert moved["applied"] is True
        assert {(p["topic"], p["partition"], p["offset"]) for p in moved["positions"]} == {
            (topic, 0, 30),
            (topic, 1, 30),
        }
        produce(east.bootstrap_servers, topic, _records("stopped", 10))
        assert_stays(lambda: _remote_count(west, remote) == 100, seconds=3, what="stopped")

    # The state outlives the driver: a new one leaves the flow stopped until `start`.
    with running_driver(config, spark, tmp_path / "w2") as driver:
        wait_until(lambda: driver.statuses()[0].state == "stopped", timeout=60, what="stopped")
        assert_stays(lambda: _remote_count(west, remote) == 100, seconds=2, what="still stopped")
        _mirrorline("start", *_flow(config))
        # From offset 30 of each partition: 2 x 20 again, plus the 10 written while stopped.
        wait_until(lambda: _remote_count(west, remote) == 150, timeout=60, what="from offset 30")
    assert end_offsets(west.bootstrap_servers, remote) == {0: 75, 1: 75}


def test_group_and_topic_exclusions_group_changes_and_restart(
    two_clusters, spark, tmp_path, caplog
):
    """`topics.exclude` keeps a matching topic out; a group regex list and
    `groups.exclude` choose the checkpointed groups, and `mirrorline groups`
    changes them at run time (the group refresh is five minutes away);
    `mirrorline restart` starts the query again from its saved progress,
    losing and duplicating nothing (`mirrorline verify` judges)."""
    east, west = two_clusters
    p, g = unique_name("ops"), unique_name("team")
    kept, skipped = f"{p}.kept", f"{p}.skipped"
    for topic in (kept, skipped):
        create_topic(east.bootstrap_servers, topic, partitions=2)
        produce(east.bootstrap_servers, topic, _records(topic, 40))
    chosen, excluded, unlisted = f"{g}-a", f"{g}-x1", unique_name("other")
    for group in (chosen, excluded, unlisted):
        commit_offsets(east.bootstrap_servers, group, kept, {0: 10, 1: 10})
    config = write_config(
        tmp_path / "groups.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {p}\\..*\n"
        f"east->west.topics.exclude = {p}\\.skip.*\n"
        f"east->west.groups = {g}-.*\neast->west.groups.exclude = {g}-x.*\n"
        "east->west.refresh.topics.interval.seconds = 300\n"
        "refresh.groups.interval.seconds = 300\nemit.checkpoints.interval.seconds = 1\n",
    )
    remote = f"east.{kept}"

    def checkpointed() -> set[str]:
        return {
            g
            for g in (chosen, excluded, unlisted)
            if checkpoints_of(west.bootstrap_servers, "east", g, remote)
        }

    caplog.set_level(logging.INFO, logger="mirrorline.engine.flow")
    with running_driver(config, spark, tmp_path / "w"):
        wait_until(lambda: _remote_count(west, remote) == 40, timeout=60, what="kept")
        wait_until(lambda: chosen in checkpointed(), timeout=30, what=f"{chosen} checkpointed")
        assert_stays(
            lambda: (
                checkpointed() == {chosen}
                and f"east.{skipped}" not in topic_names(west.bootstrap_servers)
            ),
            seconds=2,
            what="only the chosen group and topic",
        )
        _mirrorline("groups", *_flow(config), "--add", unlisted)
        wait_until(lambda: unlisted in checkpointed(), timeout=30, what=f"{unlisted} added")
        assert excluded not in checkpointed()

        _mirrorline("restart", *_flow(config))
        produce(east.bootstrap_servers, kept, _records(f"{kept}-late", 20))
        wait_until(lambda: _remote_count(west, remote) == 60, timeout=60, what="after restart")
        assert_stays(lambda: _remote_count(west, remote) == 60, seconds=2, what="no duplicate")
        verified = _mirrorline("verify", *_flow(config), "--topics", kept, "--json")
        assert json.loads(verified)["verdict"] == "identical", verified
    starts = [r for r in caplog.records if "replicating" in r.getMessage()]
    assert len(starts) == 2, [r.getMessage() for r in starts]  # started, then restarted
