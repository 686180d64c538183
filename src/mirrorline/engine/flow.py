"""One replication flow at run time: its topics, its Spark query and its progress.

The data query reads exactly the source partitions that exist on the target
(`TopicManager.ready()`), with Spark's Kafka source (`assign`), starting from the
flow's progress in the target cluster. Each micro-batch is written by the
executors (`writer.write_batches`); the driver then publishes the batch's offset
syncs and, last, the new progress. A crash anywhere in between replays at most
that batch (at-least-once). In exactly-once mode the tasks commit each
partition's progress with its records (`transactional`) and a replay skips them.

When the set of ready partitions changes (a new topic, more partitions) the query
is stopped between batches and started again on the new set. Spark's checkpoint
directory is created fresh for every start and removed after: the progress topic
is the only source of truth, so losing the directory or moving the driver is
harmless.

The flow also probes its two clusters (`health`): an unreachable cluster shows in
the status while it lasts, and a flow that failed meanwhile retries as soon as
the cluster answers. Source records deleted before the flow read them are
reported with their exact offsets (`gaps`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import shutil
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from mirrorline.control.checkpointing import Checkpointer, CheckpointStats
from mirrorline.control.offset_runs import RunLog
from mirrorline.control.remote_topics import RemoteTopicPublisher
from mirrorline.control.topics import TopicManager
from mirrorline.control.translation import TranslationStore
from mirrorline.engine.batch_writer import write_batch
from mirrorline.engine.context import FlowContext
from mirrorline.engine.gaps import GapFinder, GapLedger, RecordGap
from mirrorline.engine.health import ClusterHealth, ClusterVerdict
from mirrorline.engine.leadership import FlowLeadership
from mirrorline.engine.offset_syncs import OffsetSyncPublisher
from mirrorline.engine.progress import PROGRESS_TOPIC, ProgressStore, SourcePartition
from mirrorline.engine.provenance import Provenance
from mirrorline.engine.transactional import position_group
from mirrorline.engine.writer import ExactlyOnceSpec, WriteSpec, batch_size_within
from mirrorline.formats import OffsetSync
from mirrorline.kafka import ensure_topic

log = logging.getLogger(__name__)

# How often Spark looks for new records when there are none (each look lists offsets).
TRIGGER_INTERVAL = "200 milliseconds"
EARLIEST = -2  # Spark's symbolic offset for the start of a partition
# How many descriptions of refused records a flow's status keeps.
RECENT_REFUSALS = 5
# How often idle partitions are checked for records deleted before they were read.
GAP_CHECK_S = 10.0
# Mirrorline's own requests outside the data path: short, so that the flow's thread moves on.
_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class BatchStats:
    batch_id: int
    records: int
    bytes: int
    partitions: int
    max_age_ms: int
    duration_ms: int
    finished_at_ms: int


@dataclass(frozen=True)
class FlowStatus:
    """What an operator needs to know about a flow, with the reason when it is not well."""

    flow: str
    # starting | running | standby | degraded (a cluster does not answer) | failed | stopped
    state: str
    reason: str = ""
    topics: tuple[str, ...] = ()
    partitions: int = 0
    records: int = 0
    bytes: int = 0
    problems: tuple[str, ...] = ()
    last_batch: BatchStats | None = None
    exactly_once: bool = False
    clusters: tuple[ClusterVerdict, ...] = ()  # latest verdict on source and target
    gaps: tuple[RecordGap, ...] = ()  # the latest source records lost before replication
    # Running totals since the driver started, by name, as metrics exporters read them.
    counters: Mapping[str, int] = field(default_factory=dict)
    # The latest records the target refused (errors.tolerance = all), newest last.
    refusals: tuple[str, ...] = ()
    checkpoints: CheckpointStats | None = None  # None when emit.checkpoints is disabled
    translation_runs: int = 0  # runs in the translation store (control.translation)
    translation_load_ms: int | None = None  # how long the store took to load at start


@dataclass
class _Due:
    """A control loop's schedule: runs at start, then every `interval` seconds."""

    interval: float | None
    next_at: float = 0.0

    def take(self, now: float) -> bool:
        if now < self.next_at:
            return False
        self.next_at = now + self.interval if self.interval is not None else math.inf
        return True


