"""`mirrorline offsets export / apply` on real clusters, with Kafka's own tool reading the CSV.

Checkpoints of the flow east->west are written straight into
`east.checkpoints.internal` on west, in MM2's format, as a running flow would;
each test uses its own remote topic and groups, so tests share that topic safely.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from typer.testing import CliRunner

from mirrorline import jvm
from mirrorline.acked_writer import AckedWriter
from mirrorline.cli.main import app
from mirrorline.formats import Checkpoint
from mirrorline.kafka import ensure_topic
from support.driving import write_config
from support.kafka_io import Record, admin, create_topic, produce, unique_name
from support.wait import wait_until

CHECKPOINTS_TOPIC = "east.checkpoints.internal"
RECORDS_PER_PARTITION = 10
CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


@pytest.fixture
def config(two_clusters, tmp_path: Path) -> Path:
    return write_config(tmp_path / "mm2.properties", two_clusters, "east->west.enabled = true\n")


@pytest.fixture
def west(two_clusters):
    return two_clusters[1]


@pytest.fixture
def remote_topic(west) -> str:
    """A remote topic on west, 3 partitions of 10 records each."""
    topic = f"east.{unique_name('orders')}"
    create_topic(west.bootstrap_servers, topic, partitions=3)
    produce(
        west.bootstrap_servers,
        topic,
        [Record(b"k", b"v", partition=p) for p in range(3) for _ in range(RECORDS_PER_PARTITION)],
    )
    return topic


def write_checkpoints(west, checkpoints: list[Checkpoint]) -> None:
    ensure_topic(
        admin(west.bootstrap_servers),
        CHECKPOINTS_TOPIC,
        replication_factor=1,
        config={"cleanup.policy": "compact"},
    )
    writer = AckedWriter({"bootstrap.servers": west.bootstrap_servers}, "checkpoints")
    try:
        writer.write(CHECKPOINTS_TOPIC, [(c.key(), c.value()) for c in checkpoints], partition=0)
    finally:
        writer.close()


def checkpointed_group(west, topic: str) -> tuple[str, dict[tuple[str, int], int]]:
    """A new group with checkpoints for each partition of `topic`; its translated offsets."""
    group = unique_name("billing")
    # An older checkpoint first: the latest one per partition counts.
    checkpoints = [Checkpoint(group, topic, 0, 90, 6, "")]
    checkpoints += [
        Checkpoint(group, topic, 0, 100, 7, "meta-0"),
        Checkpoint(group, topic, 1, 50, 4, "meta-1"),
        Checkpoint(group, topic, 2, 12, RECORDS_PER_PARTITION, ""),
    ]
    write_checkpoints(west, checkpoints)
    return group, {(topic, 0): 7, (topic, 1): 4, (topic, 2): RECORDS_PER_PARTITION}


def offsets(config: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["offsets", *args[:1], "-c", str(config), *args[1:]])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr


def committed(west, group: str, topic: str) -> dict[tuple[str, int], tuple[int, str]]:
    """The group's committed offsets and metadata, read by a consumer outside the group."""
    consumer = Consumer({"bootstrap.servers": west.bootstrap_servers, "group.id": group})
    try:
        tps = [TopicPartition(topic, p) for p in range(3)]
        return {
            (tp.topic, tp.partition): (tp.offset, tp.metadata or "")
            for tp in consumer.committed(tps, timeout=30)
            if tp.offset >= 0
        }
    finally:
        consumer.close()


def commit(west, group: str, topic: str, positions: dict[int, int]) -> None:
    """Commit offsets for `group` as a consumer outside the group would (no membership)."""
    consumer = Consumer({"bootstrap.servers": west.bootstrap_servers, "group.id": group})
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in positions.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


def offsets_only(found: dict[tuple[str, int], tuple[int, str]]) -> dict[tuple[str, int], int]:
    return {tp: offset for tp, (offset, _) in found.items()}


