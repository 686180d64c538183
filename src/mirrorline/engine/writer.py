"""The executor side of a flow: write one micro-batch's records to the target cluster.

Spark hands each task the source records of its Kafka partitions as Arrow batches
(`mapInArrow`). The task produces every record with librdkafka to the remote topic,
same partition, key, value (null kept), headers and original timestamp, waits for
every delivery report, and returns one summary row per source partition: counts,
offset ranges on both sides, the record age, the records it could not write, and
the offset syncs that make translation exact (see `sync_points`).

Two ways to write:

- at least once (the default): one idempotent producer per worker, reused across
  tasks; the driver saves the progress after the batch, so a crash in between
  writes the batch again;
- exactly once (`exactly.once.source.support = enabled`): each partition's
  records and its new progress are one Kafka transaction (see `transactional`).

Delivery reports arrive in produce order per partition (the producer is
idempotent), so the i-th report of a target partition belongs to the i-th record
produced to it; no per-record bookkeeping object is needed.
"""

from __future__ import annotations

import sys
import time
import zipimport
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import KafkaError, KafkaException, Producer

from mirrorline.engine.provenance import Provenance
from mirrorline.engine.refusals import Refusal, is_refusal, refusal
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
# How many refusals a summary row describes in words (all are counted).
REFUSALS_DESCRIBED = 3
# Bytes a record adds to a record batch beyond its key, value and headers
# (batch header plus the record's own length fields), rounded up.
RECORD_OVERHEAD = 100

RESULT_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("records", pa.int64()),
        ("filtered", pa.int64()),
        ("skipped", pa.int64()),
        ("refused", pa.int64()),
        ("dead_lettered", pa.int64()),
        ("refusals", pa.list_(pa.string())),
        ("first_seen", pa.int64()),
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
    "topic string, partition int, records bigint, filtered bigint, skipped bigint, "
    "refused bigint, dead_lettered bigint, refusals array<string>, first_seen bigint, "
    "next_offset bigint, "
    "bytes bigint, first_offset bigint, "
    "last_offset bigint, first_target_offset bigint, last_target_offset bigint, "
    "min_timestamp bigint, max_age_ms bigint, "
    "syncs array<struct<upstream: bigint, downstream: bigint>>"
)


class DeliveryFailed(RuntimeError):
    """The target refused a record; the message names topic, partition and offset."""


@dataclass(frozen=True)
class ExactlyOnceSpec:
    """Where exactly-once tasks keep their progress (see `transactional`)."""

    progress_topic: str
    # The consumer group whose committed offsets index each partition's progress.
    position_group: str
    consumer_settings: Mapping[str, object]


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
    # errors.tolerance = all: skip (and dead-letter) records the target refuses.
    tolerate_refusals: bool = False
    dead_letter_topic: str | None = None
    exactly_once: ExactlyOnceSpec | None = None
    # Remote topic -> its max.message.bytes; larger records are refused before sending.
    size_limits: Mapping[str, int] = field(default_factory=dict)


class SourceRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int  # epoch milliseconds
    headers: list[tuple[str, bytes | None]]
    size: int


@dataclass
class PartitionLog:
    """What one task wrote for one source partition."""

    first_seen: int = 0  # the first record of the input, written or not
    next_offset: int = 0  # after the last record seen, written or not
    filtered: int = 0  # records not written because they have been in the target before
    skipped: int = 0  # records an earlier attempt already committed (exactly-once)
    source_offsets: list[int] = field(default_factory=list)
    target_offsets: list[int] = field(default_factory=list)  # -1: refused
    refusals: list[Refusal] = field(default_factory=list)
    dead_lettered: int = 0
    bytes: int = 0
    min_timestamp: int | None = None

    def note_written(self, record: SourceRecord) -> None:
        self.source_offsets.append(record.offset)
        self.bytes += record.size
        if self.min_timestamp is None or record.timestamp < self.min_timestamp:
            self.min_timestamp = record.timestamp

    def delivered(self) -> tuple[list[int], list[int]]:
        """Source and target offsets of the records the target accepted."""
        pairs = [
            (s, t) for s, t in zip(self.source_offsets, self.target_offsets, strict=True) if t >= 0
        ]
        return [s for s, _ in pairs], [t for _, t in pairs]


def write_batches(batches: Iterator[pa.RecordBatch], spec: WriteSpec) -> Iterator[pa.RecordBatch]:
    """`mapInArrow` function: produce the records, yield the per-partition summary."""
    _keep_zip_import_caches()
    if spec.exactly_once is not None:
        from mirrorline.engine.transactional import write_exactly_once

        logs = write_exactly_once(_records(batches), spec)
    else:
        logs = _write_at_least_once(_records(batches), spec)
    yield _summary(logs, spec.offset_lag_max)


