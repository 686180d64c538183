"""200 topics of 10 partitions each: one flow copies all 2,000 partitions, every record verified.

On clusters of its own (the shared ones stay small for the other tests), a
record in every partition; the flow selects the topics by a pattern, creates
the 200 remote topics, copies every record, and `mirrorline verify` proves the
copy identical partition by partition. The time to the first and to the last
copied record is printed (run with `-s`); `benchmarks/many_partitions.py`
measures start time and memory beside MirrorMaker 2.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec
from typer.testing import CliRunner

from mirrorline.admin_client import AdminClient
from mirrorline.cli.main import app
from mirrorline.devcluster import DevClusters
from support.driving import running_driver, write_config
from support.wait import wait_until

TOPICS, PARTITIONS = 200, 10


def _records(admin: AdminClient, topics: list[str]) -> int:
    """Records in those of `topics` that exist so far (their end offsets added up)."""
    present = set(admin.list_topics(timeout=30).topics)
    wanted = {
        TopicPartition(t, p): OffsetSpec.latest()
        for t in topics
        if t in present
        for p in range(PARTITIONS)
    }
    total = 0
    for future in admin.list_offsets(wanted, request_timeout=30).values() if wanted else ():
        try:
            total += future.result(60).offset
        except KafkaException:  # a partition just created, without a leader yet
            continue
    return total


@pytest.mark.timeout(600)
def test_two_thousand_partitions_are_copied_and_verified(spark, tmp_path):
    dev = DevClusters(tmp_path / "clusters")
    east, west = dev.up(["east", "west"], die_with_parent=True)
    try:
        topics = [f"many.{i:03d}" for i in range(TOPICS)]
        source = AdminClient({"bootstrap.servers": east.bootstrap_servers})
        created = source.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics])
        for future in created.values():
            future.result(120)
        # Idempotent: a broker busy creating 2,000 logs can leave requests unanswered
        # past the client's timeout, and a plain producer's retry then writes twice.
        producer = Producer(
            {
                "bootstrap.servers": east.bootstrap_servers,
                "linger.ms": 50,
                "enable.idempotence": True,
            }
        )
        for t in topics:
            for p in range(PARTITIONS):
                producer.produce(t, b"%s/%d" % (t.encode(), p), b"k%d" % p, p)
        assert producer.flush(180) == 0
        assert _records(source, topics) == TOPICS * PARTITIONS, "one record per source partition"
        config = write_config(
            tmp_path / "many.properties",
            [east, west],
            "east->west.enabled = true\neast->west.topics = many\\..*\n",
        )
        target = AdminClient({"bootstrap.servers": west.bootstrap_servers})
        remote = [f"east.{t}" for t in topics]
        began = time.monotonic()
        with running_driver(config, spark, tmp_path / "w"):
            wait_until(lambda: _records(target, remote) > 0, timeout=300, what="a first copy")
            first = time.monotonic() - began
            wait_until(
                lambda: _records(target, remote) == TOPICS * PARTITIONS,
                timeout=300,
                what=f"all {TOPICS * PARTITIONS} records copied",
            )
            every = time.monotonic() - began
        # Stopped between batches: its saved progress covers every copied record.
        verifying = time.monotonic()
        done = CliRunner().invoke(
            app, ["verify", "-c", str(config), "-s", "east", "-t", "west", "--json"]
        )
        verified = time.monotonic() - verifying
        assert done.exit_code in (0, 1), done.output
        report = json.loads(done.output)
        print(
            f"\n{TOPICS} x {PARTITIONS}: first copy after {first:.1f} s, all after {every:.1f} s; "
            f"verified in {verified:.1f} s"
        )
        assert report["verdict"] == "identical", report["totals"]
        assert report["totals"]["not_yet_copied"] == 0
        assert report["totals"]["checked"] == TOPICS * PARTITIONS
        assert len(report["topics"]) == TOPICS
    finally:
        dev.down()