@dataclass
class _Totals:
    records: int = 0
    bytes: int = 0
    last_batch: BatchStats | None = None
    # records refused by the target / of those written to the dead-letter topic /
    # records a replayed exactly-once batch found already committed
    refused: int = 0
    dead_lettered: int = 0
    skipped_committed: int = 0
    refusals: tuple[str, ...] = ()

    def counters(self) -> dict[str, int]:
        return {
            "records_replicated": self.records,
            "bytes_replicated": self.bytes,
            "records_refused": self.refused,
            "records_dead_lettered": self.dead_lettered,
            "records_already_committed": self.skipped_committed,
        }


class FlowRunner:
    """Runs one flow on a Spark session; `tick()` drives its control loops."""

    RESTART_BACKOFF_S = (2.0, 5.0, 10.0, 30.0, 60.0)
    DRAIN_S = 30.0

    def __init__(
        self, context: FlowContext, spark, work_dir: Path, leadership: FlowLeadership
    ) -> None:
        self.context = context
        self.flow = flow = context.flow
        self.leadership = leadership
        self._spark = spark
        self._work_dir = work_dir
        settings = context.settings
        intervals = settings.intervals
        self.topics = TopicManager(context)
        self.progress = ProgressStore(
            flow.name, context.target, replication_factor=settings.replication_factor
        )
        self.syncs = OffsetSyncPublisher(
            flow.name,
            flow.offset_syncs_topic,
            context.offset_syncs,
            replication_factor=settings.offset_syncs_replication_factor,
        )
        self.runs = RunLog(
            flow.name, context.target, replication_factor=settings.replication_factor
        )
        self.remote_topics = RemoteTopicPublisher(context)
        self.translation = TranslationStore()
        self._translation_load_ms: int | None = None
        checkpoints = intervals.emit_checkpoints
        self.checkpointer = Checkpointer(context) if checkpoints is not None else None
        self._groups_refresh = _Due(intervals.refresh_groups)
        self._checkpoints_due = _Due(checkpoints)
        group_sync = intervals.sync_group_offsets
        self._group_sync = _Due(group_sync) if group_sync is not None else None
        self.health = ClusterHealth.for_flow(context, self.progress.topic)
        self.gaps = GapFinder(flow.name, context.source)
        self.lost = GapLedger(flow.name)
        self._lock = threading.Lock()
        # Held while a batch writes and while idle partitions are checked for gaps,
        # so that a check never counts records a running batch is replicating.
        self._progress_lock = threading.Lock()
        # A batch in progress holds `_batch_idle` clear; stopping sets `_draining`
        # so that no new batch starts writing (see `_stop_query`).
        self._batch_gate = threading.Lock()
        self._batch_idle = threading.Event()
        self._batch_idle.set()
        self._draining = False
        self._state = "starting"
        self._reason = ""
        self._totals = _Totals()
        self._next_offsets: dict[SourcePartition, int] = {}
        # Partitions the running query reads; None until the first decision.
        self._assigned: dict[str, int] | None = None
        # The last error of each control loop, until that loop succeeds again.
        self._loop_errors: dict[str, str] = {}
        self._query = None
        self._checkpoint: Path | None = None
        self._refresh = _Due(intervals.refresh_topics)
        self._config_sync = _Due(intervals.sync_topic_configs)
        self._emit_syncs = settings.emit_offset_syncs
        self._exactly_once = settings.exactly_once
        self._dead_letter_topic = settings.dead_letter_topic
        self._prepared = False
        self._provenance: Provenance | None = None
        self._retry_at: float | None = None
        self._failures = 0
        # The period of leadership the flow acts on (see `_leads`); None: standing by.
        self._term: int | None = None
        # Set when the flow failed while a cluster did not answer: retried on its return.
        self._failed_in_outage = False
        self._gap_check = _Due(GAP_CHECK_S)

    # -- lifecycle -------------------------------------------------------------------

    def tick(self) -> None:
        """Advance the flow: start it, run due control loops, keep the query right.

        Called every fraction of a second by the driver; the first call starts the
        flow. Any failure puts the flow in `failed` with the reason, and the next
        attempt follows after a backoff, or as soon as the cluster answers again
        when it failed during an outage.
        """
        now = time.monotonic()
        if not self._leads():
            return
        self.health.start()
        if self._retry_at is not None:
            down = bool(self.health.unreachable())
            self._failed_in_outage |= down
            if not _retry_due(now, self._retry_at, self._failed_in_outage, down):
                return
        self._retry_at = None
        self._failed_in_outage = False
        try:
            if not self._prepared:
                self.progress.ensure_topic()
                self.progress.fence()  # before reading: no older driver moves it after
                if self._emit_syncs:
                    self.syncs.ensure_topic()
                if self._dead_letter_topic:
                    self._ensure_dead_letter_topic(self._dead_letter_topic)
                saved = self.progress.load_state()
                if self._emit_syncs:
                    # Syncs of the last exactly-once batches, in case their driver
                    # died before publishing them (publishing twice is harmless).
                    self.syncs.publish(
                        OffsetSync(t, p, u, d)
                        for (t, p), syncs in saved.last_syncs.items()
                        for u, d in syncs
                    )
                self._load_translation(saved.last_syncs)
                if self.checkpointer is not None:
                    self.checkpointer.forget()
                self._next_offsets = saved.next_offsets
                self._provenance = self._provenance_for_policy()
                self._prepared = True
            # Loops wait while a cluster does not answer, rather than each failing
            # after its timeout (the status already says why); they run on its return.
            reachable = not self.health.unreachable()
            if reachable and self._refresh.take(now):
                self._guard("topic refresh", self._refresh_topics)
            if reachable and self._config_sync.take(now):
                self._guard("topic config sync", self.topics.sync_configs)
            self._check_query()
            if reachable and self._query is not None and self._gap_check.take(now):
                self._guard("source gap check", lambda: self._skip_deleted(self._assigned or {}))
            ready = self.topics.ready()
            if ready != self._assigned:
                self._restart(ready)
            # Once the query runs on its partitions: checkpoints translate through them.
            if reachable and self.checkpointer is not None and self._assigned is not None:
                self._run_checkpoint_loops(now)
        except Exception as exc:  # noqa: BLE001 - reported in the status, retried later
            self._fail(_summarise(str(exc)), now)

    def stop(self) -> None:
        """Stop between batches if possible; an interrupted batch is replayed on start."""
        self._stop_query()
        self.leadership.close()  # after the query: the next leader starts once this one stopped
        self.progress.close()
        self.runs.close()
        self.remote_topics.close()
        if self.checkpointer is not None:
            self.checkpointer.close()
        self.syncs.close()
        self.health.close()
        self.context.close()
        self._set_state("stopped", "stopped by the operator")

    def status(self) -> FlowStatus:
        clusters = self.health.verdicts()
        with self._lock:
            totals = self._totals
            state, reason = _with_outages(self._state, self._reason, clusters)
            return FlowStatus(
                flow=self.flow.name,
                state=state,
                reason=reason,
                topics=tuple(sorted(self._assigned or ())),
                partitions=sum((self._assigned or {}).values()),
                records=totals.records,
                bytes=totals.bytes,
                problems=tuple(str(p) for p in self.topics.problems())
                + tuple(f"{loop} failed: {error}" for loop, error in self._loop_errors.items()),
                last_batch=totals.last_batch,
                exactly_once=self._exactly_once,
                clusters=clusters,
                gaps=self.lost.recent(),
                counters={**totals.counters(), **self.lost.counters()},
                refusals=totals.refusals,
                checkpoints=self.checkpointer.stats() if self.checkpointer is not None else None,
                translation_runs=self.translation.run_count(),
                translation_load_ms=self._translation_load_ms,
            )

    def _leads(self) -> bool:
        """Follow this driver's leadership of the flow; True while it leads.

        Losing it stops the query between batches (`_on_batch` already refuses
        new ones) and stands by: no query, no control loops. Gaining it reloads
        the progress, which the previous leader moved, and starts again.
        """
        self.leadership.start()
        term = self.leadership.term()
        if term != self._term:
            self._stop_query()
            self._assigned = None
            self._term = term
            if term is not None:
                self._prepared = False
                self._retry_at = None
                self._set_state("starting", "this driver leads the flow now")
        if term is None:
            self._set_state("standby", self.leadership.describe())
        return term is not None

    # -- the query -------------------------------------------------------------------

    def _restart(self, ready: Mapping[str, int]) -> None:
        self._stop_query()
        self._assigned = {}
        if not ready:
            self._set_state("running", "no source topic matches the flow's filter yet")
            return
        self._guard("source gap check", lambda: self._skip_deleted(ready))
        starting = self._starting_offsets(ready)
        self._checkpoint = (
            self._work_dir / "checkpoints" / self.flow.name.replace(">", "") / uuid.uuid4().hex
        )
        settings = self.context.settings
        spec = WriteSpec(
            flow=self.flow.name,
            producer_settings=dict(self.context.target.producer_settings),
            remote_topics={t: self.flow.remote_topic(t) for t in ready},
            offset_lag_max=settings.offset_lag_max,
            provenance=self._provenance,
            tolerate_refusals=settings.tolerate_refusals,
            dead_letter_topic=settings.dead_letter_topic,
            exactly_once=self._exactly_once_spec(),
        )
        reader = self._spark.readStream.format("kafka")
        for key, value in self.context.spark_source_options().items():
            reader = reader.option(key, value)
        per_batch = settings.max_poll_records * sum(ready.values())
        frame = (
            reader.option("assign", json.dumps({t: list(range(n)) for t, n in ready.items()}))
            .option("startingOffsets", json.dumps(starting))
            .option("failOnDataLoss", "false")
            .option("includeHeaders", "true")
            .option("maxOffsetsPerTrigger", str(per_batch))
            .load()
        )
        if settings.tasks_max is not None:
            frame = frame.coalesce(settings.tasks_max)
        self._query = (
            frame.writeStream.queryName(f"mirrorline {self.flow.name} {uuid.uuid4().hex[:6]}")
            .foreachBatch(functools.partial(self._on_batch, spec))
            .option("checkpointLocation", str(self._checkpoint))
            .trigger(processingTime=TRIGGER_INTERVAL)
            .start()
        )
        self._assigned = dict(ready)  # only once the query runs, so a failed start is retried
        self._set_state("running", "")
        log.info(
            "flow %s replicating %d partitions of %s",
            self.flow.name,
            sum(ready.values()),
            ", ".join(sorted(ready)),
        )

    def _on_batch(self, spec: WriteSpec, frame, batch_id: int) -> None:
        with self._batch_gate:
            if self._draining or self.leadership.term() != self._term:
                # Stopping, or no longer the leader: the next start replays it
                # (progress is unchanged).
                return
            self._batch_idle.clear()
        try:
            with self._progress_lock:
                self._write_batch(spec, frame, batch_id)
        finally:
            self._batch_idle.set()

    def _write_batch(self, spec: WriteSpec, frame, batch_id: int) -> None:
        started = time.monotonic()
        # The target topics' size limits as last seen: they can change at any time.
        limits = self.topics.size_limits()
        spec = dataclasses.replace(
            spec,
            size_limits=limits,
            producer_settings=batch_size_within(spec.producer_settings, limits),
        )
        rows = write_batch(frame, spec)
        if not rows:
            return
        if self._emit_syncs:
            self.syncs.publish(
                OffsetSync(r.topic, r.partition, upstream, downstream)
                for r in rows
                for upstream, downstream in r.syncs
            )
        for r in rows:
            self.translation.add_syncs((r.topic, r.partition), r.syncs)
        # Before the progress: runs are never behind it (a replay cuts what is ahead).
        self.runs.persist(self.translation.drain_changes())
        advanced: dict[SourcePartition, int] = {}
        first_seen: dict[SourcePartition, int] = {}
        for r in rows:
            key = (r.topic, r.partition)
            advanced[key] = max(advanced.get(key, 0), r.next_offset)
            first_seen[key] = min(first_seen.get(key, r.first_seen), r.first_seen)
        with self._lock:
            expected = dict(self._next_offsets)
        lost = self.gaps.after_batch(expected, first_seen)
        if not self._exactly_once:  # exactly-once tasks committed their progress themselves
            self.progress.save(advanced)
        self.lost.record(lost)  # once saved: a replayed batch reports nothing twice
        refusals = [text for r in rows for text in r.refusals]
        for text in refusals:
            log.warning("flow %s skipped a refused record: %s", self.flow.name, text)
        stats = BatchStats(
            batch_id=batch_id,
            records=sum(r.records for r in rows),
            bytes=sum(r.bytes for r in rows),
            partitions=len(advanced),
            max_age_ms=max(r.max_age_ms for r in rows),
            duration_ms=int((time.monotonic() - started) * 1000),
            finished_at_ms=int(time.time() * 1000),
        )
        with self._lock:
            self._next_offsets.update(advanced)
            self._totals.records += stats.records
            self._totals.bytes += stats.bytes
            self._totals.last_batch = stats
            self._totals.refused += sum(r.refused for r in rows)
            self._totals.dead_lettered += sum(r.dead_lettered for r in rows)
            self._totals.skipped_committed += sum(r.skipped for r in rows)
            if refusals:
                self._totals.refusals = (self._totals.refusals + tuple(refusals))[-RECENT_REFUSALS:]
            self._failures = 0

    def _starting_offsets(self, ready: Mapping[str, int]) -> dict[str, dict[str, int]]:
        """Progress where there is some; `start.position` for every other partition.

        As in MM2, a partition without progress (a new flow, topic or partition)
        starts at the start position. Positions other than `earliest` are resolved
        to offsets and saved at once, so a restart before the partition's first
        record never moves its start.
        """
        fresh = [
            (t, p) for t, n in ready.items() for p in range(n) if (t, p) not in self._next_offsets
        ]
        if fresh:
            resolved = self._resolve_start(fresh)
            self.progress.save({tp: offset for tp, offset in resolved.items() if offset >= 0})
            self._next_offsets.update(resolved)
        return {t: {str(p): self._next_offsets[(t, p)] for p in range(n)} for t, n in ready.items()}

    def _resolve_start(self, partitions: list[SourcePartition]) -> dict[SourcePartition, int]:
        position = self.flow.start_position
        if position.kind == "earliest":
            return {tp: EARLIEST for tp in partitions}
        if position.kind == "offsets":
            explicit = {(o.topic, o.partition): o.offset for o in position.offsets}
            return {tp: explicit.get(tp, EARLIEST) for tp in partitions}
        consumer = Consumer(
            {
                **self.context.source.consumer_settings,
                "group.id": "mirrorline-start",
                "enable.auto.commit": False,
            }
        )
        try:
            if position.kind == "latest":
                return {
                    (t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=30)[1]
                    for t, p in partitions
                }
            # A time: the first record at or after it, else the end of the partition.
            found = consumer.offsets_for_times(
                [TopicPartition(t, p, position.timestamp_ms) for t, p in partitions], timeout=30
            )
            return {
                (tp.topic, tp.partition): tp.offset
                if tp.offset >= 0
                else consumer.get_watermark_offsets(
                    TopicPartition(tp.topic, tp.partition), timeout=30
                )[1]
                for tp in found
            }
        finally:
            consumer.close()

    def _refresh_topics(self) -> None:
        """Find and create remote topics, then publish the flow's topic pairs.

        Only after a successful refresh: before it, no topic is known and the
        published pairs would all be removed.
        """
        self.topics.refresh()
        self.remote_topics.publish(self.topics.ready())

    def _load_translation(
        self, last_syncs: Mapping[SourcePartition, list[tuple[int, int]]]
    ) -> None:
        """Rebuild the translation store from the runs topic (a bounded read, see offset_runs).

        The syncs saved with exactly-once progress are added in case their batch's
        driver died before it could (adding them twice is harmless).
        """
        started = time.monotonic()
        self.runs.ensure_topic()
        store = TranslationStore()
        store.load(self.runs.load())
        for partition, syncs in last_syncs.items():
            store.add_syncs(partition, syncs)
        self.runs.persist(store.drain_changes())
        self.translation = store
        self._translation_load_ms = int((time.monotonic() - started) * 1000)
        log.info(
            "flow %s: translation store loaded %d runs in %d ms",
            self.flow.name,
            store.run_count(),
            self._translation_load_ms,
        )

    def _run_checkpoint_loops(self, now: float) -> None:
        """Groups, checkpoints, group offset sync and run pruning, each when due."""
        if self._groups_refresh.take(now):
            self._guard("consumer group refresh", self.checkpointer.refresh_groups)
        if self._checkpoints_due.take(now):
            self._guard("checkpoints", self._emit_checkpoints)
        if self._group_sync is not None and self._group_sync.take(now):
            self._guard("group offset sync", self.checkpointer.sync_group_offsets)

    def _emit_checkpoints(self) -> None:
        replicated = dict(self._assigned or {})
        with self._lock:
            read_until = dict(self._next_offsets)
        self.checkpointer.emit(self.translation, replicated, read_until)
        # Runs whose source records are gone can no longer be needed.
        partitions = [p for p in self.translation.partitions() if p[0] in replicated]
        if partitions and self._progress_lock.acquire(blocking=False):
            try:
                self.translation.prune(self.gaps.log_starts(partitions))
                self.runs.persist(self.translation.drain_changes(), timeout=_TIMEOUT_S)
            finally:
                self._progress_lock.release()

    def _exactly_once_spec(self) -> ExactlyOnceSpec | None:
        if not self._exactly_once:
            return None
        return ExactlyOnceSpec(
            progress_topic=PROGRESS_TOPIC,
            position_group=position_group(self.flow.name),
            consumer_settings=dict(self.context.target.consumer_settings),
        )

    def _ensure_dead_letter_topic(self, topic: str) -> None:
        ensure_topic(
            self.context.target.admin,
            topic,
            partitions=1,
            replication_factor=self.context.settings.dead_letter_replication_factor,
        )

    def _provenance_for_policy(self) -> Provenance | None:
        """Provenance headers, for policies whose topic names cannot reveal loops."""
        if self.flow.policy.detects_cycles_by_name:
            return None
        return Provenance(
            source_cluster_id=self.topics.source_cluster_id(),
            target_cluster_id=self.topics.target_cluster_id(),
        )

    def _check_query(self) -> None:
        """Raise the reason if the query died (the caller schedules the retry)."""
        query = self._query
        if query is None or query.isActive:
            return
        error = query.exception()
        self._stop_query()
        self._assigned = {}
        # Start again from the committed progress: some tasks of the failed batch
        # may have committed (exactly-once), and the flow's view is reloaded anyway.
        self._prepared = False
        raise _QueryDied(_summarise(str(error)) if error is not None else "the query stopped")

    def _stop_query(self) -> None:
        """Stop the query after its in-flight batch, so a stop or restart duplicates nothing.

        A batch still running after `DRAIN_S` (a target that stopped answering) is
        abandoned; what it wrote without saving progress is replayed on the next start.
        """
        query, self._query = self._query, None
        if query is not None:
            with self._batch_gate:
                self._draining = True
            if not self._batch_idle.wait(self.DRAIN_S):
                log.warning(
                    "flow %s: abandoning a batch still running after %ss",
                    self.flow.name,
                    self.DRAIN_S,
                )
            try:
                query.stop()
            except Exception as exc:  # noqa: BLE001 - stopping must not fail the driver
                log.warning("flow %s: stopping its query: %s", self.flow.name, exc)
            finally:
                with self._batch_gate:
                    self._draining = False
        if self._checkpoint is not None:
            shutil.rmtree(self._checkpoint, ignore_errors=True)
            self._checkpoint = None

    def _skip_deleted(self, partitions: Mapping[str, int]) -> None:
        """Report records deleted below the flow's next offsets and move past them.

        Runs at query start and now and then, for partitions that have nothing
        left to read (a batch reports the gaps it reads past itself). Skipped
        while a batch runs: that batch may be replicating the very records.
        """
        if not self._progress_lock.acquire(blocking=False):
            return
        try:
            with self._lock:
                expected = {
                    (t, p): self._next_offsets[(t, p)]
                    for t, n in partitions.items()
                    for p in range(n)
                    if (t, p) in self._next_offsets
                }
            lost = self.gaps.before_log_start(expected)
            if lost:
                moved = {(g.topic, g.partition): g.end for g in lost}
                self.progress.save(moved, timeout=_TIMEOUT_S)
                with self._lock:
                    self._next_offsets.update(moved)
                self.lost.record(lost)
        finally:
            self._progress_lock.release()

    def note_failure(self, reason: str) -> None:
        """Record a failure raised outside the flow's own loops."""
        self._fail(reason, time.monotonic())

    def _fail(self, reason: str, now: float) -> None:
        backoff = self.RESTART_BACKOFF_S[min(self._failures, len(self.RESTART_BACKOFF_S) - 1)]
        self._failures += 1
        self._retry_at = now + backoff
        self._failed_in_outage = bool(self.health.unreachable())
        self._set_state("failed", f"{reason} (retrying in {backoff:.0f}s)")
        log.warning("flow %s failed: %s", self.flow.name, reason)

    # -- helpers ---------------------------------------------------------------------

    def _guard(self, loop: str, action) -> None:
        """Run one control loop; its failure is a problem in the status, not the flow's end."""
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - one loop's failure must not stop the others
            log.warning("flow %s: %s failed: %s", self.flow.name, loop, exc)
            with self._lock:
                self._loop_errors[loop] = _summarise(str(exc))
        else:
            with self._lock:
                self._loop_errors.pop(loop, None)

    def _set_state(self, state: str, reason: str) -> None:
        with self._lock:
            self._state = state
            self._reason = reason