def test_export_writes_the_latest_checkpoints_as_csv_and_json(config, west, remote_topic):
    group, translated = checkpointed_group(west, remote_topic)

    code, out, err = offsets(config, "export", "-s", "east", "-t", "west", "-g", group)
    assert code == 0, err
    assert out == "".join(f"{t},{p},{o}\n" for (t, p), o in sorted(translated.items()))
    assert f"3 offsets of group {group} on west" in err

    code, out, err = offsets(
        config, "export", "-s", "east", "-t", "west", "-g", group, "--format", "json"
    )
    assert code == 0, err
    document = json.loads(out)
    assert (document["group"], document["source"], document["target"]) == (group, "east", "west")
    assert document["generated"]
    assert document["offsets"] == [
        {"topic": remote_topic, "partition": 0, "offset": 7, "upstream_offset": 100,
         "metadata": "meta-0"},
        {"topic": remote_topic, "partition": 1, "offset": 4, "upstream_offset": 50,
         "metadata": "meta-1"},
        {"topic": remote_topic, "partition": 2, "offset": 10, "upstream_offset": 12,
         "metadata": ""},
    ]  # fmt: skip


def test_export_of_a_group_without_checkpoints_says_so_and_exits_1(config, west, remote_topic):
    checkpointed_group(west, remote_topic)  # the topic exists and holds other groups
    code, out, err = offsets(config, "export", "-s", "east", "-t", "west", "-g", "nobody")
    assert code == 1
    assert out == ""
    assert "no checkpoints of group nobody in east.checkpoints.internal on west" in err


def test_apply_from_checkpoints_commits_offsets_and_metadata_to_an_empty_group(
    config, west, remote_topic
):
    group, translated = checkpointed_group(west, remote_topic)

    code, out, err = offsets(config, "apply", "-t", "west", "-g", group, "-s", "east")

    assert code == 0, err
    assert "committed 3 partitions" in out
    found = committed(west, group, remote_topic)
    assert offsets_only(found) == translated
    assert found[(remote_topic, 0)][1] == "meta-0"  # the group's commit metadata travels too


def test_apply_from_exported_files(config, west, remote_topic, tmp_path):
    group, translated = checkpointed_group(west, remote_topic)
    json_file, csv_file = tmp_path / "offsets.json", tmp_path / "offsets.csv"
    export = ("export", "-s", "east", "-t", "west", "-g", group)
    assert offsets(config, *export, "-f", "json", "-o", str(json_file))[0] == 0
    assert offsets(config, *export, "-o", str(csv_file))[0] == 0

    code, out, err = offsets(
        config, "apply", "-t", "west", "-g", group, "--from-file", str(json_file)
    )
    assert code == 0, err
    assert offsets_only(committed(west, group, remote_topic)) == translated

    # A CSV names no group: it can seed another group (as kafka-consumer-groups does).
    other = unique_name("billing-copy")
    code, out, err = offsets(
        config, "apply", "-t", "west", "-g", other, "--from-file", str(csv_file)
    )
    assert code == 0, err
    assert offsets_only(committed(west, other, remote_topic)) == translated

    # A JSON file is for its group only.
    code, _, err = offsets(
        config, "apply", "-t", "west", "-g", other, "--from-file", str(json_file)
    )
    assert code == 2
    assert f"offsets of group '{group}', not of {other}" in err


