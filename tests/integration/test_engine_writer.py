"""The executor writer copies records faithfully and reports where each one landed."""

from __future__ import annotations

import random

from mirrorline.engine.batch_writer import WriteSpec, write_batch
from mirrorline.formats import OffsetSync  # noqa: F401 - syncs are checked as MM2 would read them
from support.kafka_io import (
    Record,
    consume,
    create_topic,
    produce,
    recent_timestamp,
    unique_name,
)

PARTITIONS = 6
RECORDS = 100_000


def _source_records(count: int) -> list[Record]:
    rng = random.Random(7)
    records = []
    for i in range(count):
        key = None if i % 97 == 0 else f"key-{rng.randrange(5000)}".encode()
        value = None if i % 50 == 0 else rng.randbytes(rng.randrange(0, 200))
        headers = () if i % 3 else (("trace", f"{i}".encode()), ("empty", None))
        records.append(
            Record(key, value, headers, recent_timestamp(rng.randrange(10**6)), i % PARTITIONS)
        )
    return records


def _replicate_once(spark, source: str, target: str, topic: str, remote: str):
    """One availableNow run of Spark's Kafka source into the writer; returns summary rows."""
    spec = WriteSpec(
        flow="east->west",
        producer_settings={"bootstrap.servers": target},
        source_settings={"bootstrap.servers": source},
        remote_topics={topic: remote},
        offset_lag_max=100,
    )
    summaries = []

    def each_batch(df, _batch_id):
        summaries.extend(write_batch(df, spec, "test-writer"))

    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", source)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
        .writeStream.foreachBatch(each_batch)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300), "replication run did not finish"
    assert query.exception() is None
    return summaries


def test_records_arrive_identical_in_partition_order_with_exact_syncs(two_clusters, spark):
    east, west = two_clusters
    topic, remote = unique_name("writer"), None
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    create_topic(west.bootstrap_servers, remote, partitions=PARTITIONS)
    sent = produce(east.bootstrap_servers, topic, _source_records(RECORDS))

    summaries = _replicate_once(
        spark, east.bootstrap_servers, west.bootstrap_servers, topic, remote
    )

    received = consume(west.bootstrap_servers, remote, expected=RECORDS, timeout=120)
    assert len(received) == RECORDS

    def by_partition(records):
        out = {}
        for r in sorted(records, key=lambda r: (r.partition, r.offset)):
            out.setdefault(r.partition, []).append(
                (r.key, r.value, tuple((k, v) for k, v in r.headers), r.timestamp)
            )
        return out

    # Same partition, key, value (nulls kept), headers and timestamp, in source order.
    expected = by_partition(sent)
    got = by_partition(received)
    assert got.keys() == expected.keys()
    for partition in expected:
        assert got[partition] == expected[partition], f"partition {partition} differs"

    # The summaries account for every record and their syncs point at the real copies.
    assert sum(s.records for s in summaries) == RECORDS
    where = {(r.partition, r.offset): r for r in received}
    source_at = {(r.partition, r.offset): r for r in sent}
    for summary in summaries:
        assert summary.syncs, "every partition batch publishes syncs"
        for upstream, downstream in summary.syncs:
            original = source_at[(summary.partition, upstream)]
            copy = where[(summary.partition, downstream)]
            assert (copy.key, copy.value, copy.timestamp) == (
                original.key,
                original.value,
                original.timestamp,
            )
        ups = [upstream for upstream, _ in summary.syncs]
        assert ups[0] == summary.first_offset and ups[-1] == summary.last_offset
        assert max((b - a for a, b in zip(ups, ups[1:], strict=False)), default=0) <= 100
