"""Heartbeats: a timestamped sign of life of each flow, written into its target cluster.

Every `emit.heartbeats.interval.seconds` a heartbeat (MM2's format,
`formats.Heartbeat`: key (source alias, target alias), value (version 0,
time in ms)) goes to the `heartbeats` topic of the flow's target. The topic
is created as MM2 creates it: one partition, compacted, replication factor
`heartbeats.topic.replication.factor` (-1: the broker's default).

Heartbeats are emitted for every flow of `MirrorConfig.heartbeat_flows()`,
enabled or not. That is how a cluster that is only ever a *source* gets a
`heartbeats` topic: the disabled flow `B->A` writes heartbeats into `A`, and
the enabled flow `A->B` replicates them to `B` as `A.heartbeats` (heartbeats
topics are replicated whatever the topic filter says, unless
`heartbeats.replication.enabled = false`). So every enabled flow always has
at least one topic to replicate, a smoke test that shows end to end that the
flow works, and `mirrorline.client` (like MM2's `RemoteClusterUtils`) can
find upstream clusters and count hops. A disabled flow with
`emit.heartbeats.enabled = false` does nothing at all.

Every driver emits the heartbeats of the flows into the clusters it serves,
whether or not it leads those flows: a heartbeat says "a driver for this flow
is alive", needs no coordination, and two drivers writing the same key only
add records that compaction folds into one.

Each flow emits on a thread of its own with short timeouts, so a target that
does not answer delays neither the other flows' heartbeats nor the driver.
Failures are logged once when they start and once when they end (not at
every beat); the latest reason is in the flow's `HeartbeatStatus`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from confluent_kafka import Producer

from mirrorline.admin_client import AdminClient, destroy
from mirrorline.client_errors import ClientErrors, error_text
from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.model import FlowConfig, MirrorConfig
from mirrorline.formats import Heartbeat
from mirrorline.kafka import (
    ClientConfig,
    KafkaOperationError,
    ensure_topic,
)

log = logging.getLogger(__name__)

# MM2 creates the heartbeats topic with these: one partition, compacted.
TOPIC_CONFIG = {"cleanup.policy": "compact"}
# Short, so that a target that does not answer costs only a few seconds per beat.
_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class HeartbeatStatus:
    """How one flow's heartbeats are doing."""

    flow: str  # source->target
    target: str  # the cluster written to
    topic: str
    emitted: int = 0  # heartbeats acknowledged since the driver started
    last_emitted_ms: int | None = None  # wall-clock time of the latest acknowledged one
    error: str = ""  # why the latest beat failed; empty while they succeed

    @property
    def failing(self) -> bool:
        return bool(self.error)

    def __str__(self) -> str:
        if self.failing:
            return f"{self.flow} failing: {self.error}"
        return f"{self.flow} {self.emitted} sent"


def heartbeat_flows_for(
    config: MirrorConfig, target_clusters: Iterable[str] | None
) -> list[FlowConfig]:
    """The flows whose heartbeats a driver emits: those into the clusters it serves.

    `target_clusters` is the driver's `--clusters` (None: every cluster of the
    configuration), so that each target gets its heartbeats from the drivers
    that serve it, as with the flows they replicate.
    """
    wanted = set(config.clusters) if target_clusters is None else set(target_clusters)
    return [f for f in config.heartbeat_flows() if f.target in wanted]


def next_due(due: float, interval: float, now: float) -> float:
    """When the beat after the one due at `due` is due, given it is `now`.

    Beats keep a fixed rhythm (`due + k * interval`); the slots a slow beat
    overran are skipped rather than made up in a burst.
    """
    missed = max(0, math.floor((now - due) / interval))
    return due + (missed + 1) * interval


class BeatTracker:
    """A flow's heartbeat outcomes: the status, and what to log when the state changes.

    `succeeded` and `failed` return a message to log, or None when the
    outcome only repeats the previous one: a target down for an hour is one
    warning, not one per second.
    """

    def __init__(self, flow: str, target: str, topic: str) -> None:
        self._status = HeartbeatStatus(flow, target, topic)
        self._failed_beats = 0
        self._lock = threading.Lock()

    def status(self) -> HeartbeatStatus:
        with self._lock:
            return self._status

    def succeeded(self, now_ms: int) -> str | None:
        with self._lock:
            previous, failures = self._status, self._failed_beats
            self._status = replace(
                previous, emitted=previous.emitted + 1, last_emitted_ms=now_ms, error=""
            )
            self._failed_beats = 0
        if failures:
            return (
                f"flow {previous.flow}: heartbeats reach {previous.target} again "
                f"(after {failures} failed)"
            )
        if previous.emitted == 0:
            return f"flow {previous.flow}: emitting heartbeats to {previous.target}"
        return None

    def failed(self, reason: str) -> str | None:
        with self._lock:
            previous = self._status
            self._status = replace(previous, error=reason)
            self._failed_beats += 1
            first = self._failed_beats == 1
        if first:
            return f"flow {previous.flow}: heartbeats to {previous.target} fail: {reason}"
        return None


