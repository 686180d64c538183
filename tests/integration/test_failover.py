"""`mirrorline failover --planned` and `mirrorline failback` on real clusters, end to end.

The drill: producers and a consumer group work on east while east->west
replicates; a planned failover moves them to west; they work on west; a
failback brings them back to east. Every record produced anywhere is read by
the group exactly once over the whole drill (compared value by value: none
lost, none read twice), and the failback copies back only what was written on
west after the failover. Run with the default replication policy (remote
topics `east.<topic>`) and with the identity policy (same names, loops
prevented by provenance headers).

Also: a failover refused while the lag is not 0, then forced, recording what
it left behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mirrorline.admin_client import AdminClient
from mirrorline.control.control_store import ControlStore
from mirrorline.failover.state import STEPS, FailoverState, save_state
from support.control import reset_control
from support.driver_process import child_env, run_mirrorline
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    cluster_clients,
    create_topic,
    end_offsets,
    produce,
    unique_name,
)
from support.wait import wait_until

PARTITIONS = 3
IDENTITY = "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"

Read = tuple[str, int, int, bytes]  # (topic, partition, offset, value)


@pytest.fixture(autouse=True)
def flows_running_afterwards(two_clusters):
    """The control topics are shared by every test of the session: leave both flows running."""
    yield
    east, west = two_clusters
    reset_control(west, "east->west")
    reset_control(east, "west->east")


# -- the drill ------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["default", "identity"])
def test_planned_failover_and_failback_read_every_record_exactly_once(
    two_clusters, spark, tmp_path, policy
):
    east, west = two_clusters
    topic = unique_name("orders")
    group = unique_name("drill")
    identity = policy == "identity"
    on_west = topic if identity else f"east.{topic}"  # the remote topic on west
    back_on_east = topic if identity else f"west.{topic}"  # west's records copied back
    state_file = tmp_path / "state" / "east-to-west.json"
    create_topic(east.bootstrap_servers, topic, PARTITIONS)
    produced: list[bytes] = []
    consumed: list[Read] = []

    def config(*flows: str) -> Path:
        body = (IDENTITY if identity else "") + (
            "emit.checkpoints.interval.seconds = 1\n"
            "refresh.groups.interval.seconds = 1\n"
            "emit.metrics.interval.seconds = 1\n"
            f"topics = {topic}\n"
            f"groups = {group}\n"
        )
        body += "".join(f"{flow}.enabled = true\n" for flow in flows)
        # The way back syncs group offsets itself; the way out leaves it to the command.
        body += "west->east.sync.group.offsets.enabled = true\n"
        body += "west->east.sync.group.offsets.interval.seconds = 1\n"
        return write_config(tmp_path / f"{'-'.join(flows)}.properties", [east, west], body)

    out = config("east->west")
    produced += _produce(east, topic, "east-1", 300)
    with running_driver(out, spark, tmp_path / "work") as driver:
        consumed += _read_as_group(east, group, [topic], limit=170)
        produced += _produce(east, topic, "east-2", 200)
        consumed += _read_as_group(east, group, [topic], limit=100)
        wait_until(
            lambda: driver.statuses()[0].state == "running", timeout=120, what="flow running"
        )
        # The producers stop; the failover waits until the flow replicated everything.
        done = _cli(
            "failover",
            "-c",
            out,
            "--from",
            "east",
            "--to",
            "west",
            "--planned",
            "--state-file",
            state_file,
            "--timeout",
            "180",
            "--json",
        )
        report = json.loads(done.stdout)
        assert done.returncode == 0, done.stderr
        assert report["ok"] and report["finished"]
        assert {c["check"]: c["verdict"] for c in report["preflight"]}["driver"] == "ok"
        assert report["left_behind"] == []
        [moved] = report["groups"]
        assert moved["group"] == group and moved["status"] == "moved", moved
        assert any(on_west in step or topic in step for step in report["next_steps"])
        again = _cli(
            "failover",
            "-c",
            out,
            "--from",
            "east",
            "--to",
            "west",
            "--planned",
            "--state-file",
            state_file,
            "--json",
        )
        assert again.returncode == 0 and json.loads(again.stdout)["already_done"], again.stderr
        assert ControlStore(cluster_clients(west)).read("east->west").state == "stopped"

    # -- on west: the group finishes what east replicated, producers write to `topic`
    if not identity:
        create_topic(west.bootstrap_servers, topic, PARTITIONS)
    west_topics = [on_west] if identity else [on_west, topic]
    before_delta = end_offsets(west.bootstrap_servers, topic)
    consumed += _read_as_group(west, group, west_topics)
    produced += _produce(west, topic, "west-1", 150)
    consumed += _read_as_group(west, group, west_topics, limit=60)
    produced += _produce(west, topic, "west-2", 90)  # read on east after the failback
    delta = sum(end_offsets(west.bootstrap_servers, topic).values()) - sum(before_delta.values())
    assert delta == 240

    # -- failback: started first, it stops west->east and asks for its start offsets;
    # then the driver runs with west->east enabled and applies them.
    back = config("east->west", "west->east")
    failback = _start_cli(
        "failback",
        "-c",
        back,
        "--from",
        "west",
        "--to",
        "east",
        "--state-file",
        state_file,
        "--timeout",
        "240",
        "--json",
    )
    control = ControlStore(cluster_clients(east))
    wait_until(
        lambda: control.read("west->east").positions is not None or failback.poll() is not None,
        timeout=60,
        what="the failback's position request",
    )
    east_before = end_offsets(east.bootstrap_servers, back_on_east) if identity else {}
    with running_driver(back, spark, tmp_path / "work"):
        stdout, stderr = failback.communicate(timeout=300)
        assert failback.returncode == 0, stderr
        report = json.loads(stdout)
        assert report["ok"] and report["finished"], report
        assert report["delta_records"] == 240
        assert report["failover"]["groups"][0]["status"] in ("moved", "synced", "unchanged")
        wait_until(
            lambda: ControlStore(cluster_clients(west)).read("east->west").state == "running",
            timeout=30,
            what="east->west resumed",
        )
        # Only the delta came back: what west->east wrote to east.
        copied = sum(end_offsets(east.bootstrap_servers, back_on_east).values()) - sum(
            east_before.values()
        )
        assert copied == 240, f"west->east wrote {copied} records to east, expected 240"

    # -- back on east: the group reads the rest and what producers write now
    east_topics = [topic] if identity else [topic, back_on_east]
    produced += _produce(east, topic, "east-3", 50)
    consumed += _read_as_group(east, group, east_topics)
    values = [value for _, _, _, value in consumed]
    twice = sorted({v for v in values if values.count(v) > 1})
    assert not twice, f"read twice: {len(twice)} records, e.g. {twice[:5]}"
    lost = sorted(set(produced) - set(values))
    assert not lost, f"never read: {len(lost)} records, e.g. {lost[:5]}"
    assert len(values) == len(produced) == 790


# -- refused, then forced -----------------------------------------------------------------


def test_failover_is_refused_while_the_lag_is_not_zero_and_forced_records_what_it_left(
    two_clusters, spark, tmp_path
):
    """A topic created after the flow's last topic refresh is selected but not replicated:
    its records are lag that never drains. The failover refuses at its deadline; forced, it
    fails over and records those records as left behind."""
    east, west = two_clusters
    topic, late = unique_name("ledger"), unique_name("ledger")
    create_topic(east.bootstrap_servers, topic, 2)
    produce(east.bootstrap_servers, topic, [Record(b"k", b"v", partition=p) for p in (0, 1)])
    body = (
        f"east->west.enabled = true\nemit.metrics.interval.seconds = 1\n"
        f"topics = {topic}, {late}\ngroups = {unique_name('none')}\n"
    )
    config = write_config(tmp_path / "mm2.properties", [east, west], body)
    text = config.read_text().replace(
        "refresh.topics.interval.seconds = 1", "refresh.topics.interval.seconds = 3600"
    )
    config.write_text(text)
    state_file = tmp_path / "failover.json"
    with running_driver(config, spark, tmp_path / "work") as driver:
        wait_until(
            lambda: driver.statuses()[0].records >= 2,
            timeout=120,
            what="the flow replicating its topic",
        )
        create_topic(east.bootstrap_servers, late, 1)
        produce(east.bootstrap_servers, late, [Record(b"k", b"late") for _ in range(7)])

        args = ["-c", config, "--from", "east", "--to", "west", "--planned"]
        args += ["--state-file", state_file]
        dry = _cli("failover", *args, "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert plan["dry_run"] and plan["lag"]["total"] == 7 and len(plan["plan"]) == 4
        assert not state_file.exists()

        refused = _cli("failover", *args, "--timeout", "5")
        assert refused.returncode == 1, refused.stderr
        assert "still lags by 7 records" in refused.stderr
        assert "--force" in refused.stderr and f"{late}[0]: 7 records" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert ControlStore(cluster_clients(west)).read("east->west").state == "running"

        forced = _cli(
            "failover",
            "-c",
            config,
            "--from",
            "east",
            "--to",
            "west",
            "--planned",
            "--state-file",
            state_file,
            "--timeout",
            "60",
            "--force",
            "--json",
        )
        assert forced.returncode == 0, forced.stderr
        report = json.loads(forced.stdout)
        assert report["left_behind"] == [{"topic": late, "partition": 0, "records": 7}]
        checks = {c["check"]: c for c in report["preflight"]}
        assert checks["topic refresh"]["verdict"] == "warning"
        assert late in checks["topic refresh"]["detail"]
        again = _cli("failover", *args)  # for people this time
        assert again.returncode == 0, again.stderr
        assert "already done" in again.stdout and "left behind: 7 records" in again.stdout
        saved = json.loads(state_file.read_text())
        assert saved["forced"] is True and saved["left_behind"] == [[late, 0, 7]]


# -- resumable ----------------------------------------------------------------------------


def test_a_failover_stopped_by_an_active_group_continues_where_it_stopped(
    two_clusters, spark, tmp_path
):
    """The group still has a consumer on west: the failover stops the flow and records the
    offsets, then refuses to move the group (exit 1). Once that consumer is gone, the same
    command continues with the groups step alone."""
    east, west = two_clusters
    topic, group = unique_name("stock"), unique_name("picker")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, PARTITIONS)
    _produce(east, topic, "s", 30)
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\ntopics = {topic}\ngroups = {group}\n"
        "emit.checkpoints.interval.seconds = 1\nrefresh.groups.interval.seconds = 1\n"
        "emit.metrics.interval.seconds = 1\n",
    )
    state_file = tmp_path / "failover.json"
    args = ["failover", "-c", config, "--from", "east", "--to", "west", "--planned"]
    args += ["--state-file", state_file, "--timeout", "60", "--json"]
    with running_driver(config, spark, tmp_path / "work") as driver:
        _read_as_group(east, group, [topic], limit=12)
        wait_until(
            lambda: driver.statuses()[0].state == "running" and _exists(west, remote),
            timeout=120,
            what="flow running",
        )
        member = Consumer(
            {
                "bootstrap.servers": west.bootstrap_servers,
                "group.id": group,
                "enable.auto.commit": False,  # a member that commits nothing
            }
        )
        try:
            member.subscribe([remote])
            wait_until(
                lambda: member.poll(0.2) is None and member.assignment(),
                timeout=60,
                what="a member of the group on west",
            )
            first = _cli(*args)
            assert first.returncode == 1, first.stderr
            report = json.loads(first.stdout)
            assert "could not all be moved" in report["error"]
            assert "active members on west" in " ".join(report["problems"])
            [outcome] = report["groups"]
            assert outcome["status"] == "active"
        finally:
            member.close()
        saved = json.loads(state_file.read_text())
        assert set(saved["steps"]) == {"drained", "stopped", "recorded"}
        second = _cli(*args)
        assert second.returncode == 0, second.stderr
        report = json.loads(second.stdout)
        assert report["resumed_after"] == ["drained", "stopped", "recorded"]
        assert "preflight" not in report  # the flow is stopped: nothing to check before
        [outcome] = report["groups"]
        assert outcome["status"] == "moved", outcome
    assert sum(end for end in _committed_on(west, group, remote).values()) == 12, (
        "the group resumes on west after the 12 records it read on east"
    )


# -- failback refused when the delta is gone --------------------------------------------------


def test_failback_is_refused_when_the_recorded_offsets_left_retention(two_clusters, tmp_path):
    """West's log start moved past the offset recorded at failover on one partition: the
    records between are on neither cluster, so failback refuses and names --full-resync."""
    east, west = two_clusters
    topic = unique_name("orders")
    create_topic(west.bootstrap_servers, topic, 2)
    produce(
        west.bootstrap_servers,
        topic,
        [Record(b"k", f"{p}-{i}".encode(), partition=p) for p in (0, 1) for i in range(10)],
    )
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\nwest->east.enabled = true\ntopics = {topic}\n",
    )
    # What a finished failover east->west recorded: west's `topic` ended at 4 on both
    # partitions (producers wrote 6 more per partition since).
    state_file = tmp_path / "east-to-west.json"
    state = FailoverState.new("planned", "east", "west", str(config))
    state.topics = {topic: f"east.{topic}"}
    state.delta_starts = {(topic, 0): 4, (topic, 1): 4}
    for step in STEPS:
        state.mark(step)
    state.finish()
    save_state(state_file, state)
    client = AdminClient({"bootstrap.servers": west.bootstrap_servers})
    for future in client.delete_records([TopicPartition(topic, 0, 7)]).values():
        future.result(30)

    args = ["-c", config, "--from", "west", "--to", "east", "--state-file", state_file]
    refused = _cli("failback", *args)
    assert refused.returncode == 1, refused.stderr
    assert "--full-resync" in refused.stderr
    assert f"{topic}[0]: the log starts at 7, past the offset 4 recorded at failover" in (
        refused.stderr.replace("\n", " ")
    )
    assert f"{topic}[1]" not in refused.stderr
    assert "Traceback" not in refused.stderr
    control = ControlStore(cluster_clients(east)).read("west->east")
    assert control.state == "running" and control.positions is None  # nothing changed

    planned = _cli("failback", *args, "--full-resync", "--dry-run", "--json")
    assert planned.returncode == 0, planned.stderr
    starts = {(d["topic"], d["partition"]): d["start"] for d in json.loads(planned.stdout)["delta"]}
    assert starts == {(topic, 0): 7, (topic, 1): 0}


# -- helpers --------------------------------------------------------------------------------


def _produce(cluster, topic: str, batch: str, count: int) -> list[bytes]:
    values = [f"{batch}-{i}".encode() for i in range(count)]
    produce(
        cluster.bootstrap_servers,
        topic,
        [Record(f"k{i}".encode(), v, partition=i % PARTITIONS) for i, v in enumerate(values)],
    )
    return values


def _read_as_group(
    cluster, group: str, topics: Sequence[str], *, limit: int | None = None
) -> list[Read]:
    """Read as `group` from its committed offsets (the log start where it has none), up to
    `limit` records or to the end of every partition; commit what was read."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        wanted = [TopicPartition(t, p) for t in topics for p in range(PARTITIONS)]
        positions: dict[tuple[str, int], int] = {}
        ends: dict[tuple[str, int], int] = {}
        committed = wait_until(
            lambda: _committed(consumer, wanted), timeout=30, what=f"offsets of {group}"
        )
        for tp in committed:
            low, high = consumer.get_watermark_offsets(tp, timeout=10)
            positions[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else low
            ends[(tp.topic, tp.partition)] = high
        consumer.assign([TopicPartition(t, p, o) for (t, p), o in positions.items()])
        got: list[Read] = []
        read: dict[tuple[str, int], int] = {}

        def finished() -> bool:
            while limit is None or len(got) < limit:
                batch = consumer.consume(1, timeout=0.5)
                if not batch:
                    break
                [msg] = batch
                assert not msg.error(), msg.error()
                got.append((msg.topic(), msg.partition(), msg.offset(), msg.value()))
                read[(msg.topic(), msg.partition())] = msg.offset() + 1
                positions[(msg.topic(), msg.partition())] = msg.offset() + 1
            if limit is not None and len(got) >= limit:
                return True
            return all(positions[tp] >= end for tp, end in ends.items())

        wait_until(finished, timeout=90, what=f"group {group} reading {', '.join(topics)}")
        if read:
            consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in read.items()],
                asynchronous=False,
            )
        return got
    finally:
        consumer.close()


def _committed(consumer: Consumer, partitions: list[TopicPartition]):
    """The committed offsets, or None while the group coordinator is loading or moving."""
    try:
        return consumer.committed(partitions, timeout=10)
    except KafkaException as exc:
        if exc.args[0].retriable() or exc.args[0].code() == KafkaError.NOT_COORDINATOR:
            return None
        raise


def _exists(cluster, topic: str) -> bool:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    return topic in admin.list_topics(timeout=10).topics


def _committed_on(cluster, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 10)
        return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
    finally:
        consumer.close()


def _cli(*args) -> subprocess.CompletedProcess[str]:
    return run_mirrorline(*args, timeout=400)


def _start_cli(*args) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mirrorline", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
