"""Exactly-once mode: replays write nothing twice, zombies are fenced, restarts repeat nothing."""

from __future__ import annotations

import json

from confluent_kafka import Producer

from mirrorline.admin_client import AdminClient
from mirrorline.engine.batch_writer import WriteSpec, write_batch
from mirrorline.engine.progress import PROGRESS_TOPIC, ProgressStore
from mirrorline.engine.transactional import ExactlyOnceSpec, position_group, transactional_id
from mirrorline.kafka import ClusterClients
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    consume,
    consume_to_end,
    create_topic,
    end_offsets,
    produce,
    unique_name,
)
from support.wait import wait_until

FLOW = "east->west"


def _spec(east, west, topic: str, remote: str) -> WriteSpec:
    return WriteSpec(
        flow=FLOW,
        producer_settings={"bootstrap.servers": west.bootstrap_servers},
        source_settings={"bootstrap.servers": east.bootstrap_servers},
        remote_topics={topic: remote},
        offset_lag_max=100,
        exactly_once=ExactlyOnceSpec(
            progress_topic=PROGRESS_TOPIC,
            position_group=position_group(FLOW),
            consumer_settings={"bootstrap.servers": west.bootstrap_servers},
        ),
    )


def _write_range(spark, east, topic: str, spec: WriteSpec, ending: dict[int, int]):
    """Run the writer over source offsets [0, ending[p]) of each partition: one Spark batch."""
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", east.bootstrap_servers)
        .option("assign", json.dumps({topic: sorted(ending)}))
        .option("startingOffsets", "earliest")
        .option("endingOffsets", json.dumps({topic: {str(p): o for p, o in ending.items()}}))
        .option("includeHeaders", "true")
        .load()
    )
    return {r.partition: r for r in write_batch(frame, spec, "test-exactly-once")}


def _values(bootstrap: str, topic: str, expected: int) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    for r in sorted(
        consume(bootstrap, topic, expected=expected, timeout=30),
        key=lambda r: (r.partition, r.offset),
    ):
        out.setdefault(r.partition, []).append(r.value)
    return out


def _progress(west) -> ProgressStore:
    settings = {"bootstrap.servers": west.bootstrap_servers}
    store = ProgressStore(FLOW, ClusterClients.of("west", settings), replication_factor=1)
    store.ensure_topic()
    return store


def test_a_replayed_batch_writes_nothing_twice(two_clusters, spark):
    east, west = two_clusters
    topic = unique_name("eos")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=3)
    create_topic(west.bootstrap_servers, remote, partitions=3)
    progress = _progress(west)
    spec = _spec(east, west, topic, remote)
    sent = produce(
        east.bootstrap_servers,
        topic,
        [Record(None, f"{p}-{i}".encode(), partition=p) for i in range(1000) for p in range(3)],
    )

    first = _write_range(spark, east, topic, spec, {0: 1000, 1: 1000, 2: 1000})
    assert {p: (r.records, r.skipped) for p, r in first.items()} == {p: (1000, 0) for p in range(3)}

    # The same batch again (a retried task, a replay after a crash): all skipped, and
    # the mapping the first attempt committed is reported again, for a driver that
    # never heard of that attempt.
    again = _write_range(spark, east, topic, spec, {0: 1000, 1: 1000, 2: 1000})
    assert {p: (r.records, r.skipped) for p, r in again.items()} == {p: (0, 1000) for p in range(3)}
    assert {p: r.syncs for p, r in again.items()} == {p: r.syncs for p, r in first.items()}

    # A batch overlapping what was committed writes only the new part.
    produce(
        east.bootstrap_servers,
        topic,
        [
            Record(None, f"{p}-{i}".encode(), partition=p)
            for i in range(1000, 1500)
            for p in range(3)
        ],
    )
    overlap = _write_range(spark, east, topic, spec, {0: 1500, 1: 1500, 2: 1500})
    assert {p: (r.records, r.skipped) for p, r in overlap.items()} == {
        p: (500, 1000) for p in range(3)
    }
    # The skipped part's mapping first, then the new part's (after the commit marker).
    for p, r in overlap.items():
        assert r.syncs[: len(first[p].syncs)] == first[p].syncs
        assert r.syncs[len(first[p].syncs)] == (1000, 1001)

    expected = {p: [f"{p}-{i}".encode() for i in range(1500)] for p in range(3)}
    assert _values(west.bootstrap_servers, remote, 4500) == expected
    assert len(sent) == 3000
    # Progress was committed by the tasks, with the offset mapping of their last batch,
    # the part it skipped included.
    saved = progress.load_state()
    assert {tp: o for tp, o in saved.next_offsets.items() if tp[0] == topic} == {
        (topic, p): 1500 for p in range(3)
    }
    for p in range(3):
        assert saved.last_runs[(topic, p)] == [(0, 0, 1000), (1000, 1001, 500)]
    progress.close()


