"""Verifying one flow: its progress and runs, the partitions' ranges, the comparison.

The partitions verified are those of the source topics the flow replicates
now (its topic lists as changed at run time), narrowed by `--topics`. The
order of reads makes a running flow safe to verify: the progress is read
first, then the runs, which the flow writes before its progress (exactly-once
tasks write the last batch's runs with their progress: those are added from
the progress records). So every offset below the progress that was read has
its runs. Then each source partition in the range is compared with its copy,
one partition at a time, by two readers per side taking turns, so that the
next partition is fetched while one is compared.

Where the flow took over from MirrorMaker 2, MM2's committed offsets on the
target tell how far its copy went (`ranges`). A flow whose transforms change
records cannot be compared byte for byte: `VerifyRefused` is raised before
anything is read.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from confluent_kafka import Consumer, TopicPartition

from mirrorline.config.model import FlowConfig
from mirrorline.control.control_store import ControlStore
from mirrorline.control.offset_runs import read_runs
from mirrorline.control.translation import Run, TranslationStore
from mirrorline.engine.progress import ProgressStore, SourcePartition
from mirrorline.filters import FilterPatternError, TopicFilter
from mirrorline.kafka import ClusterClients, KafkaOperationError, partition_offsets
from mirrorline.operations.positions import replicated_partitions
from mirrorline.predecessor.mm2_state import committed_offsets, offsets_topic_of
from mirrorline.verification.compare import SLACK, Record, compare_partition, target_span
from mirrorline.verification.ranges import PartitionPlan, plan_partition
from mirrorline.verification.reading import PartitionReader
from mirrorline.verification.report import PartitionReport, VerifyReport

_NAME = re.compile(r"[A-Za-z0-9._-]+")  # an entry that reads as a topic name, not a pattern


class VerifyRefused(ValueError):
    """The verification cannot be done as asked (a usage or configuration problem)."""


@dataclass(frozen=True)
class Window:
    """The times asked for (epoch ms) and how they were written."""

    since_ms: int | None = None
    until_ms: int | None = None
    since_text: str | None = None
    until_text: str | None = None


class Progress(Protocol):
    """What a verification tells while it reads: the total offsets, then each step."""

    def start(self, total: int) -> None: ...

    def advance(self, offsets: int) -> None: ...


def refuse_transforms(flow: FlowConfig) -> None:
    """`VerifyRefused` when the flow's transforms (or header converter) change records."""
    chain = flow.transforms
    if not chain.changes_records:
        return
    named = ", ".join(f"{t.name} ({t.plugin.class_name})" for t in chain.transforms)
    what = f"transforms {named}" if named else f"header converter {chain.header_converter}"
    raise VerifyRefused(
        f"flow {flow.name} changes records with its {what}: its copy cannot be compared "
        "byte for byte with the source, so verify does not compare it"
    )


def select_topics(
    flow: FlowConfig, partitions: Sequence[SourcePartition], topics: str | None
) -> list[SourcePartition]:
    """The partitions of the topics named by `--topics` (names or regular expressions,
    comma-separated, as the flow's topic lists); `VerifyRefused` for a name the flow does
    not replicate."""
    if not topics:
        return list(partitions)
    entries = tuple(e.strip() for e in topics.split(",") if e.strip())
    try:
        chosen = TopicFilter(include=entries)
    except FilterPatternError as exc:
        raise VerifyRefused(f"--topics: {exc}") from None
    names = {t for t, _ in partitions}
    unknown = [e for e in entries if _NAME.fullmatch(e) and e not in names]
    if unknown:
        raise VerifyRefused(f"--topics: flow {flow.name} replicates no topic {', '.join(unknown)}")
    selected = [tp for tp in partitions if chosen.matches(tp[0])]
    if not selected:
        raise VerifyRefused(f"--topics {topics}: no topic the flow {flow.name} replicates matches")
    return selected


