"""Reads one target cluster's Mirrorline topics into its `TargetView`, and keeps reading.

A target cluster holds what the service reports on its incoming flows:

- `mirrorline.metrics.internal`: the flows' raw metrics, read from the start
  of the service's longest window (found by timestamp) onwards;
- the heartbeats topic (MM2's format): each flow's newest heartbeat;
- `mirrorline.metadata.internal`: which source topic each flow replicates to
  which remote topic (the truth under the identity policy), and each flow's
  last verification (`verification.summary`);
- each incoming flow's checkpoints topic (MM2's format): the checkpointed
  groups, their translated offsets and when each checkpoint was written.

One consumer without a group (nothing is committed; two services read the
same records and give the same answers) reads all of them from those
positions, then follows them. Topics that do not exist yet (no flow has
written there) are looked for again every `DISCOVERY_S` and read from their
start once they appear. A probe asks the cluster for metadata every two
seconds (`engine.health.ClusterProbe`, as a flow does), so that a cluster that
stops answering shows in the view within seconds. A partition the consumer
stops reading while it holds records (`service.stall_watch`) gets the reader a
new consumer, at the positions the old one had reached.

`catch_up()` waits until everything that was in the topics when they were
assigned has been read: `mirrorline status` reads that much and answers.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaException,
    Message,
    TopicPartition,
)

from mirrorline.admin_client import AdminClient, destroy
from mirrorline.control.remote_topics import METADATA_TOPIC, decode_metadata
from mirrorline.engine.health import ClusterProbe
from mirrorline.formats import Checkpoint, FormatError, Heartbeat
from mirrorline.kafka import KafkaOperationError, partition_offsets
from mirrorline.raw_metrics import METRICS_TOPIC, decode
from mirrorline.service.stall_watch import StallWatch
from mirrorline.service.target_view import CheckpointEntry, TargetView
from mirrorline.verification.summary import decode_summary

log = logging.getLogger(__name__)

DISCOVERY_S = 5.0
EVICT_S = 10.0
PROBE_S = 2.0
STALL_CHECK_S = 5.0
STALL_S = 20.0  # not one record read for this long, with records to read: a new consumer
_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Sources:
    """The topics of one target cluster to read, what each one is, and whose flows count."""

    heartbeats: frozenset[str]
    checkpoints: Mapping[str, str]  # checkpoints topic -> the flow it belongs to
    # The configuration's cluster aliases: flows from other clusters (as another file
    # names them) are not this deployment's, and are left out.
    aliases: frozenset[str] = frozenset()

    def counts(self, source: str) -> bool:
        return source in self.aliases

    def topics(self) -> list[str]:
        return [METRICS_TOPIC, METADATA_TOPIC, *sorted(self.heartbeats), *sorted(self.checkpoints)]


class TargetCollector:
    """Fills one `TargetView` on threads of its own (see the module)."""

    def __init__(
        self,
        alias: str,
        *,
        admin_settings: Mapping[str, Any],
        consumer_settings: Mapping[str, Any],
        sources: Sources,
        history_s: int,
    ) -> None:
        self.alias = alias
        self.view = TargetView(alias)
        self._sources = sources
        self._history_ms = history_s * 1000
        quiet = {"log_level": 0}  # unreachable clusters are reported by the probe
        self._admin = AdminClient({**admin_settings, **quiet})
        self._consumer_settings = {
            **consumer_settings,
            **quiet,
            "group.id": f"mirrorline-service-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "allow.auto.create.topics": False,
        }
        self._consumer = Consumer(self._consumer_settings)
        self._probe = ClusterProbe(alias, "target", admin_settings, METRICS_TOPIC)
        self._assigned: set[str] = set()
        self._ends: dict[tuple[str, int], int] = {}  # end offsets when assigned: catch-up
        # Where each partition's reading started (an offset): its position until it
        # has read a record, for the stall watch and a new consumer.
        self._starts: dict[tuple[str, int], int] = {}
        self._stalls: StallWatch[tuple[str, int]] = StallWatch(STALL_S)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for name, target in (("read", self._read_loop), ("probe", self._probe_loop)):
            thread = threading.Thread(
                target=target, name=f"service {name} {self.alias}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def catch_up(self, timeout: float) -> bool:
        """Wait until what the topics held at assignment is read; False at the timeout,
        or as soon as the cluster is found not to answer."""
        deadline = time.monotonic() + timeout
        while not self.view.read(lambda v: v.caught_up):
            if self.view.read(lambda v: v.probed and not v.verdict.reachable):
                return False
            if time.monotonic() > deadline or self._stop.is_set():
                return False
            time.sleep(0.05)
        return True

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(_TIMEOUT_S + 5)
        if any(thread.is_alive() for thread in self._threads):
            # Closing a client another thread is inside of frees what it uses; the
            # clients go with this object once its threads see the stop.
            log.warning("service: %s's readers did not stop in time; left to end", self.alias)
            return
        self._consumer.close()
        destroy(self._admin)
        self._probe.close()

    # -- the reading thread ------------------------------------------------------------

    def _read_loop(self) -> None:
        next_discovery = 0.0
        next_evict = time.monotonic() + EVICT_S
        next_stall_check = time.monotonic() + STALL_CHECK_S
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                if now >= next_discovery:
                    next_discovery = now + DISCOVERY_S
                    self._discover()
                if now >= next_evict:
                    next_evict = now + EVICT_S
                    self.view.evict(self._history_ms, _now_ms())
                if now >= next_stall_check:
                    next_stall_check = now + STALL_CHECK_S
                    self._check_stalls()
                if not self._assigned:
                    self._stop.wait(0.2)
                    continue
                for msg in self._consumer.consume(1000, timeout=0.2):
                    if msg.error() is None:
                        self._dispatch(msg)
                    else:  # librdkafka retries; a partition it gives up on is a stall
                        log.debug("service: reading %s: %s", self.alias, msg.error())
                self._check_caught_up()
            except Exception as exc:  # noqa: BLE001 - the probe reports an unreachable cluster
                log.debug("service: reading %s: %s", self.alias, exc)
                self._stop.wait(1.0)

    def _discover(self) -> None:
        """Assign the wanted topics that exist now and are not read yet."""
        missing = [t for t in self._sources.topics() if t not in self._assigned]
        if not missing:
            return
        try:
            found = self._admin.list_topics(timeout=_TIMEOUT_S).topics
        except KafkaException:
            return  # the probe says why; tried again at the next discovery
        partitions = []
        for topic in missing:
            meta = found.get(topic)
            if meta is None or meta.error is not None:
                continue
            partitions += [TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions]
        if not partitions:
            if not self._ends:
                self.view.mark_caught_up()  # nothing to read on this cluster yet
            return
        metrics = [tp for tp in partitions if tp.topic == METRICS_TOPIC]
        if metrics:
            self._from_history(metrics)
        for tp in partitions:
            low, end = self._consumer.get_watermark_offsets(tp, timeout=_TIMEOUT_S, cached=False)
            self._ends[(tp.topic, tp.partition)] = end
            start = {OFFSET_BEGINNING: low, OFFSET_END: end}.get(tp.offset, tp.offset)
            self._starts[(tp.topic, tp.partition)] = start
        self._consumer.incremental_assign(partitions)
        self._assigned.update(tp.topic for tp in partitions)
        log.info("service: reading %s on %s", ", ".join(sorted(self._assigned)), self.alias)

    def _from_history(self, partitions: list[TopicPartition]) -> None:
        """Start the metrics topic's partitions at the start of the longest window."""
        since = _now_ms() - self._history_ms
        lookup = [TopicPartition(tp.topic, tp.partition, since) for tp in partitions]
        found = self._consumer.offsets_for_times(lookup, timeout=_TIMEOUT_S)
        for tp, at in zip(partitions, found, strict=True):
            tp.offset = at.offset if at.offset >= 0 else OFFSET_END

    def _check_caught_up(self) -> None:
        """Caught up once every topic assigned is read to its end as of its assignment."""
        if self.view.read(lambda v: v.caught_up) or not self._ends:
            return
        positions = self._consumer.position([TopicPartition(t, p) for t, p in self._ends])
        if all(
            tp.offset >= self._ends[(tp.topic, tp.partition)]
            or self._ends[(tp.topic, tp.partition)] == 0
            for tp in positions
        ):
            self.view.mark_caught_up()

    def _check_stalls(self) -> None:
        """Read stalled partitions with a new consumer (see `service.stall_watch`); only
        while the cluster answers, when a consumer that does not move is not expected.

        A new consumer can stall as the old one did (librdkafka caught in the same
        state of a partition whose leadership still settles): it is replaced in turn,
        as often as a partition stalls."""
        if not self._starts or not self.view.read(lambda v: v.probed and v.verdict.reachable):
            self._stalls.reset()
            return
        keys = list(self._starts)
        try:
            ends = partition_offsets(
                self._admin, keys, "latest", timeout=_TIMEOUT_S, what=self.alias, stable=True
            )
        except KafkaOperationError as exc:
            log.debug("service: reading the ends of %s: %s", self.alias, exc)
            return
        positions = self._positions(keys)
        stalled = self._stalls.stalled(time.monotonic(), {k: (positions[k], ends[k]) for k in keys})
        if not stalled:
            return
        log.warning(
            "service: the reader of %s stopped with records to read (%s); reading on with "
            "a new consumer",
            self.alias,
            ", ".join(f"{t}[{p}] at {positions[(t, p)]} of {ends[(t, p)]}" for t, p in stalled),
        )
        self._renew(positions)

    def _positions(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Each partition's next offset to read: its consumer's position, or where its
        reading started while it has read nothing."""
        found = self._consumer.position([TopicPartition(t, p) for t, p in keys])
        return {
            (tp.topic, tp.partition): tp.offset
            if tp.offset >= 0
            else self._starts[(tp.topic, tp.partition)]
            for tp in found
        }

    def _renew(self, positions: dict[tuple[str, int], int]) -> None:
        """Replace the consumer by a new one that reads every partition on from
        `positions`: nothing read twice into the view, nothing skipped."""
        old, self._consumer = self._consumer, Consumer(self._consumer_settings)
        old.close()
        self._consumer.incremental_assign(
            [TopicPartition(t, p, o) for (t, p), o in positions.items()]
        )
        self._starts = dict(positions)
        self._stalls.reset()

    def _dispatch(self, msg: Message) -> None:
        topic = msg.topic() or ""
        if topic == METRICS_TOPIC:
            sample = decode(msg.value())
            if (
                sample is not None
                and self._ours(sample.origin.source, sample.origin.target)
                and _now_ms() - sample.origin.time_ms <= self._history_ms
            ):
                self.view.add_sample(sample)
        elif topic == METADATA_TOPIC:
            self._metadata(msg)
        elif topic in self._sources.heartbeats:
            self._heartbeat(msg)
        elif topic in self._sources.checkpoints:
            self._checkpoint(self._sources.checkpoints[topic], msg)

    def _metadata(self, msg: Message) -> None:
        entry = decode_metadata(msg.key(), msg.value())
        if entry is not None:
            source, _, target = entry[0].partition("->")
            if self._ours(source, target):
                self.view.set_published(*entry)
            return
        verification = decode_summary(msg.key(), msg.value())
        if verification is not None:
            source, _, target = verification[0].partition("->")
            if self._ours(source, target):
                self.view.set_verification(*verification)

    def _heartbeat(self, msg: Message) -> None:
        try:
            beat = Heartbeat.decode(msg.key(), msg.value())
        except FormatError:
            return
        if self._ours(beat.source_alias, beat.target_alias):
            self.view.add_heartbeat(f"{beat.source_alias}->{beat.target_alias}", beat.timestamp)

    def _ours(self, source: str, target: str) -> bool:
        """A flow of this configuration's clusters into this one."""
        return target == self.alias and self._sources.counts(source)

    def _checkpoint(self, flow: str, msg: Message) -> None:
        try:
            checkpoint = Checkpoint.decode(msg.key(), msg.value())
        except FormatError:
            return
        written = msg.timestamp()[1]
        key = (checkpoint.group, checkpoint.topic, checkpoint.partition)
        self.view.set_checkpoint(flow, key, CheckpointEntry(checkpoint, written))

    # -- the probing thread ------------------------------------------------------------

    def _probe_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.view.set_verdict(self._probe.probe())
            except Exception:  # noqa: BLE001 - probing goes on; the next round retries
                log.exception("service: probing %s", self.alias)
            self._stop.wait(PROBE_S)


def sources_for(flows: Iterable[Any], aliases: Iterable[str]) -> Sources:
    """What to read on a target cluster, from the flows (`FlowConfig`) into it and the
    configuration's aliases."""
    flows = list(flows)
    return Sources(
        heartbeats=frozenset(f.heartbeats_topic for f in flows),
        checkpoints={f.checkpoints_topic: f.name for f in flows},
        aliases=frozenset(aliases),
    )


def _now_ms() -> int:
    return int(time.time() * 1000)