def _records(batches: Iterator[pa.RecordBatch]) -> Iterator[SourceRecord]:
    for batch in batches:
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
            record_headers = [(h["key"], h["value"]) for h in (headers[i] or ())] if headers else []
            yield SourceRecord(
                topic,
                partitions[i],
                offsets[i],
                keys[i],
                values[i],
                timestamps[i],
                record_headers,
                sizes[i],
            )


def headers_to_write(record: SourceRecord, spec: WriteSpec) -> list | None:
    """The headers of the copy, or None when provenance says the target had it before."""
    if spec.provenance is None:
        return record.headers
    if spec.provenance.has_been_in_target(record.headers, spec.remote_topics[record.topic]):
        return None
    return [*record.headers, spec.provenance.mark(record.topic)]


def produce_copy(
    producer: Producer,
    spec: WriteSpec,
    record: SourceRecord,
    headers: list,
    on_delivery: Callable,
) -> Refusal | None:
    """Queue the copy of `record`; a Refusal when the client refuses it outright.

    librdkafka checks some limits (message.max.bytes) before queueing; those
    refusals come back here rather than in a delivery report.
    """
    remote = spec.remote_topics[record.topic]
    too_large = _over_size_limit(record, headers, spec.size_limits.get(remote))
    if too_large:
        return Refusal(
            record.topic, record.partition, record.offset, remote, "MSG_SIZE_TOO_LARGE", too_large
        )
    kwargs = {"headers": headers} if headers else {}
    while True:
        try:
            _produce_when_room(
                producer,
                remote,
                key=record.key,
                value=record.value,
                partition=record.partition,
                timestamp=record.timestamp,
                on_delivery=on_delivery,
                **kwargs,
            )
            return None
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() == KafkaError._UNKNOWN_PARTITION and _refresh_metadata(
                producer, remote, record.partition
            ):
                continue  # the partition was added after this producer's last look
            if is_refusal(error):
                return refusal(record.topic, record.partition, record.offset, remote, error)
            raise DeliveryFailed(
                f"flow {spec.flow}: cannot write {record.topic}[{record.partition}] offset "
                f"{record.offset} to {remote}: {error.str()}"
            ) from None


def _over_size_limit(record: SourceRecord, headers: list, limit: int | None) -> str:
    """Why the record cannot fit the remote topic's max.message.bytes, or ''."""
    if limit is None:
        return ""
    size = record.size + RECORD_OVERHEAD
    if headers:
        size += sum(len(k) + len(v or b"") for k, v in headers)
    if size <= limit:
        return ""
    return f"record too large: about {size} bytes, over the topic's max.message.bytes ({limit})"


def batch_size_within(settings: Mapping[str, object], limits: Mapping[str, int]) -> dict:
    """`settings` with record batches no larger than any remote topic accepts."""
    if not limits:
        return dict(settings)
    current = int(settings.get("batch.size", DEFAULT_PRODUCER_SETTINGS["batch.size"]))
    return {**settings, "batch.size": max(1, min(current, *limits.values()))}


def refused_or_raise(spec: WriteSpec, found: Refusal) -> None:
    """Under errors.tolerance = none a refusal stops the flow, naming the record."""
    if not spec.tolerate_refusals:
        raise DeliveryFailed(f"flow {spec.flow}: {found.describe()}")


def produce_dead_letter(
    producer: Producer,
    spec: WriteSpec,
    found: Refusal,
    record: SourceRecord,
    on_delivery: Callable,
) -> bool:
    """Queue the refused record for the dead-letter topic; False when none is configured."""
    if not spec.dead_letter_topic:
        return False
    try:
        _produce_when_room(
            producer,
            spec.dead_letter_topic,
            key=record.key,
            value=record.value,
            timestamp=record.timestamp,
            headers=[*record.headers, *found.headers(spec.flow)],
            on_delivery=on_delivery,
        )
    except KafkaException as exc:
        raise DeliveryFailed(
            f"flow {spec.flow}: dead-letter topic {spec.dead_letter_topic} refused the "
            f"record from {found.topic}[{found.partition}] offset {found.offset}: "
            f"{exc.args[0].str()}"
        ) from None
    return True


def _produce_when_room(producer: Producer, topic: str, **record) -> None:
    """`producer.produce`, waiting for deliveries to drain while the local queue is full."""
    while True:
        try:
            producer.produce(topic, **record)
            return
        except BufferError:
            producer.poll(0.05)


