"""Offsets in data another tool copied translate by timestamp, and say so.

Another tool (here: the test, copying records with their timestamps) copied a
topic's first 60 records per partition; the flow continues from offset 60
(`start.position` with explicit offsets). A group that committed inside the
other tool's copy has no exact translation: its checkpoint comes from the
committed record's timestamp, and the driver's status and `offsets export`
name it as translated by timestamp. A group committed in the flow's own copy
stays exact.
"""

from __future__ import annotations

import json

from support.driver_process import run_mirrorline
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    checkpoints_of,
    commit_offsets,
    consume,
    create_topic,
    produce,
    recent_timestamp,
    unique_name,
)
from support.wait import wait_until

COPIED = 60  # per partition, by the other tool
TOTAL = 100  # per partition


def test_offsets_in_data_copied_before_translate_by_timestamp(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic, old, new = unique_name("stamped"), unique_name("old"), unique_name("new")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, 2)
    create_topic(west.bootstrap_servers, remote, 2)
    start = recent_timestamp(600_000)
    records = [
        Record(f"k{i}".encode(), f"v{i}".encode(), (), start + i * 10, p)
        for i in range(TOTAL)
        for p in (0, 1)
    ]
    produce(east.bootstrap_servers, topic, records)
    # The other tool's copy: the first records of each partition, timestamps kept.
    produce(west.bootstrap_servers, remote, [r for r in records if int(r.key[1:]) < COPIED])
    commit_offsets(east.bootstrap_servers, old, topic, {0: 25, 1: 40})
    commit_offsets(east.bootstrap_servers, new, topic, {0: 80, 1: 90})
    config = write_config(
        tmp_path / "stamped.properties",
        [east, west],
        "east->west.enabled = true\n"
        f"east->west.topics = {topic}\n"
        f"east->west.groups = {old}, {new}\n"
        f"east->west.start.position = {topic}:0:{COPIED}, {topic}:1:{COPIED}\n"
        "emit.checkpoints.interval.seconds = 1\n"
        "refresh.groups.interval.seconds = 1\n",
    )
    with running_driver(config, spark, tmp_path / "work") as driver:
        wait_until(
            lambda: (
                len(consume(west.bootstrap_servers, remote, expected=2 * TOTAL, timeout=5))
                == 2 * TOTAL
            ),
            timeout=120,
            what="the flow's copy of the rest",
        )

        def checkpointed(group: str) -> dict[int, tuple[int, int]]:
            found = checkpoints_of(west.bootstrap_servers, "east", group, remote)
            return {p: (c.upstream_offset, c.downstream_offset) for p, c in found.items()}

        # Each record sits at the same offset on both sides: exact or by timestamp, the
        # right answer is the committed offset itself.
        wait_until(
            lambda: checkpointed(old) == {0: (25, 25), 1: (40, 40)},
            timeout=60,
            what="the old group's checkpoints",
        )
        wait_until(
            lambda: checkpointed(new) == {0: (80, 80), 1: (90, 90)},
            timeout=60,
            what="the new group's checkpoints",
        )
        stats = wait_until(
            lambda: (c := driver.statuses()[0].checkpoints) and c.translated_by_timestamp and c,
            timeout=30,
            what="the status to name the group",
        )
        assert stats.translated_by_timestamp == (old,)

    exported = run_mirrorline(
        "offsets", "export", "-c", config, "-s", "east", "-t", "west", "-g", old, "--format", "json"
    )
    assert exported.returncode == 0, exported.stderr
    offsets = json.loads(exported.stdout)["offsets"]
    assert {(o["partition"], o["offset"], o.get("translated_by")) for o in offsets} == {
        (0, 25, "timestamp"),
        (1, 40, "timestamp"),
    }
    assert "translated by timestamp" in exported.stderr
    exact = run_mirrorline(
        "offsets", "export", "-c", config, "-s", "east", "-t", "west", "-g", new, "--format", "json"
    )
    assert all("translated_by" not in o for o in json.loads(exact.stdout)["offsets"])
