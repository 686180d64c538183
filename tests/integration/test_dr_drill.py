"""Disaster-recovery drill: a consumer group fails over to the target and back, exactly.

50,000 records go to three partitions of a compacted topic on east, with one
aborted transaction in the middle; compaction has removed older versions of
some keys before the flow reads them. A consumer group reads an uneven amount
of each partition on east and commits. On west, the same group then reads
exactly the records it had not read on east, compared record by record, with
its offsets from `offsets export` + `offsets apply`, and again (after reading
more on east) from the automatic group offset sync. Finally the group reads
some more on west, and the west->east flow's checkpoints bring it back to east
exactly where it stopped. Along the way, Apache Kafka's own
`RemoteClusterUtils.translateOffsets` and MM2's formatters read Mirrorline's
checkpoints and offset syncs, and agree with Mirrorline's client.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping

from confluent_kafka import Consumer, Producer

from mirrorline.client import translate_offsets
from mirrorline.kafka import KafkaOperationError, read_to_end
from support.driving import running_driver, write_config
from support.kafka_io import (
    checkpoints_of,
    commit_offsets,
    committed_offsets,
    create_topic,
    unique_name,
)
from support.mm2_java import java_format_topic, java_translate_offsets
from support.wait import wait_until

PARTITIONS = 3
HOT_KEYS = 50  # keys written again and again, for compaction to remove older versions
RECORDS = 50_000
ABORTED_PER_PARTITION = 200

Read = tuple[int, bytes]  # (offset, value) of one record as a consumer saw it


def test_a_group_fails_over_and_back_exactly(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic = unique_name("orders")
    remote = f"east.{topic}"
    group = unique_name("billing")
    create_topic(
        east.bootstrap_servers,
        topic,
        PARTITIONS,
        config={
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0",
            "segment.ms": "100",
        },
    )
    _produce_drill_data(east.bootstrap_servers, topic)
    on_east = _wait_for_compaction(east.bootstrap_servers, topic)

    # -- the group reads unevenly on east; partition 1 stops right at the aborted records,
    # partition 2 reads everything.
    before_abort = sum(1 for offset, value in on_east[1] if value.startswith(b"early"))
    read_on_east = {0: 4_321, 1: before_abort, 2: len(on_east[2])}
    _commit_after(east.bootstrap_servers, group, topic, on_east, read_on_east)

    def config(extra: str = ""):
        return write_config(
            tmp_path / "drill.properties",
            [east, west],
            "east->west.enabled = true\n"
            f"east->west.topics = {topic}\n"
            "east->west.consumer.isolation.level = read_committed\n"
            "emit.checkpoints.interval.seconds = 1\n"
            "refresh.groups.interval.seconds = 1\n" + extra,
        )

    # -- failover with export + apply
    with running_driver(config(), spark, tmp_path / "work"):
        _wait_until_replicated(west.bootstrap_servers, remote, on_east)
        _wait_for_checkpoints(west, group, remote, on_east, read_on_east)
        csv_file = tmp_path / "offsets.csv"
        common = ["--config", str(tmp_path / "drill.properties"), "--target", "west"]
        csv_file.write_text(
            _cli("offsets", "export", *common, "--source", "east", "--group", group)
        )
        _cli("offsets", "apply", *common, "--group", group, "--from-file", str(csv_file))
    _assert_reads_exactly(west.bootstrap_servers, group, remote, on_east, read_on_east)

    # -- the group reads more on east; after a restart the automatic sync moves it on west
    read_on_east = {0: 9_000, 1: before_abort + 1_500, 2: len(on_east[2])}
    _commit_after(east.bootstrap_servers, group, topic, on_east, read_on_east)
    synced = "sync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 1\n"
    with running_driver(config(synced), spark, tmp_path / "work") as driver:
        started = time.monotonic()
        wait_until(
            lambda: driver.statuses()[0].state == "running", timeout=120, what="flow running"
        )
        running_after = time.monotonic() - started
        _wait_for_checkpoints(west, group, remote, on_east, read_on_east)
        resumed_after = time.monotonic() - started
        print(
            f"after the restart: flow running in {running_after:.1f}s, checkpoints "
            f"{resumed_after - running_after:.1f}s later; translation store loaded "
            f"{driver.statuses()[0].translation_runs} runs in "
            f"{driver.statuses()[0].translation_load_ms} ms"
        )
        # Within one interval (1 s), with room for this test's own polling.
        assert resumed_after - running_after <= 1 + 2
        expected = _checkpointed_offsets(west, group, remote)
        _assert_mm2_reads_the_same(east, west, group, {(remote, p): o for p, o in expected.items()})
        wait_until(
            lambda: (
                committed_offsets(west.bootstrap_servers, group, remote, PARTITIONS) == expected
            ),
            timeout=60,
            what="the group's offsets synced to west",
        )
        stats = driver.statuses()[0].checkpoints
        print(
            f"checkpoint latency p50 {stats.latency_p50_ms:.0f} ms, "
            f"p99 {stats.latency_p99_ms:.0f} ms over {stats.checkpoints_emitted} checkpoints"
        )
    on_west = _assert_reads_exactly(west.bootstrap_servers, group, remote, on_east, read_on_east)

    # -- the group reads some more on west, then fails back to east
    read_on_west = {0: 2_000, 1: 1, 2: 0}
    commit_offsets(west.bootstrap_servers, group, remote, _offsets_after(on_west, read_on_west))
    # west->east replicates nothing (no topic of that name on west): only checkpoints go back.
    back = f"west->east.enabled = true\nwest->east.topics = {topic}\n"
    failed_back = {p: read_on_east[p] + read_on_west[p] for p in range(PARTITIONS)}
    with running_driver(config(synced + back), spark, tmp_path / "work"):
        wait_until(
            lambda: (
                committed_offsets(east.bootstrap_servers, group, topic, PARTITIONS)
                == _offsets_after(on_east, failed_back)
            ),
            timeout=90,
            what="the group's offsets on east moved to where it stopped on west",
        )
    _assert_reads_exactly(east.bootstrap_servers, group, topic, on_east, failed_back)


# -- data ----------------------------------------------------------------------------------


def _produce_drill_data(bootstrap: str, topic: str) -> None:
    """Early records (some on hot keys), one aborted transaction, then unique-key records.

    The last records all have keys of their own, so that compaction on either
    cluster can remove nothing more once the early ones are compacted. The three
    parts carry timestamps a second apart: a segment rolls (`segment.ms`) by its
    records' timestamps, so the early records end up in segments the cleaner may
    compact however fast they were written.
    """
    early = (RECORDS - ABORTED_PER_PARTITION * PARTITIONS) * 4 // 5
    late = RECORDS - ABORTED_PER_PARTITION * PARTITIONS - early
    start_ms = int(time.time() * 1000) - 10_000
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(early):
        key = f"hot-{i % HOT_KEYS}" if i % 7 == 0 else f"early-{i}"
        producer.produce(
            topic,
            key=key,
            value=f"early-{i}".encode(),
            partition=i % PARTITIONS,
            timestamp=start_ms,
        )
    producer.flush(60)
    aborted = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique_name("tx")})
    aborted.init_transactions(30)
    aborted.begin_transaction()
    for i in range(ABORTED_PER_PARTITION * PARTITIONS):
        aborted.produce(
            topic,
            key=f"aborted-{i}",
            value=b"aborted",
            partition=i % PARTITIONS,
            timestamp=start_ms + 1_000,
        )
    aborted.abort_transaction(30)
    for i in range(late):
        producer.produce(
            topic,
            key=f"late-{i}",
            value=f"late-{i}".encode(),
            partition=i % PARTITIONS,
            timestamp=start_ms + 2_000,
        )
    assert producer.flush(60) == 0


def _wait_for_compaction(bootstrap: str, topic: str) -> dict[int, list[Read]]:
    """The committed records per partition, once compaction removed old versions and settled."""
    produced = RECORDS - ABORTED_PER_PARTITION * PARTITIONS
    last: list[dict[int, list[Read]]] = []

    def settled() -> dict[int, list[Read]] | None:
        now = _read_all(bootstrap, topic)
        count = sum(len(v) for v in now.values())
        stable = bool(last) and now == last[-1]
        last.append(now)
        return now if count < produced - HOT_KEYS and stable else None

    return wait_until(settled, timeout=120, what="compaction of the hot keys", interval=1.0)


def _read_all(bootstrap: str, topic: str) -> dict[int, list[Read]]:
    return {
        p: [
            (m.offset(), m.value())
            for m in read_to_end(
                {"bootstrap.servers": bootstrap}, topic, partition=p, read_committed=True
            )
        ]
        for p in range(PARTITIONS)
    }


# -- the group ----------------------------------------------------------------------------


def _offsets_after(records: Mapping[int, list[Read]], counts: Mapping[int, int]) -> dict[int, int]:
    """Where a group that read the first `counts[p]` records of each partition commits."""
    return {p: records[p][n - 1][0] + 1 for p, n in counts.items() if n}


def _commit_after(bootstrap, group, topic, records, counts) -> None:
    commit_offsets(bootstrap, group, topic, _offsets_after(records, counts))


def _assert_reads_exactly(bootstrap, group, topic, on_east, read_on_east) -> dict[int, list[Read]]:
    """The group, consuming `topic` from its committed offsets, gets exactly the unread records."""
    got = _read_group_to_end(bootstrap, group, topic)
    for p in range(PARTITIONS):
        expected = [value for _, value in on_east[p][read_on_east[p] :]]
        values = [value for _, value in got[p]]
        assert values == expected, (
            f"partition {p}: read {len(values)} records, expected {len(expected)}; "
            f"first read {values[:1]}, first expected {expected[:1]}"
        )
    return got


def _read_group_to_end(bootstrap: str, group: str, topic: str) -> dict[int, list[Read]]:
    """Subscribe as `group` and read to the end; a partition without committed offset fails."""
    everything = _read_all(bootstrap, topic)
    start = committed_offsets(bootstrap, group, topic, PARTITIONS)
    last = {p: records[-1][0] for p, records in everything.items() if records}
    pending = {p for p in last if start.get(p, 0) <= last[p]}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "isolation.level": "read_committed",
        }
    )
    got: dict[int, list[Read]] = {p: [] for p in range(PARTITIONS)}
    try:
        consumer.subscribe([topic])

        def at_end() -> bool:
            for msg in consumer.consume(500, timeout=0.5):
                assert not msg.error(), f"group {group} on {topic}: {msg.error()}"
                got[msg.partition()].append((msg.offset(), msg.value()))
                if msg.offset() >= last[msg.partition()]:
                    pending.discard(msg.partition())
            return not pending

        wait_until(at_end, timeout=90, what=f"group {group} reading {topic} to its end")
    finally:
        consumer.close()
    return got


# -- compatibility ------------------------------------------------------------------------


def _assert_mm2_reads_the_same(east, west, group: str, checkpointed) -> None:
    """MM2's own RemoteClusterUtils gives what Mirrorline's client gives; MM2's
    formatters read Mirrorline's checkpoints and offset syncs without error."""
    ours = translate_offsets({"bootstrap.servers": west.bootstrap_servers}, "east", group)
    assert {tp: t.offset for tp, t in ours.items()} == checkpointed
    assert java_translate_offsets(west.bootstrap_servers, "east", group) == checkpointed
    assert java_format_topic(west.bootstrap_servers, "east.checkpoints.internal", "checkpoint")
    assert java_format_topic(
        east.bootstrap_servers, "mm2-offset-syncs.west.internal", "offset-sync"
    )


