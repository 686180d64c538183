"""Spark's own Kafka source, from the connector jars, reads real clusters in local mode."""

from __future__ import annotations

from support.kafka_io import Record, create_topic, produce, recent_timestamp, unique_name


def test_structured_streaming_reads_all_record_fields(two_clusters, spark):
    east, _ = two_clusters
    topic = unique_name("spark-source")
    create_topic(east.bootstrap_servers, topic, partitions=2)
    sent = produce(
        east.bootstrap_servers,
        topic,
        [
            Record(b"a", b"1", (("h", b"x"),), recent_timestamp(3), 0),
            Record(b"b", None, (), recent_timestamp(2), 0),
            Record(None, b"3", (("h", b"y"), ("h2", b"z")), recent_timestamp(1), 1),
        ],
    )

    query_name = topic.replace("-", "_")
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", east.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
        .writeStream.format("memory")
        .queryName(query_name)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the availableNow query did not finish in time"
    assert query.exception() is None

    rows = spark.sql(
        f"SELECT key, value, headers, timestamp, partition, offset, topic FROM {query_name}"
    ).collect()
    read = sorted(
        (
            Record(
                bytes(r.key) if r.key is not None else None,
                bytes(r.value) if r.value is not None else None,
                tuple((h.key, bytes(h.value)) for h in r.headers or ()),
                int(r.timestamp.timestamp() * 1000),
                r.partition,
                r.offset,
            )
            for r in rows
        ),
        key=lambda r: (r.partition, r.offset),
    )
    assert {r.topic for r in rows} == {topic}
    assert read == sorted(sent, key=lambda r: (r.partition, r.offset))
    assert [(r.partition, r.offset) for r in read] == [(0, 0), (0, 1), (1, 0)]