def _retry_due(now: float, retry_at: float, failed_in_outage: bool, clusters_down: bool) -> bool:
    """Whether a failed flow tries again: at the end of its backoff, or at once when it
    failed while a cluster did not answer and every cluster answers again."""
    if clusters_down:
        return now >= retry_at
    return failed_in_outage or now >= retry_at


def _with_outages(state: str, reason: str, clusters: tuple[ClusterVerdict, ...]) -> tuple[str, str]:
    """The flow's state and reason, saying so when a cluster it needs does not answer."""
    down = "; ".join(str(v) for v in clusters if not v.reachable)
    if not down or state == "stopped":
        return state, reason
    if state == "failed":
        return state, f"{down}; retrying as soon as it answers ({reason})"
    if state == "starting":
        return state, f"{down}; the flow starts when it answers"
    return "degraded", f"{down}; replication resumes by itself when it answers"


class _QueryDied(RuntimeError):
    """The data query ended with an error; the message is the reason."""


def _summarise(error: str) -> str:
    """The useful line of a Spark/Python error: Mirrorline's own message when there is one."""
    for line in error.splitlines():
        for marker in ("DeliveryFailed: ", "KafkaOperationError: "):
            if marker in line:
                return line.split(marker, 1)[1].strip()
    first = error.strip().splitlines()[0] if error.strip() else "unknown error"
    return first[:500]
