"""Source records deleted before the flow read them are reported exactly; jumps are not losses.

Retention removing records a stopped flow had not replicated yet is a loss: the
flow goes on from the earliest offset still there and reports the exact range
in its log, its status and its counters. Offsets missing because compaction
removed their records, or because transaction markers took them, are not.
"""

from __future__ import annotations

import logging

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from mirrorline.admin_client import AdminClient
from mirrorline.engine.loops import GAP_CHECK_S
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    consume,
    create_topic,
    end_offsets,
    produce,
    recent_timestamp,
    unique_name,
)
from support.wait import assert_stays, wait_until

HOUR_MS = 3_600_000


def _log_start(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("starts")})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[0]
    finally:
        consumer.close()


def _set_topic_config(bootstrap: str, topic: str, name: str, value: str) -> None:
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _read_from(bootstrap: str, topic: str, partition: int, offset: int, count: int) -> list:
    """`count` values of one partition from `offset` on."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_name("reader"),
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        values = []
        for _ in range(60):
            for msg in consumer.consume(count - len(values), timeout=0.5):
                assert msg.error() is None, msg.error()
                values.append(msg.value())
            if len(values) >= count:
                break
        return values
    finally:
        consumer.close()


def _values(prefix: str, partition: int, offsets: range, ms_ago: int) -> list[Record]:
    return [
        Record(None, f"{prefix}-{partition}-{i}".encode(), (), recent_timestamp(ms_ago), partition)
        for i in offsets
    ]


def test_records_deleted_by_retention_are_reported_with_their_exact_range(
    two_clusters, spark, tmp_path, caplog
):
    east, west = two_clusters
    topic = unique_name("expiring")
    remote = f"east.{topic}"
    # Partition 0's records are half an hour old, partition 1's are fresh: lowering
    # the retention to ten minutes later deletes all of partition 0 and nothing else.
    create_topic(east.bootstrap_servers, topic, partitions=2, config={"retention.ms": str(HOUR_MS)})
    old, fresh = 30 * 60_000, 1_000
    produce(east.bootstrap_servers, topic, _values("v", 0, range(0, 10), old))
    produce(east.bootstrap_servers, topic, _values("v", 1, range(0, 10), fresh))
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n",
    )
    with running_driver(config, spark, tmp_path / "work") as driver:
        wait_until(
            lambda: driver.statuses()[0].records == 20,
            timeout=120,
            what="the first 20 records replicated",
        )

    # While the flow is stopped: ten more records per partition, then partition 0's expire.
    produce(east.bootstrap_servers, topic, _values("v", 0, range(10, 20), old))
    produce(east.bootstrap_servers, topic, _values("v", 1, range(10, 20), fresh))
    _set_topic_config(east.bootstrap_servers, topic, "retention.ms", str(10 * 60_000))
    wait_until(
        lambda: _log_start(east.bootstrap_servers, topic, 0) == 20,
        timeout=60,
        what="retention to delete partition 0 of the source up to its end",
    )
    assert _log_start(east.bootstrap_servers, topic, 1) == 0
    produce(east.bootstrap_servers, topic, _values("v", 0, range(20, 30), fresh))
    produce(east.bootstrap_servers, topic, _values("v", 1, range(20, 30), fresh))

    with caplog.at_level(logging.WARNING, logger="mirrorline.engine.gaps"):
        with running_driver(config, spark, tmp_path / "work") as driver:
            wait_until(
                lambda: driver.statuses()[0].records == 10 + 20,
                timeout=120,
                what="the records after the gap replicated",
            )
            status = driver.statuses()[0]
            assert [(g.topic, g.partition, g.start, g.end) for g in status.gaps] == [
                (topic, 0, 10, 20)
            ]
            assert _losses(status) == {"records_lost": 10, "gaps": 1}
            # Nothing else is reported, including by the checks of idle partitions.
            assert_stays(
                lambda: _losses(driver.statuses()[0]) == {"records_lost": 10, "gaps": 1},
                seconds=GAP_CHECK_S + 2,
                what="a single gap of 10 records",
            )
            assert driver.statuses()[0].state == "running"

    warnings = [r.getMessage() for r in caplog.records if r.name == "mirrorline.engine.gaps"]
    assert len(warnings) == 1, warnings
    assert "flow east->west" in warnings[0]
    assert f"{topic}[0] offsets 10 to 19 (10 records)" in warnings[0]

    # After the gap, partition 0 goes on with source offset 20 at target offset 10.
    expected_after = [r.value for r in _values("v", 0, range(20, 30), fresh)]
    assert _read_from(west.bootstrap_servers, remote, 0, 10, 10) == expected_after
    assert end_offsets(west.bootstrap_servers, remote) == {0: 20, 1: 30}
    assert [
        r.value for r in consume(west.bootstrap_servers, remote, expected=30, partitions=[1])
    ] == [f"v-1-{i}".encode() for i in range(30)]


def test_compaction_and_transaction_markers_are_not_losses(two_clusters, spark, tmp_path, caplog):
    east, west = two_clusters
    compacted = unique_name("compacted")
    transactional = unique_name("txn")
    create_topic(
        east.bootstrap_servers,
        compacted,
        config={
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0",
            "segment.ms": "100",
        },
    )
    create_topic(east.bootstrap_servers, transactional)
    produce(east.bootstrap_servers, compacted, [Record(f"k{i}".encode(), b"1") for i in range(10)])
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {compacted}|{transactional}\n",
    )
    with running_driver(config, spark, tmp_path / "work") as driver:
        wait_until(
            lambda: driver.statuses()[0].records == 10, timeout=120, what="the first 10 records"
        )

    # While the flow is stopped, keys a0..a9 are written again and again until compaction
    # has removed the first copies, right after the flow's next offset (10).
    rounds = iter(range(1_000_000))

    def compacted_after_progress() -> bool:
        value = str(next(rounds)).encode()
        produce(
            east.bootstrap_servers, compacted, [Record(f"a{i}".encode(), value) for i in range(10)]
        )
        return _first_offset_from(east.bootstrap_servers, compacted, 10) > 10

    wait_until(compacted_after_progress, timeout=90, what="compaction right after offset 10")

    with caplog.at_level(logging.WARNING, logger="mirrorline.engine.gaps"):
        with running_driver(config, spark, tmp_path / "work") as driver:
            last = _last_record(east.bootstrap_servers, compacted)
            wait_until(
                lambda: _last_record(west.bootstrap_servers, f"east.{compacted}") == last,
                timeout=120,
                what="the compacted topic replicated up to its last record",
            )
            # A committed transaction leaves a marker after its records: the next
            # batch starts one offset past the flow's next offset.
            producer = Producer(
                {"bootstrap.servers": east.bootstrap_servers, "transactional.id": unique_name("t")}
            )
            producer.init_transactions(30)
            producer.begin_transaction()
            for i in range(5):
                producer.produce(transactional, value=f"txn-{i}".encode())
            producer.commit_transaction(30)
            wait_until(
                lambda: _target_count(west, f"east.{transactional}") == 5,
                timeout=60,
                what="the transaction replicated",
            )
            produce(east.bootstrap_servers, transactional, [Record(None, b"after")])
            wait_until(
                lambda: _target_count(west, f"east.{transactional}") == 6,
                timeout=60,
                what="the record after the transaction marker replicated",
            )
            assert_stays(
                lambda: _losses(driver.statuses()[0]) == {"records_lost": 0, "gaps": 0},
                seconds=GAP_CHECK_S + 2,
                what="no loss reported",
            )
            assert driver.statuses()[0].gaps == ()
    assert [r for r in caplog.records if r.name == "mirrorline.engine.gaps"] == []


def _first_offset_from(bootstrap: str, topic: str, offset: int) -> int:
    return _first_record_from(bootstrap, topic, offset)[0]


def _last_record(bootstrap: str, topic: str) -> tuple[bytes, bytes] | None:
    """(key, value) of partition 0's last record; None while there is none."""
    try:
        end = end_offsets(bootstrap, topic, timeout=2)[0]
    except Exception:  # noqa: BLE001 - the remote topic may not exist yet
        return None
    if end == 0:
        return None
    _, key, value = _first_record_from(bootstrap, topic, end - 1)
    return key, value


def _first_record_from(bootstrap: str, topic: str, offset: int) -> tuple[int, bytes, bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": unique_name("r"), "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        for _ in range(40):
            for msg in consumer.consume(1, timeout=0.5):
                assert msg.error() is None, msg.error()
                return msg.offset(), msg.key(), msg.value()
        raise AssertionError(f"no record of {topic} at or after offset {offset}")
    finally:
        consumer.close()


def _target_count(cluster, topic: str) -> int:
    try:
        return sum(end_offsets(cluster.bootstrap_servers, topic, timeout=2).values())
    except Exception:  # noqa: BLE001 - the topic may not exist yet
        return 0


def _losses(status) -> dict[str, int]:
    """The flow's loss counters (it has others: records replicated, refused...)."""
    return {name: status.counters[name] for name in ("records_lost", "gaps")}
