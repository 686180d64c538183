"""The executor side of a flow: write one micro-batch's records to the target cluster.

Spark hands each task the source records of its Kafka partitions as Arrow batches
(`mapInArrow`). The task produces every record with librdkafka to the remote topic,
same partition, key, value (null kept), headers and original timestamp, waits for
every delivery report, and returns one summary row per source partition: counts,
offset ranges on both sides, the record age, and the offset syncs that make
translation exact (see `sync_points`).

Delivery reports arrive in produce order per partition (the producer is
idempotent), so the i-th report of a target partition belongs to the i-th record
produced to it; no per-record bookkeeping object is needed.
"""

from __future__ import annotations

import sys
import time
import zipimport
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import KafkaError, KafkaException, Producer

from mirrorline.engine.provenance import Provenance
from mirrorline.engine.sync_points import sync_points

# Settings that exactness and ordering depend on; user settings cannot weaken them.
REQUIRED_PRODUCER_SETTINGS: Mapping[str, object] = {
    "enable.idempotence": True,
    "acks": "all",
}
DEFAULT_PRODUCER_SETTINGS: Mapping[str, object] = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "compression.type": "none",
    "queue.buffering.max.messages": 500_000,
}

RESULT_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("records", pa.int64()),
        ("filtered", pa.int64()),
        ("next_offset", pa.int64()),
        ("bytes", pa.int64()),
        ("first_offset", pa.int64()),
        ("last_offset", pa.int64()),
        ("first_target_offset", pa.int64()),
        ("last_target_offset", pa.int64()),
        ("min_timestamp", pa.int64()),
        ("max_age_ms", pa.int64()),
        (
            "syncs",
            pa.list_(pa.struct([("upstream", pa.int64()), ("downstream", pa.int64())])),
        ),
    ]
)
# The same schema as a Spark DDL string, for `mapInArrow`.
RESULT_DDL = (
    "topic string, partition int, records bigint, filtered bigint, next_offset bigint, "
    "bytes bigint, first_offset bigint, "
    "last_offset bigint, first_target_offset bigint, last_target_offset bigint, "
    "min_timestamp bigint, max_age_ms bigint, "
    "syncs array<struct<upstream: bigint, downstream: bigint>>"
)


class DeliveryFailed(RuntimeError):
    """The target refused a record; the message names topic, partition and offset."""


@dataclass(frozen=True)
class WriteSpec:
    """Everything a task needs; pickled by Spark and shipped to the executors."""

    flow: str
    producer_settings: Mapping[str, object]
    remote_topics: Mapping[str, str]  # source topic -> topic on the target
    offset_lag_max: int
    # Set for policies that cannot see loops from topic names (see `provenance`).
    provenance: Provenance | None = None
    flush_timeout_s: float = 300.0


@dataclass
class _PartitionLog:
    """What one task wrote for one source partition."""

    next_offset: int = 0  # after the last record seen, written or filtered
    filtered: int = 0  # records not written because they have been in the target before
    source_offsets: list[int] = field(default_factory=list)
    target_offsets: list[int] = field(default_factory=list)
    bytes: int = 0
    min_timestamp: int | None = None


def write_batches(batches: Iterator[pa.RecordBatch], spec: WriteSpec) -> Iterator[pa.RecordBatch]:
    """`mapInArrow` function: produce the records, yield the per-partition summary."""
    _keep_zip_import_caches()
    producer = _producer(spec.producer_settings)
    logs: dict[tuple[str, int], _PartitionLog] = {}
    failures: list[str] = []
    source_of = {remote: source for source, remote in spec.remote_topics.items()}

    def delivered(error, msg) -> None:
        log = logs[(source_of[msg.topic()], msg.partition())]
        if error is not None:
            index = len(log.target_offsets)
            failures.append(
                f"{msg.topic()}[{msg.partition()}] refused the record from source offset "
                f"{log.source_offsets[index]}: {error.str()}"
            )
            log.target_offsets.append(-1)
        else:
            log.target_offsets.append(msg.offset())

    try:
        for batch in batches:
            _produce_batch(producer, batch, spec, logs, delivered)
        remaining = producer.flush(spec.flush_timeout_s)
        if remaining:
            raise DeliveryFailed(
                f"flow {spec.flow}: {remaining} records not acknowledged by the target "
                f"within {spec.flush_timeout_s:.0f}s"
            )
        if failures:
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            raise DeliveryFailed(f"flow {spec.flow}: {failures[0]}{more}")
    except BaseException:
        # A producer that failed may be fenced or fatal: the next task starts afresh.
        _forget_producer(spec.producer_settings)
        raise
    yield _summary(logs, spec.offset_lag_max)