# -- the flow -----------------------------------------------------------------------------


def _wait_until_replicated(bootstrap: str, remote: str, on_east) -> None:
    expected = {p: len(records) for p, records in on_east.items()}

    def replicated() -> bool:
        try:
            return {p: len(r) for p, r in _read_all(bootstrap, remote).items()} == expected
        except KafkaOperationError:  # the remote topic is not created yet
            return False

    wait_until(replicated, timeout=180, what="every committed record replicated", interval=1.0)


def _checkpointed_offsets(cluster, group: str, remote: str) -> dict[int, int]:
    found = checkpoints_of(cluster.bootstrap_servers, "east", group, remote)
    return {p: c.downstream_offset for p, c in found.items()}


def _wait_for_checkpoints(cluster, group, remote, on_east, read_on_east) -> None:
    """Until the checkpoints carry the group's current offsets on east, for every partition."""
    upstream = _offsets_after(on_east, read_on_east)

    def current() -> bool:
        found = checkpoints_of(cluster.bootstrap_servers, "east", group, remote)
        return {p: c.upstream_offset for p, c in found.items()} == upstream

    wait_until(current, timeout=60, what=f"checkpoints of {group} at {upstream}", interval=0.2)


def _cli(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "mirrorline", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"mirrorline {' '.join(args)}: {result.stderr}"
    return result.stdout
