"""Writing one micro-batch: the seam between the flow's driver side and its executors.

`write_batch(frame, spec)` hands the micro-batch's DataFrame (Spark's Kafka
source, as `foreachBatch` gives it) to Mirrorline's JVM writer
(`jvm/writer`, class `io.mirrorline.writer.BatchWriter`). Its Spark tasks read
the batch's offset ranges with source consumers kept on their executor (Spark's
own readers re-query the partition's offsets after every poll and drop what
they fetched ahead) and send each record with a Kafka producer kept there
too: same partition, key, value (null kept), headers and original
timestamp; provenance headers where the policy needs them; the flow's single
message transforms where it has some (Kafka Connect's classes, run as MM2
runs them: see `config.transforms`); refused records
stopped, skipped or dead-lettered as `errors.tolerance` says; in exactly-once
mode one transaction per source partition (see `transactional`). Records never
enter Python: per-record work in Python cost more CPU than all of MirrorMaker 2
(see benchmarks/RESULTS.md).

Each task returns one `PartitionResult` per source partition, with the exact
offset mapping as runs, from which the driver chooses the offset syncs
(`sync_points`). Everything the driver does after a batch (offset syncs, runs,
progress, totals, gaps) reads these results and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from mirrorline.engine.provenance import Provenance
from mirrorline.engine.sync_points import sync_points_of_runs
from mirrorline.engine.transactional import ExactlyOnceSpec

WRITER_CLASS = "io.mirrorline.writer.BatchWriter"

# Settings that exactness and ordering depend on; user settings cannot weaken them.
REQUIRED_PRODUCER_SETTINGS: Mapping[str, str] = {
    "enable.idempotence": "true",
    "acks": "all",
}
KAFKA_MAX_REQUEST_SIZE = 1_048_576  # the producer's default
# Mirrorline's defaults for the writer's producer (Java names), below the user's.
DEFAULT_PRODUCER_SETTINGS: Mapping[str, str] = {
    "linger.ms": "5",
    "batch.size": "1000000",
    "compression.type": "none",
}


@dataclass(frozen=True)
class WriteSpec:
    """What the executors need to write a flow's batches (sent to the JVM as JSON)."""

    flow: str
    # The target producer's settings, Java names (may hold secrets: never logged).
    producer_settings: Mapping[str, str]
    # The source consumer's settings, Java names (the same care).
    source_settings: Mapping[str, str]
    remote_topics: Mapping[str, str]  # source topic -> topic on the target
    offset_lag_max: int  # used on the driver, to choose offset syncs from the runs
    # Set for policies that cannot see loops from topic names (see `provenance`).
    provenance: Provenance | None = None
    # errors.tolerance = all: skip (and dead-letter) records the target refuses.
    tolerate_refusals: bool = False
    dead_letter_topic: str | None = None
    exactly_once: ExactlyOnceSpec | None = None
    tasks_max: int | None = None  # most tasks of a batch; None: no bound but `task_slots`
    # The tasks one executor runs at once: a batch has at most that many per executor.
    task_slots: int = 0
    # Most source partitions one executor writes at once. At-least-once tasks share the
    # executor's producer, which gets room for each one's batches (`ProducerPool.forPartitions`).
    partitions_per_executor: int = 1
    # Remote topic -> its max.message.bytes; larger records are refused before sending.
    size_limits: Mapping[str, int] = field(default_factory=dict)
    # The flow's single message transforms (`TransformChain.as_json`); None: copy as is.
    transforms: Mapping[str, Any] | None = None

    def to_json(self) -> str:
        eos = self.exactly_once
        return json.dumps(
            {
                "flow": self.flow,
                "producer": producer_settings(self.producer_settings, self.size_limits),
                "source": dict(self.source_settings),
                "tasks_max": self.tasks_max or 0,
                "task_slots": self.task_slots,
                "partitions_per_executor": self.partitions_per_executor,
                "remote_topics": dict(self.remote_topics),
                "provenance": None
                if self.provenance is None
                else {
                    "source_cluster_id": self.provenance.source_cluster_id,
                    "target_cluster_id": self.provenance.target_cluster_id,
                    "by_cluster": self.provenance.by_cluster,
                },
                "tolerate_refusals": self.tolerate_refusals,
                "dead_letter_topic": self.dead_letter_topic,
                "size_limits": dict(self.size_limits),
                "transforms": self.transforms,
                "exactly_once": None
                if eos is None
                else {
                    "progress_topic": eos.progress_topic,
                    "position_group": eos.position_group,
                    "consumer": dict(eos.consumer_settings),
                },
            }
        )