def _write_at_least_once(records: Iterator[SourceRecord], spec: WriteSpec):
    producer = _producer(spec.producer_settings)
    logs: dict[tuple[str, int], PartitionLog] = {}
    failures: list[str] = []
    refused: list[tuple[Refusal, SourceRecord]] = []
    source_of = {remote: source for source, remote in spec.remote_topics.items()}

    def delivered(error, msg) -> None:
        log = logs[(source_of[msg.topic()], msg.partition())]
        index = len(log.target_offsets)
        if error is None:
            log.target_offsets.append(msg.offset())
            return
        log.target_offsets.append(-1)
        offset = log.source_offsets[index]
        found = refusal(source_of[msg.topic()], msg.partition(), offset, msg.topic(), error)
        if spec.tolerate_refusals and is_refusal(error):
            copy = SourceRecord(
                found.topic,
                found.partition,
                offset,
                msg.key(),
                msg.value(),
                msg.timestamp()[1],
                list(msg.headers() or ()),
                0,
            )
            refused.append((found, copy))
        else:
            failures.append(found.describe())

    try:
        for count, record in enumerate(records):
            log = logs.get((record.topic, record.partition))
            if log is None:
                log = logs[(record.topic, record.partition)] = PartitionLog(record.offset)
            log.next_offset = record.offset + 1
            headers = headers_to_write(record, spec)
            if headers is None:
                log.filtered += 1
                continue
            found = produce_copy(producer, spec, record, headers, delivered)
            if found is None:
                log.note_written(record)
            else:
                refused_or_raise(spec, found)
                refused.append((found, record))
            if count % 1000 == 0:
                producer.poll(0)
        flush_or_raise(producer, spec)
        if failures:
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            raise DeliveryFailed(f"flow {spec.flow}: {failures[0]}{more}")
        _dead_letter_all(producer, spec, refused, logs)
    except BaseException:
        # A producer that failed may be in a bad state: the next task starts afresh.
        _forget_producer(spec.producer_settings)
        raise
    return logs


def _dead_letter_all(producer, spec: WriteSpec, refused, logs) -> None:
    """Count the refused records and write them to the dead-letter topic, if any."""
    errors: list[str] = []

    def delivered(error, _msg) -> None:
        if error is not None:
            errors.append(error.str())

    for found, record in refused:
        log = logs[(found.topic, found.partition)]
        log.refusals.append(found)
        if produce_dead_letter(producer, spec, found, record, delivered):
            log.dead_lettered += 1
    if any(log.dead_lettered for log in logs.values()):
        flush_or_raise(producer, spec)
        if errors:
            raise DeliveryFailed(
                f"flow {spec.flow}: dead-letter topic {spec.dead_letter_topic} refused a "
                f"record: {errors[0]}"
            )


def flush_or_raise(producer: Producer, spec: WriteSpec, what: str = "records") -> None:
    """Wait for every delivery report; DeliveryFailed if some are still missing."""
    remaining = producer.flush(spec.flush_timeout_s)
    if remaining:
        raise DeliveryFailed(
            f"flow {spec.flow}: {remaining} {what} not acknowledged by the target "
            f"within {spec.flush_timeout_s:.0f}s"
        )


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


def _summary(logs: Mapping[tuple[str, int], PartitionLog], lag_max: int) -> pa.RecordBatch:
    now = int(time.time() * 1000)
    rows = []
    for (topic, partition), log in sorted(logs.items()):
        source, target = log.delivered()
        syncs = sync_points(source, target, lag_max)
        written = bool(source)
        rows.append(
            {
                "topic": topic,
                "partition": partition,
                "records": len(source),
                "filtered": log.filtered,
                "skipped": log.skipped,
                "refused": len(log.refusals),
                "dead_lettered": log.dead_lettered,
                "refusals": [r.describe() for r in log.refusals[:REFUSALS_DESCRIBED]],
                "first_seen": log.first_seen,
                "next_offset": log.next_offset,
                "bytes": log.bytes,
                "first_offset": source[0] if written else None,
                "last_offset": source[-1] if written else None,
                "first_target_offset": target[0] if written else None,
                "last_target_offset": target[-1] if written else None,
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


def producer_settings(settings: Mapping[str, object]) -> dict[str, object]:
    """The user's producer settings with Mirrorline's defaults and requirements."""
    return {**DEFAULT_PRODUCER_SETTINGS, **settings, **REQUIRED_PRODUCER_SETTINGS}


_producers: dict[tuple, Producer] = {}


def _producer(settings: Mapping[str, object]) -> Producer:
    """One producer per settings per Python worker, reused across tasks and batches.

    Spark reuses Python workers, so keeping the producer avoids a new connection
    and metadata round trip for every task.
    """
    key = _producer_key(settings)
    producer = _producers.get(key)
    if producer is None:
        producer = _producers[key] = Producer(producer_settings(settings))
    return producer


def _forget_producer(settings: Mapping[str, object]) -> None:
    _producers.pop(_producer_key(settings), None)


def _producer_key(settings: Mapping[str, object]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in settings.items()))