def test_a_zombie_writer_is_fenced_and_its_open_transaction_aborted(two_clusters, spark):
    east, west = two_clusters
    topic = unique_name("zombie")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=1)
    create_topic(west.bootstrap_servers, remote, partitions=1)
    _progress(west).close()
    produce(east.bootstrap_servers, topic, [Record(None, f"v{i}".encode()) for i in range(100)])

    # An earlier task of partition 0 that wrote records but never committed them.
    zombie = Producer(
        {
            "bootstrap.servers": west.bootstrap_servers,
            "transactional.id": transactional_id(FLOW, topic, 0),
        }
    )
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(remote, value=b"zombie", partition=0)
    assert zombie.flush(30) == 0

    rows = _write_range(spark, east, topic, _spec(east, west, topic, remote), {0: 100})
    assert rows[0].records == 100

    fenced = False
    try:
        zombie.commit_transaction(30)
    except Exception:  # noqa: BLE001 - any failure to commit is what the test wants
        fenced = True
    assert fenced, "the zombie could still commit"
    values = _values(west.bootstrap_servers, remote, 100)[0]
    assert values == [f"v{i}".encode() for i in range(100)]


def test_driver_in_exactly_once_mode_restarts_without_duplicates(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic = unique_name("eosflow")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=2)
    config = write_config(
        tmp_path / "c.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "exactly.once.source.support = enabled\n"
        "consumer.isolation.level = read_committed\n"
        "micro-batch.max.records = 1400\n",
    )
    batch = [Record(f"k{i}".encode(), f"v{i}".encode(), partition=i % 2) for i in range(4000)]
    produce(east.bootstrap_servers, topic, batch)
    with running_driver(config, spark, tmp_path / "w") as driver:
        wait_until(
            lambda: (
                sum(end_offsets(west.bootstrap_servers, remote).values()) >= 4000
                if remote
                in AdminClient({"bootstrap.servers": west.bootstrap_servers})
                .list_topics(timeout=10)
                .topics
                else False
            ),
            timeout=120,
            what="the first 4,000 records",
        )
        wait_until(
            lambda: driver.statuses()[0].records == 4000,
            timeout=60,
            what="the driver to count 4,000 records",
        )
        status = driver.statuses()[0]
        assert status.exactly_once and status.state == "running"

    produce(
        east.bootstrap_servers,
        topic,
        [Record(None, f"w{i}".encode(), partition=i % 2) for i in range(1000)],
    )
    with running_driver(config, spark, tmp_path / "w") as driver:
        wait_until(
            lambda: driver.statuses()[0].records == 1000,
            timeout=120,
            what="the next 1,000 records after the restart",
        )
    got = consume_to_end(west.bootstrap_servers, remote)
    assert len(got) == 5000, "each record exactly once"
    per_partition = {}
    for r in sorted(got, key=lambda r: (r.partition, r.offset)):
        per_partition.setdefault(r.partition, []).append(r.value)
    assert per_partition[0][:2000] == [f"v{i}".encode() for i in range(0, 4000, 2)]
    assert per_partition[0][2000:] == [f"w{i}".encode() for i in range(0, 1000, 2)]
