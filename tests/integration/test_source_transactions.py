"""Transactions at the source: only committed records are replicated, offsets still translate.

With `consumer.isolation.level = read_committed` the flow reads the source as a
transactional consumer does: records of aborted transactions and the commit and
abort markers take offsets in the source log but are no data. The copies must be
exactly the committed records, in order, and the flow's offset syncs must map
the source offset of every replicated record to the offset of its copy, across
the holes the markers and aborted records leave in the source numbering.
"""

from __future__ import annotations

import bisect

from confluent_kafka import Producer

from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    consume,
    create_topic,
    end_offsets,
    read_offset_syncs,
    recent_timestamp,
    unique_name,
)
from support.wait import wait_until

PARTITIONS = 3


def _records(kind: str, count: int) -> list[Record]:
    return [
        Record(
            f"{kind}-key-{i % 7}".encode(),
            f"{kind}-{i}".encode(),
            (("kind", kind.encode()),) if i % 3 == 0 else (),
            recent_timestamp(60_000 - i),
            i % PARTITIONS,
        )
        for i in range(count)
    ]


def _send(producer: Producer, topic: str, records: list[Record]) -> None:
    for r in records:
        producer.produce(
            topic,
            key=r.key,
            value=r.value,
            partition=r.partition,
            timestamp=r.timestamp,
            headers=list(r.headers) or None,
        )
    # Plain records: acknowledged before the next step. Transactional ones: sent
    # before the transaction ends (commit and abort flush anyway).
    assert producer.flush(30) == 0


def _by_partition(records: list[Record]) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        out.setdefault(r.partition, []).append((r.key, r.value, tuple(r.headers), r.timestamp))
    return out


def _wait_for_count(bootstrap: str, topic: str, count: int) -> None:
    wait_until(
        lambda: sum(end_offsets(bootstrap, topic).values()) >= count,
        timeout=180,
        what=f"{count} records in {topic}",
    )


def _translate(syncs: list[tuple[int, int]], upstream: int) -> int | None:
    """The target offset of source offset `upstream` by the syncs (sorted by upstream offset).

    The latest sync (u0, d0) at or before it gives d0 + (upstream - u0); the next
    sync (u1, d1) caps that at d1, which only matters across a discontinuity (the
    writer's rule, `mirrorline.engine.sync_points`).
    """
    at = bisect.bisect_right(syncs, (upstream, float("inf"))) - 1
    if at < 0:
        return None
    u0, d0 = syncs[at]
    translated = d0 + (upstream - u0)
    if at + 1 < len(syncs):
        translated = min(translated, syncs[at + 1][1])
    return translated


def test_only_committed_records_are_replicated_and_offsets_translate_exactly(
    two_clusters, spark, tmp_path
):
    east, west = two_clusters
    topic = unique_name("txn")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "consumer.isolation.level = read_committed\n",
    )
    servers = east.bootstrap_servers
    plain = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 5})
    txn = Producer(
        {"bootstrap.servers": servers, "transactional.id": unique_name("txn"), "linger.ms": 5}
    )
    txn.init_transactions(30)

    def transaction(records: list[Record], *, commit: bool, plain_inside: list[Record] = ()):
        """One transaction; `plain_inside` lands in the log between its records."""
        half = len(records) // 2
        txn.begin_transaction()
        _send(txn, topic, records[:half])
        _send(plain, topic, list(plain_inside))
        _send(txn, topic, records[half:])
        if commit:
            txn.commit_transaction(30)
        else:
            txn.abort_transaction(30)

    with running_driver(config, spark, tmp_path / "work"):
        _send(plain, topic, _records("plain-a", 300))
        transaction(_records("committed-a", 300), commit=True)
        transaction(_records("aborted-a", 300), commit=False)
        transaction(_records("aborted-b", 300), commit=False, plain_inside=_records("plain-b", 150))
        transaction(
            _records("committed-b", 300), commit=True, plain_inside=_records("plain-c", 150)
        )
        _send(plain, topic, _records("plain-d", 90))
        # The partitions end with abort markers: the flow must not stall there.
        transaction(_records("aborted-c", 90), commit=False)
        _wait_for_count(west.bootstrap_servers, remote, 1_290)
        _send(plain, topic, _records("plain-e", 30))
        _wait_for_count(west.bootstrap_servers, remote, 1_320)

    committed = consume(servers, topic, expected=1_320, isolation_level="read_committed")
    assert len(committed) == 1_320
    assert not [r for r in committed if r.value.startswith(b"aborted")], "the reference is wrong"
    copies = consume(west.bootstrap_servers, remote, expected=1_320)
    aborted = [r.value for r in copies if r.value.startswith(b"aborted")]
    assert not aborted, f"records of aborted transactions replicated: {aborted[:5]}"
    # Record by record, per partition: only what a read_committed consumer sees, in order.
    assert _by_partition(copies) == _by_partition(committed)
    # Nothing else either, and no marker takes a place on the target: its offsets are dense.
    assert end_offsets(west.bootstrap_servers, remote) == {
        p: len(records) for p, records in _by_partition(committed).items()
    }

    syncs: dict[int, list[tuple[int, int]]] = {}
    for s in read_offset_syncs(servers, "mm2-offset-syncs.west.internal"):
        if s.topic == topic:
            syncs.setdefault(s.partition, []).append((s.upstream_offset, s.downstream_offset))
    for partition_syncs in syncs.values():
        partition_syncs.sort()
    source_offsets = sorted((r.partition, r.offset) for r in committed)
    target_offsets = sorted((r.partition, r.offset) for r in copies)
    holes = [
        (p, u1, u2)
        for (p, u1), (q, u2) in zip(source_offsets, source_offsets[1:], strict=False)
        if p == q and u2 > u1 + 1
    ]
    assert holes, "the source numbering has no hole to translate across"
    # The copies were just shown equal in order, so the i-th of each partition pair up.
    wrong = [
        (p, u, _translate(syncs.get(p, []), u), d)
        for (p, u), (_, d) in zip(source_offsets, target_offsets, strict=True)
        if _translate(syncs.get(p, []), u) != d
    ]
    assert not wrong, (
        f"{len(wrong)} replicated records translate wrongly by the offset syncs, e.g. "
        + "; ".join(f"partition {p} offset {u} -> {t}, copy at {d}" for p, u, t, d in wrong[:5])
    )
