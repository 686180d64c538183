"""Records at the edges of what Kafka carries, replicated as they are.

- Records of 5 MiB, on a topic whose `max.message.bytes` allows them (the
  broker's default is 1 MiB): the remote topic takes the source's limit and
  every record arrives whole.
- A compacted topic with tombstones: null values stay null (a tombstone copied
  as an empty value would never delete its key on the target).

One driver run replicates both; `mirrorline verify` judges the copy.
"""

from __future__ import annotations

import json
import os

from confluent_kafka.admin import ConfigResource
from typer.testing import CliRunner

from mirrorline.cli.main import app
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    admin,
    consume,
    create_topic,
    end_offsets,
    produce,
    topic_names,
    unique_name,
)
from support.wait import wait_until

BIG = 5 * 1024 * 1024
LIMIT = str(BIG + 1024 * 1024)


def _config_of(bootstrap: str, topic: str, name: str) -> str:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    client = admin(bootstrap)  # alive until the future completes
    found = client.describe_configs([resource])[resource].result(30)
    return found[name].value


def test_five_mib_records_and_tombstones_are_copied_as_they_are(two_clusters, spark, tmp_path):
    east, west = two_clusters
    p = unique_name("edge")
    big, compacted = f"{p}.big", f"{p}.compacted"
    create_topic(east.bootstrap_servers, big, 2, config={"max.message.bytes": LIMIT})
    create_topic(east.bootstrap_servers, compacted, 2, config={"cleanup.policy": "compact"})
    large = [
        Record(f"k{i}".encode(), os.urandom(BIG), (("n", b"%d" % i),), None, i % 2)
        for i in range(4)
    ]
    produce(east.bootstrap_servers, big, large, {"message.max.bytes": int(LIMIT)})
    keyed = [Record(f"key{i % 5}".encode(), f"v{i}".encode(), (), None, i % 2) for i in range(20)]
    tombstones = [Record(b"key1", None, (), None, 1), Record(b"key2", None, (), None, 0)]
    produce(east.bootstrap_servers, compacted, keyed + tombstones)
    config = write_config(
        tmp_path / "edge.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {p}\\..*\n",
    )
    remote_big, remote_compacted = f"east.{big}", f"east.{compacted}"

    def copied(remote: str, count: int) -> bool:
        return remote in topic_names(west.bootstrap_servers) and (
            sum(end_offsets(west.bootstrap_servers, remote).values()) >= count
        )

    with running_driver(config, spark, tmp_path / "w") as driver:
        wait_until(
            lambda: (
                (copied(remote_big, 4) and copied(remote_compacted, 22))
                or driver.statuses()[0].state == "failed"
                and driver.statuses()[0].reason
            ),
            timeout=120,
            what="both topics copied",
        )
        assert driver.statuses()[0].state == "running", driver.statuses()[0].reason

        def verified() -> dict:
            done = CliRunner().invoke(
                app,
                ["verify", "-c", str(config), "-s", "east", "-t", "west", "--json"]
                + ["--topics", f"{big},{compacted}"],  # not a heartbeats topic left on east
            )
            assert done.exit_code == 0, done.output
            return json.loads(done.output)

        # Verified up to the saved progress, which follows the copy by a batch.
        report = wait_until(
            lambda: (r := verified())["totals"]["checked"] == 26 and r,
            timeout=30,
            what="every record verified",
        )
        assert report["verdict"] == "identical", report

    assert _config_of(west.bootstrap_servers, remote_big, "max.message.bytes") == LIMIT
    assert _config_of(west.bootstrap_servers, remote_compacted, "cleanup.policy") == "compact"
    copies = consume(west.bootstrap_servers, remote_big, expected=4, timeout=60)
    assert sorted((r.key, r.value, r.headers) for r in copies) == sorted(
        (r.key, r.value, r.headers) for r in large
    )
    nulls = [
        r for r in consume(west.bootstrap_servers, remote_compacted, expected=22) if r.value is None
    ]
    assert sorted(r.key for r in nulls) == [b"key1", b"key2"]