def _produce_batch(producer, batch: pa.RecordBatch, spec: WriteSpec, logs, on_delivery) -> None:
    topics = batch.column("topic").to_pylist()
    partitions = batch.column("partition").to_pylist()
    offsets = batch.column("offset").to_pylist()
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    # Spark keeps Kafka's millisecond timestamps as microseconds.
    timestamps = pc.divide(batch.column("timestamp").cast(pa.int64()), 1000).to_pylist()
    headers = batch.column("headers").to_pylist() if "headers" in batch.schema.names else None
    sizes = pc.add(
        pc.fill_null(pc.binary_length(batch.column("key")), 0),
        pc.fill_null(pc.binary_length(batch.column("value")), 0),
    ).to_pylist()

    for i, topic in enumerate(topics):
        partition = partitions[i]
        log = logs.get((topic, partition))
        if log is None:
            log = logs[(topic, partition)] = _PartitionLog()
        log.next_offset = offsets[i] + 1
        record_headers = [(h["key"], h["value"]) for h in (headers[i] or ())] if headers else []
        if spec.provenance is not None:
            if spec.provenance.has_been_in_target(record_headers, spec.remote_topics[topic]):
                log.filtered += 1
                continue
            record_headers.append(spec.provenance.mark(topic))
        kwargs = {"headers": record_headers} if record_headers else {}
        log.source_offsets.append(offsets[i])
        log.bytes += sizes[i]
        if log.min_timestamp is None or timestamps[i] < log.min_timestamp:
            log.min_timestamp = timestamps[i]
        while True:
            try:
                producer.produce(
                    spec.remote_topics[topic],
                    key=keys[i],
                    value=values[i],
                    partition=partition,
                    timestamp=timestamps[i],
                    on_delivery=on_delivery,
                    **kwargs,
                )
                break
            except BufferError:
                # Local queue full: let deliveries drain, then retry this record.
                producer.poll(0.05)
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == KafkaError._UNKNOWN_PARTITION and _refresh_metadata(
                    producer, spec.remote_topics[topic], partition
                ):
                    continue  # the partition was added after this producer's last look
                raise DeliveryFailed(
                    f"flow {spec.flow}: cannot write {topic}[{partition}] offset {offsets[i]} "
                    f"to {spec.remote_topics[topic]}: {error.str()}"
                ) from None
        if i % 1000 == 0:
            producer.poll(0)


def _refresh_metadata(producer: Producer, topic: str, partition: int, wait_s: float = 30.0) -> bool:
    """Ask the cluster again until `partition` of `topic` is known; False at the deadline.

    A producer reused across batches learns of new partitions only at its next
    periodic metadata refresh; the driver adds partitions on the target before
    assigning them, so they exist and a fresh look finds them.
    """
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        meta = producer.list_topics(topic, timeout=5).topics.get(topic)
        if meta is not None and partition in meta.partitions:
            return True
        time.sleep(0.2)
    return False


def _summary(logs: Mapping[tuple[str, int], _PartitionLog], lag_max: int) -> pa.RecordBatch:
    now = int(time.time() * 1000)
    rows = []
    for (topic, partition), log in sorted(logs.items()):
        syncs = sync_points(log.source_offsets, log.target_offsets, lag_max)
        written = bool(log.source_offsets)
        rows.append(
            {
                "topic": topic,
                "partition": partition,
                "records": len(log.source_offsets),
                "filtered": log.filtered,
                "next_offset": log.next_offset,
                "bytes": log.bytes,
                "first_offset": log.source_offsets[0] if written else None,
                "last_offset": log.source_offsets[-1] if written else None,
                "first_target_offset": log.target_offsets[0] if written else None,
                "last_target_offset": log.target_offsets[-1] if written else None,
                "min_timestamp": log.min_timestamp,
                "max_age_ms": max(0, now - (log.min_timestamp or now)),
                "syncs": [{"upstream": u, "downstream": d} for u, d in syncs],
            }
        )
    return pa.RecordBatch.from_pylist(rows, schema=RESULT_SCHEMA)


def _keep_zip_import_caches() -> None:
    """Stop PySpark's per-task import-cache reset from re-reading pyspark.zip (Python < 3.13).

    PySpark's worker calls `importlib.invalidate_caches()` before every task. Up
    to Python 3.12 that makes every zip importer re-read its archive's directory,
    and PySpark is imported from `pyspark.zip`: measured 60-120 ms of CPU per
    task, most of a micro-batch's time at one task per partition (see
    benchmarks/RESULTS.md). The archives on the workers' path never change while
    they run, so their cached directories stay valid. Python 3.13 made the call
    cheap (CPython gh-103200). Applied once per (reused) worker process.
    """
    if sys.version_info < (3, 13) and not getattr(zipimport.zipimporter, "_mirrorline", False):
        zipimport.zipimporter.invalidate_caches = lambda self: None
        zipimport.zipimporter._mirrorline = True


_producers: dict[tuple, Producer] = {}


def _producer(settings: Mapping[str, object]) -> Producer:
    """One producer per settings per Python worker, reused across tasks and batches.

    Spark reuses Python workers, so keeping the producer avoids a new connection
    and metadata round trip for every task.
    """
    key = _producer_key(settings)
    producer = _producers.get(key)
    if producer is None:
        merged = {**DEFAULT_PRODUCER_SETTINGS, **settings, **REQUIRED_PRODUCER_SETTINGS}
        producer = _producers[key] = Producer(merged)
    return producer


def _forget_producer(settings: Mapping[str, object]) -> None:
    _producers.pop(_producer_key(settings), None)


def _producer_key(settings: Mapping[str, object]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in settings.items()))