class HeartbeatEmitter:
    """Writes one flow's heartbeats into its target: `beat()` once, `run()` on schedule."""

    def __init__(self, flow: FlowConfig) -> None:
        settings = FlowSettings.of(flow)
        interval = settings.intervals.emit_heartbeats
        if interval is None:
            raise ValueError(f"flow {flow.name} does not emit heartbeats")
        self.flow = flow
        self.topic = flow.heartbeats_topic
        self.interval = interval
        self.tracker = BeatTracker(flow.name, flow.target, self.topic)
        self._replication_factor = settings.heartbeats_replication_factor
        self._errors = ClientErrors()  # librdkafka's latest complaint, clearer than a timeout
        common: ClientConfig = {
            # A missing topic is created by `_ensure_topic` with MM2's settings,
            # never by the broker with its defaults (not compacted).
            "allow.auto.create.topics": False,
            # Failures are reported once by the tracker; librdkafka's own log
            # would repeat them every second while a target is down.
            "log_level": 0,
            "error_cb": self._errors,
        }
        producer = dict(flow.client_settings("target", "producer"))
        producer.pop("delivery.timeout.ms", None)  # the Java name of message.timeout.ms
        self._producer_settings = {
            **producer,
            **common,
            # A heartbeat not delivered within a beat or two is worth nothing: give up.
            "message.timeout.ms": int(_TIMEOUT_S * 1000),
            "linger.ms": 0,
            # Heartbeats need no ordering or deduplication, and without idempotence
            # no producer state on the broker can put the producer in a fatal error.
            "enable.idempotence": False,
        }
        self._admin_settings = {**flow.client_settings("target", "admin"), **common}
        self._producer: Producer | None = None
        self._admin: AdminClient | None = None
        self._topic_ready = False

    def status(self) -> HeartbeatStatus:
        return self.tracker.status()

    def run(self, stop: threading.Event) -> None:
        """Beat at once, then every interval, until `stop` is set."""
        due = time.monotonic()
        try:
            while not stop.is_set():
                self.beat()
                due = next_due(due, self.interval, time.monotonic())
                stop.wait(max(0.0, due - time.monotonic()))
        finally:
            self.close()

    def beat(self) -> None:
        """Emit one heartbeat and wait (briefly) for the target to acknowledge it."""
        now_ms = int(time.time() * 1000)
        try:
            self._ensure_topic()
            self._send(Heartbeat(self.flow.source, self.flow.target, now_ms))
        except Exception as exc:  # noqa: BLE001 - reported in the status; the next beat retries
            if self._admin is not None:
                self._admin.poll(0)  # serves `error_cb`: the connection error, if any
            self._topic_ready = False  # look again next time: it may have been deleted
            message = self.tracker.failed(self._reason(exc))
            if message:
                log.warning(message)
        else:
            # librdkafka reports a connection error once, not at each retry: it is
            # kept as the reason until a beat succeeds.
            self._errors.clear()
            message = self.tracker.succeeded(now_ms)
            if message:
                log.info(message)

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(1.0)
        destroy(self._admin)
        self._producer = self._admin = None

    def _ensure_topic(self) -> None:
        """Create the heartbeats topic unless it exists (checked first: creating needs
        more rights than writing, and an operator may have created it)."""
        if self._topic_ready:
            return
        if self._admin is None:
            self._admin = AdminClient(self._admin_settings)
        found = self._admin.list_topics(self.topic, timeout=_TIMEOUT_S).topics.get(self.topic)
        if found is None or found.error is not None:
            created = ensure_topic(
                self._admin,
                self.topic,
                partitions=1,
                replication_factor=self._replication_factor,
                config=TOPIC_CONFIG,
                timeout=_TIMEOUT_S,
            )
            if created:
                log.info("created the heartbeats topic %s on %s", self.topic, self.flow.target)
        self._topic_ready = True

    def _send(self, heartbeat: Heartbeat) -> None:
        if self._producer is None:
            self._producer = Producer(self._producer_settings)
        errors: list[str] = []

        def delivered(error, _msg) -> None:
            if error is not None:
                errors.append(error.str())

        self._producer.produce(
            self.topic,
            key=heartbeat.key(),
            value=heartbeat.value(),
            partition=0,
            timestamp=heartbeat.timestamp,
            on_delivery=delivered,
        )
        # A little longer than message.timeout.ms, so that a lost heartbeat is
        # reported by its delivery callback with librdkafka's reason.
        remaining = self._producer.flush(_TIMEOUT_S + 1.0)
        if errors or remaining:
            detail = errors[0] if errors else "no acknowledgement"
            raise KafkaOperationError(f"heartbeat not written to {self.topic}: {detail}")

    def _reason(self, exc: Exception) -> str:
        # librdkafka's connection error names the broker and the cause; the
        # request's own error is often only "transport failure" or a timeout.
        return self._errors.text() or error_text(exc)


class Heartbeats:
    """The heartbeats a driver emits, one thread per flow."""

    def __init__(self, flows: Iterable[FlowConfig]) -> None:
        self.emitters = [HeartbeatEmitter(flow) for flow in flows]
        self._threads: list[threading.Thread] = []

    def start(self, stop: threading.Event) -> None:
        """Start every flow's heartbeats; they stop when `stop` is set (see `join`)."""
        for emitter in self.emitters:
            thread = threading.Thread(
                target=emitter.run,
                args=(stop,),
                name=f"heartbeats {emitter.flow.name}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def join(self) -> None:
        """Wait for the threads once `stop` is set: at most one beat's timeouts."""
        for thread in self._threads:
            thread.join(4 * _TIMEOUT_S)
        self._threads = []

    def statuses(self) -> list[HeartbeatStatus]:
        return [emitter.status() for emitter in self.emitters]