def test_apply_refuses_a_group_with_an_active_member(config, west, remote_topic):
    group, _ = checkpointed_group(west, remote_topic)
    consumer = Consumer(
        {
            "bootstrap.servers": west.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([remote_topic])

        def assigned() -> list[TopicPartition]:
            consumer.poll(0.2)  # joins the group and keeps the membership alive
            return consumer.assignment()

        wait_until(assigned, timeout=60, what=f"a member of {group} with partitions")

        code, out, err = offsets(config, "apply", "-t", "west", "-g", group, "-s", "east")
        assert code == 1
        assert out == ""
        assert f"consumer group {group} has 1 active member on west" in err

        code, out, _ = offsets(config, "apply", "-t", "west", "-g", group, "-s", "east", "--json")
        assert code == 1
        assert json.loads(out)["ok"] is False

        # A dry run still shows the plan, and says the apply would be refused.
        code, out, err = offsets(
            config, "apply", "-t", "west", "-g", group, "-s", "east", "--dry-run"
        )
        assert code == 1
        assert remote_topic in out
        assert "apply would be refused" in err

        assert committed(west, group, remote_topic) == {}
    finally:
        consumer.close()


def test_apply_never_moves_a_partition_backwards_unless_allowed(config, west, remote_topic):
    group, translated = checkpointed_group(west, remote_topic)
    # The group's consumers already ran on west: ahead on 0, behind on 1, nothing on 2.
    commit(west, group, remote_topic, {0: 9, 1: 2})
    apply = ("apply", "-t", "west", "-g", group, "-s", "east", "--json")

    code, out, err = offsets(config, *apply)

    assert code == 0, err
    document = json.loads(out)
    rows = [
        (p["partition"], p["committed"], p["offset"], p["action"]) for p in document["partitions"]
    ]
    assert rows == [(0, 9, 7, "held_back"), (1, 2, 4, "forward"), (2, None, 10, "set")]
    assert document["summary"] == {"moved": 2, "unchanged": 0, "held_back": 1}
    assert offsets_only(committed(west, group, remote_topic)) == {
        **translated,
        (remote_topic, 0): 9,
    }

    code, out, err = offsets(config, *apply, "--allow-backwards")

    assert code == 0, err
    actions = [p["action"] for p in json.loads(out)["partitions"]]
    assert actions == ["backwards", "unchanged", "unchanged"]
    assert offsets_only(committed(west, group, remote_topic)) == translated


def test_held_back_partitions_are_explained_in_text_output(config, west, remote_topic):
    group, _ = checkpointed_group(west, remote_topic)
    commit(west, group, remote_topic, {0: 9})
    code, out, err = offsets(config, "apply", "-t", "west", "-g", group, "-s", "east")
    assert code == 0, err
    assert "held back" in out
    assert "--allow-backwards" in out


def test_dry_run_shows_the_plan_and_writes_nothing(config, west, remote_topic):
    group, _ = checkpointed_group(west, remote_topic)

    code, out, err = offsets(
        config, "apply", "-t", "west", "-g", group, "-s", "east", "--dry-run", "--json"
    )

    assert code == 0, err
    document = json.loads(out)
    assert document["dry_run"] is True and document["written"] is False
    assert [p["action"] for p in document["partitions"]] == ["set", "set", "set"]
    assert committed(west, group, remote_topic) == {}


def test_partitions_missing_on_the_target_are_all_reported(config, west, remote_topic, tmp_path):
    missing_topic = unique_name("east.gone")
    plan = tmp_path / "plan.csv"
    plan.write_text(
        f"{remote_topic},0,5\n{remote_topic},7,1\n{missing_topic},0,1\n{remote_topic},1,99\n"
    )
    group = unique_name("billing")

    code, _, err = offsets(config, "apply", "-t", "west", "-g", group, "--from-file", str(plan))

    assert code == 1
    assert f"cannot apply the offsets of group {group} to west" in err
    assert f"{remote_topic} has no partition 7 on west (it has 3)" in err
    assert f"topic {missing_topic} does not exist on west" in err
    assert (
        f"{remote_topic} partition 1: offset 99 is past the end of the partition on west (10)"
        in err
    )
    assert committed(west, group, remote_topic) == {}


def _kafka_consumer_groups(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    classpath = jvm.classpath("mirrormaker")
    assert "kafka-tools-" in classpath, "kafka-tools is not in the mirrormaker jars: run `make jvm`"
    result = subprocess.run(
        [jvm.java_executable(), "-cp", classpath, CONSUMER_GROUP_COMMAND,
         "--bootstrap-server", bootstrap, *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_kafka_consumer_groups_applies_the_exported_csv(config, west, remote_topic, tmp_path):
    group, translated = checkpointed_group(west, remote_topic)
    csv_file = tmp_path / "offsets.csv"
    code, _, err = offsets(
        config, "export", "-s", "east", "-t", "west", "-g", group, "-o", str(csv_file)
    )
    assert code == 0, err

    _kafka_consumer_groups(
        west.bootstrap_servers,
        "--group", group, "--reset-offsets", "--from-file", str(csv_file), "--execute",
    )  # fmt: skip

    assert offsets_only(committed(west, group, remote_topic)) == translated


def test_apply_reads_the_csv_kafka_consumer_groups_exports(config, west, remote_topic, tmp_path):
    group = unique_name("billing")
    exported = _kafka_consumer_groups(
        west.bootstrap_servers,
        "--group", group, "--reset-offsets", "--topic", remote_topic, "--to-offset", "3",
        "--export", "--dry-run",
    ).stdout  # fmt: skip
    csv_file = tmp_path / "kafka.csv"
    csv_file.write_text(exported)

    code, _, err = offsets(config, "apply", "-t", "west", "-g", group, "--from-file", str(csv_file))

    assert code == 0, err
    assert offsets_only(committed(west, group, remote_topic)) == {
        (remote_topic, p): 3 for p in range(3)
    }