def verify_flow(
    flow: FlowConfig,
    source: ClusterClients,
    target: ClusterClients,
    *,
    topics: str | None = None,
    window: Window = Window(),
    progress: Progress | None = None,
    timeout: float = 30.0,
) -> VerifyReport:
    """Verify the copy `flow` made of its source topics (see the package docstring)."""
    refuse_transforms(flow)
    report = VerifyReport(flow.name, window.since_text, window.until_text, int(time.time() * 1000))
    target_id = _cluster_id(target, timeout)
    next_offsets, runs = _mapping(flow, target, timeout)
    partitions = select_topics(flow, _replicated_now(flow, source, target, timeout), topics)
    plans = _plans(flow, source, target, partitions, next_offsets, runs, window, timeout)
    if progress is not None:
        progress.start(sum(p.end - p.start for p in plans))
    ends = _target_ends(flow, target, plans, timeout)
    # Two readers per side: the next partition is fetched while this one is compared.
    readers = [
        (
            PartitionReader(
                source.consumer_settings, f"source cluster {source.alias}", timeout=timeout
            ),
            PartitionReader(
                target.consumer_settings, f"target cluster {target.alias}", timeout=timeout
            ),
        )
        for _ in range(2)
    ]
    marker = f"{target_id}:".encode()
    on_batch = progress.advance if progress is not None else None
    try:
        opened = [_open(plans[0], readers[0], ends, marker, on_batch)] if plans else []
        for index, plan in enumerate(plans):
            if index + 1 < len(plans):
                ahead = readers[(index + 1) % 2]
                opened.append(_open(plans[index + 1], ahead, ends, marker, on_batch))
            source_batches, target_batches, target_end = opened[index]
            report.partitions.append(
                compare_partition(
                    _report(plan),
                    plan.runs,
                    source_batches,
                    target_batches,
                    target_end,
                    plan.predecessor_end,
                )
            )
    finally:
        for pair in readers:
            for reader in pair:
                reader.close()
    report.finished_ms = int(time.time() * 1000)
    return report


def _replicated_now(
    flow: FlowConfig, source: ClusterClients, target: ClusterClients, timeout: float
) -> list[SourcePartition]:
    """The source partitions the flow replicates now: its file's topic lists with the
    changes made at run time (`mirrorline topics`), as its drivers apply them."""
    store = ControlStore(target)
    try:
        effective = store.read(flow.name, timeout).effective(flow)
    finally:
        store.close()
    return replicated_partitions(effective, source, timeout)


def _mapping(
    flow: FlowConfig, target: ClusterClients, timeout: float
) -> tuple[dict[SourcePartition, int], TranslationStore]:
    """The flow's saved progress, then its runs (written before the progress, so every
    offset below the progress read has its runs; an exactly-once task's last runs are
    in its progress record)."""
    store = ProgressStore(flow.name, target)
    try:
        saved = store.load_state(timeout, missing_ok=True)
    finally:
        store.close()
    runs = TranslationStore()
    runs.load(read_runs(target.consumer_settings, flow.name, missing_ok=True, timeout=timeout))
    runs.load([(p, Run(*run)) for p, last in saved.last_runs.items() for run in last])
    return saved.next_offsets, runs


Opened = tuple[Iterator[list[Record]], Iterator[list[Record]], int]


def _open(
    plan: PartitionPlan,
    readers: tuple[PartitionReader, PartitionReader],
    target_ends: Mapping[SourcePartition, int],
    marker: bytes,
    on_batch: Callable[[int], None] | None,
) -> Opened:
    """Start reading both sides of `plan`: the source range, and the target span the runs
    map it to (plus `SLACK`, as far as the remote partition goes); the span's end."""
    source_reader, target_reader = readers
    source = source_reader.open(
        plan.topic, plan.partition, plan.start, plan.end, loop_marker=marker, on_batch=on_batch
    )
    span = target_span(plan.runs, plan.start, plan.end)
    low, high = span if span is not None else (0, 0)
    available = target_ends.get((plan.remote_topic, plan.partition), 0)
    target = target_reader.open(
        plan.remote_topic, plan.partition, low, min(high + SLACK, available)
    )
    return source, target, high