@dataclass(frozen=True)
class PartitionResult:
    """What one task wrote for one source partition of a batch."""

    topic: str  # source topic
    partition: int
    records: int  # written to the remote topic
    filtered: int  # not written: provenance says the target had them before
    skipped: int  # not written: an earlier attempt already committed them (exactly-once)
    refused: int  # refused by the target (errors.tolerance = all)
    dead_lettered: int  # of those, written to the dead-letter topic
    refusals: tuple[str, ...]  # descriptions of the first few refusals
    first_seen: int  # source offset of the first record the task read
    next_offset: int  # source offset after the last record the task read
    bytes: int  # keys and values written
    first_offset: int | None  # source offsets of the first and last record written
    last_offset: int | None
    first_target_offset: int | None  # and where they were written on the target
    last_target_offset: int | None
    min_timestamp: int | None  # the oldest original timestamp written (epoch ms)
    max_age_ms: int  # how old that record was when the task finished
    syncs: tuple[tuple[int, int], ...]  # (upstream, downstream) offset syncs, in order
    # Replication latency of the records written: acknowledgement time minus original
    # timestamp, over the `latency_count` records that have a timestamp.
    latency_count: int = 0
    latency_sum_ms: int = 0
    latency_min_ms: int = 0
    latency_max_ms: int = 0
    # Not written to the remote topic because of the flow's transforms: dropped (a
    # filter), or routed to another topic or partition (written there). Left out of
    # the offset mapping: translation treats them as it treats source gaps.
    dropped: int = 0
    routed: int = 0

    @property
    def source_partition(self) -> tuple[str, int]:
        return self.topic, self.partition


def write_batch(frame, spec: WriteSpec, job_group: str) -> list[PartitionResult]:
    """Write the batch's records on the executors; one result per (task, source partition).

    The batch's Spark job runs in `job_group`: `cancel_batch(spark, job_group)`
    stops its tasks at once, for a batch the driver abandons.
    """
    jvm = frame.sparkSession.sparkContext._jvm
    answer = getattr(jvm, WRITER_CLASS).write(frame._jdf, spec.to_json(), job_group)
    return [partition_result(row, spec.offset_lag_max) for row in json.loads(answer)]


def cancel_batch(spark, job_group: str) -> None:
    """Cancel a running batch's tasks; they drop whatever their producers still hold."""
    spark.sparkContext.cancelJobGroup(job_group)


def producer_settings(
    settings: Mapping[str, str], size_limits: Mapping[str, int] | None = None
) -> dict[str, str]:
    """The user's producer settings with Mirrorline's defaults and requirements.

    Record batches are kept no larger than any remote topic accepts: the broker
    refuses a whole batch over a topic's `max.message.bytes`, not one record.
    And a record any remote topic accepts is not refused by the producer
    itself: unless the user set `max.request.size`, it is raised from Kafka's
    1 MiB to the largest `max.message.bytes` (a topic that takes 5 MiB records
    on the source takes them on the target too, its configs being copied).
    """
    merged = {**DEFAULT_PRODUCER_SETTINGS, **settings, **REQUIRED_PRODUCER_SETTINGS}
    if size_limits:
        merged["batch.size"] = str(max(1, min(int(merged["batch.size"]), *size_limits.values())))
        if "max.request.size" not in settings:
            largest = max(size_limits.values())
            merged["max.request.size"] = str(max(KAFKA_MAX_REQUEST_SIZE, largest))
    return merged


def partition_result(row: Mapping, lag_max: int) -> PartitionResult:
    """One summary of the writer's JSON; its exact offset mapping becomes offset syncs."""
    plain = {name: row[name] for name in _PLAIN if name in row}
    runs = [(int(s), int(t), int(n)) for s, t, n in row["runs"]]
    return PartitionResult(
        **plain,
        refusals=tuple(row["refusals"]),
        syncs=tuple(sync_points_of_runs(runs, lag_max)),
    )


# The fields of a PartitionResult that the writer's JSON holds as they are.
_PLAIN = {f.name for f in fields(PartitionResult)} - {"refusals", "syncs"}