def _report(plan: PartitionPlan) -> PartitionReport:
    return PartitionReport(
        plan.topic,
        plan.partition,
        plan.remote_topic,
        plan.start,
        plan.end,
        not_yet_copied=plan.not_yet_copied,
        not_covered=plan.not_covered,
    )


def _plans(
    flow: FlowConfig,
    source: ClusterClients,
    target: ClusterClients,
    partitions: Sequence[SourcePartition],
    next_offsets: Mapping[SourcePartition, int],
    runs: TranslationStore,
    window: Window,
    timeout: float,
) -> list[PartitionPlan]:
    what = f"source cluster {source.alias}"
    starts = partition_offsets(source.admin, partitions, "earliest", timeout=timeout, what=what)
    ends = partition_offsets(source.admin, partitions, "latest", timeout=timeout, what=what)
    mm2 = (
        committed_offsets(
            target.consumer_settings,
            offsets_topic_of(flow.source, flow.value("offset.storage.topic")),
            flow.source,
            timeout=timeout,
        )
        or {}
    )
    since = _offsets_for_times(source, partitions, window.since_ms, ends, timeout)
    until = _offsets_for_times(source, partitions, window.until_ms, ends, timeout)
    return [
        plan_partition(
            t,
            p,
            flow.remote_topic(t),
            runs.runs((t, p)),
            progress=next_offsets.get((t, p)),
            log_start=starts[(t, p)],
            log_end=ends[(t, p)],
            since=since.get((t, p)),
            until=until.get((t, p)),
            predecessor_end=mm2[(t, p)] + 1 if (t, p) in mm2 else 0,
        )
        for t, p in partitions
        if (t, p) in starts
    ]


def _offsets_for_times(
    source: ClusterClients,
    partitions: Sequence[SourcePartition],
    when_ms: int | None,
    ends: Mapping[SourcePartition, int],
    timeout: float,
) -> dict[SourcePartition, int]:
    """Each partition's first offset at or after `when_ms` (its end when there is none)."""
    if when_ms is None or not partitions:
        return {}
    consumer = Consumer(
        {**source.consumer_settings, "group.id": "mirrorline-verify", "enable.auto.commit": False}
    )
    try:
        found = consumer.offsets_for_times(
            [TopicPartition(t, p, when_ms) for t, p in partitions], timeout=timeout
        )
    except Exception as exc:  # noqa: BLE001 - librdkafka raises KafkaException here
        raise KafkaOperationError(
            f"source cluster {source.alias}: cannot find offsets for a time: {exc}"
        ) from None
    finally:
        consumer.close()
    return {
        (tp.topic, tp.partition): tp.offset if tp.offset >= 0 else ends[(tp.topic, tp.partition)]
        for tp in found
    }


def _target_ends(
    flow: FlowConfig,
    target: ClusterClients,
    plans: Sequence[PartitionPlan],
    timeout: float,
) -> dict[SourcePartition, int]:
    """The log end of each remote partition that exists (a missing one holds nothing)."""
    try:
        existing = target.admin.list_topics(timeout=timeout).topics
    except Exception as exc:  # noqa: BLE001 - librdkafka raises KafkaException here
        raise KafkaOperationError(f"target cluster {target.alias} does not answer: {exc}") from None
    wanted = [
        (p.remote_topic, p.partition)
        for p in plans
        if p.remote_topic in existing and p.partition in existing[p.remote_topic].partitions
    ]
    what = f"target cluster {target.alias} (flow {flow.name})"
    return partition_offsets(target.admin, wanted, "latest", timeout=timeout, what=what)


def _cluster_id(clients: ClusterClients, timeout: float) -> str:
    try:
        return str(clients.admin.list_topics(timeout=timeout).cluster_id)
    except Exception as exc:  # noqa: BLE001 - librdkafka raises KafkaException here
        raise KafkaOperationError(
            f"target cluster {clients.alias} does not answer: {exc}"
        ) from None
