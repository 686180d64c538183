"""Which driver leads a flow, decided by Kafka's group protocol on the flow's target cluster.

Several drivers may run the same configuration; for each flow exactly one of them
replicates and the others stand by. Each driver joins, per flow, the consumer
group `mirrorline.leader.<flow>` (for example `mirrorline.leader.east->west`)
subscribed to `mirrorline.leadership.internal`, a one-partition topic on the
flow's target cluster that never holds a record. The group coordinator assigns
partition 0 to one member: that driver leads the flow. Nothing else decides:
no lock file, no protocol of Mirrorline's own.

- A driver that stops cleanly leaves the group; another member is assigned the
  partition at once.
- A driver that dies stops heartbeating; after `session.timeout.ms` (10 s) the
  coordinator gives the partition to another member.
- A driver cut off from its target (where the coordinator is) keeps the flow
  until it reaches the group again: meanwhile no other driver can be given it
  unless that one reaches the coordinator, and if one was, this driver stops
  writing at the next assignment (see `_on_lost`).

Assignments are sticky (`cooperative-sticky`): a driver joining the group never
takes a flow away from the driver that leads it. The group uses Kafka's
classic protocol because the newer one takes its session timeout from the
brokers (45 s by default), too slow a takeover.

A `term` numbers each period of leadership, so that a flow can tell "still the
leader since I started" from "lost it and got it back in between".

A driver that gains a flow announces itself in the group's committed offset of
partition 0, so that standbys can say who leads (`leadership_holder`); the
announcement only informs, it decides nothing.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mirrorline.engine.health import ClusterProbe
from mirrorline.engine.leadership_holder import (
    LEADERSHIP_TOPIC,
    Announcement,
    HolderLookup,
    announcement,
)
from mirrorline.flow_context import FlowContext
from mirrorline.kafka import ClusterClients, KafkaOperationError, ensure_topic

log = logging.getLogger(__name__)

GROUP_PREFIX = "mirrorline.leader."

SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 1_000
# The group thread polls twice a second, so only a stuck process exceeds this.
MAX_POLL_INTERVAL_MS = 30_000
POLL_S = 0.5
RETRY_S = (1.0, 2.0, 5.0, 10.0)

# The group's behaviour must not depend on what the user configured for the
# target consumer: only connection and security settings are taken from it.
_GROUP_SETTINGS: Mapping[str, object] = {
    "group.protocol": "classic",
    "partition.assignment.strategy": "cooperative-sticky",
    "session.timeout.ms": SESSION_TIMEOUT_MS,
    "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
    "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": False,
}
_DROPPED = {"group.instance.id", "group.remote.assignor"}


def group_id(flow_name: str) -> str:
    """The leadership group of a flow: `mirrorline.leader.east->west`.

    Cluster aliases use letters, digits, '.', '_' and '-', so the flow's `->`
    keeps the name unambiguous. Quote it in a shell.
    """
    return GROUP_PREFIX + flow_name


def driver_id() -> str:
    """This driver process as other drivers see it: `mirrorline-driver@host:pid`."""
    return f"mirrorline-driver@{socket.gethostname()}:{os.getpid()}"


def group_consumer_settings(
    consumer_settings: Mapping[str, object], flow_name: str, client_id: str
) -> dict[str, object]:
    """The leadership consumer's settings: the target consumer's, with the group's own."""
    settings = {k: v for k, v in consumer_settings.items() if k not in _DROPPED}
    settings.update(_GROUP_SETTINGS)
    settings["group.id"] = group_id(flow_name)
    settings["client.id"] = client_id
    return settings


class Term:
    """Numbered periods of leadership; thread-safe.

    `current` is the number of the period this driver leads in, or None while it
    does not lead. Every gain starts a new number.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._leading = False

    @property
    def current(self) -> int | None:
        with self._lock:
            return self._count if self._leading else None

    def gain(self) -> int:
        with self._lock:
            if not self._leading:
                self._count += 1
                self._leading = True
            return self._count

    def end(self) -> bool:
        """End the current period; True if there was one."""
        with self._lock:
            was, self._leading = self._leading, False
            return was


class FlowLeadership:
    """This driver's membership in one flow's leadership group.

    `start()` joins the group on a thread of its own (never the flow's thread,
    which may wait on Spark or on a cluster for tens of seconds, during which a
    missed rebalance callback would delay a handover). `term()` says whether this
    driver leads; `describe()` says who does otherwise; `close()` leaves the
    group so that another driver takes over at once.
    """

    def __init__(
        self,
        flow_name: str,
        target: ClusterClients,
        *,
        replication_factor: int = -1,
        client_id: str | None = None,
        wake: threading.Event | None = None,
    ) -> None:
        """`wake` is set whenever this driver gains or loses the flow."""
        self.flow_name = flow_name
        self.group = group_id(flow_name)
        self.client_id = client_id or driver_id()
        self._target = target.alias
        self._clients = target
        self._consumer_settings = group_consumer_settings(
            target.consumer_settings, flow_name, self.client_id
        )
        self._replication_factor = replication_factor
        self._term = Term()
        self._lock = threading.Lock()
        self._holder: Announcement | None = None
        # This driver's announcement while it leads (`leadership_holder`), and whether it
        # is still to be committed (again, after a failed commit).
        self._announcement: Announcement | None = None
        self._unannounced = False
        self._problem = ""
        # The session expired while leading; the next assignment decides (see `_on_lost`).
        self._lost_contact = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started_at = 0.0
        self._wake = wake or threading.Event()

    @classmethod
    def for_flow(cls, context: FlowContext, client_id: str | None = None) -> FlowLeadership:
        """The leadership of the context's flow on its target cluster."""
        return cls(
            context.name,
            context.target,
            replication_factor=context.settings.replication_factor,
            client_id=client_id,
            wake=context.wake,
        )

    # -- what the flow asks ------------------------------------------------------------

    def start(self) -> None:
        """Join the group in the background; calling it again does nothing."""
        if self._thread is not None:
            return
        self._started_at = time.monotonic()
        self._thread = threading.Thread(
            target=self._run, name=f"leadership {self.flow_name}", daemon=True
        )
        self._thread.start()

    def term(self) -> int | None:
        """The number of this driver's current period of leadership; None when it does not lead."""
        return self._term.current

    def describe(self) -> str:
        """Why this driver does not lead: who does, or what keeps it from knowing."""
        with self._lock:
            problem, leader = self._problem, self._holder
        if problem:
            return f"leadership group {self.group} on {self._target}: {problem}"
        if leader is not None and leader.driver != self.client_id:
            return f"active driver: {leader.driver} (leading since {leader.since()})"
        return f"waiting for leadership (group {self.group} on {self._target})"

    def active_driver(self) -> str | None:
        """The driver that leads the flow: this one while it leads, else the one that
        last announced itself (None while none is known to)."""
        if self.term() is not None:
            return self.client_id
        with self._lock:
            if self._holder is None or self._holder.driver == self.client_id:
                return None
            return self._holder.driver

    def close(self, timeout: float = 30.0) -> None:
        """Leave the group (the next driver takes over at once) and end the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("flow %s: leaving the leadership group timed out", self.flow_name)
        self._term.end()

    # -- the group thread ----------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self._take_part()
                return
            except Exception as exc:  # noqa: BLE001 - reported, retried after a pause
                problem = str(exc)
                self._lose(f"leadership group failed: {problem}")
                self._set_problem(problem)
                log.warning(
                    "flow %s: leadership group %s on %s: %s",
                    self.flow_name,
                    self.group,
                    self._target,
                    problem,
                )
                self._stop.wait(RETRY_S[min(failures, len(RETRY_S) - 1)])
                failures += 1

    def _take_part(self) -> None:
        """Be a member of the group until closed; callbacks run inside `poll`.

        The cluster is asked first, with a short timeout: a wrong password or a
        broker nobody listens on is then reported in librdkafka's words at once,
        not as the timeout of a topic creation half a minute later.
        """
        probe = ClusterProbe(self._target, "target", self._clients.admin_settings, LEADERSHIP_TOPIC)
        try:
            verdict = probe.probe()
        finally:
            probe.close()
        if not verdict.reachable:
            raise KafkaOperationError(str(verdict))
        ensure_topic(
            self._clients.admin, LEADERSHIP_TOPIC, replication_factor=self._replication_factor
        )
        consumer = Consumer({**self._consumer_settings, "on_commit": self._on_commit})
        lookup = HolderLookup(self._consumer_settings, self.group)
        try:
            consumer.subscribe(
                [LEADERSHIP_TOPIC],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            self._set_problem("")
            while not self._stop.is_set():
                msg = consumer.poll(POLL_S)
                error = msg.error() if msg is not None else None
                if error is not None:
                    self._on_error(error)
                if self._term.current is None:
                    found = lookup.poll()
                    if found is not None:  # the group answered: no problem to show
                        with self._lock:
                            self._holder, self._problem = found.holder, ""
                elif self._unannounced and self._announcement is not None:
                    self._announce(consumer, self._announcement)
        finally:
            lookup.close()
            # Leaving the group: revokes partition 0 here (on_revoke), then hands it on.
            consumer.close()

    def _on_assign(self, _consumer, partitions) -> None:
        holds = any(p.topic == LEADERSHIP_TOPIC and p.partition == 0 for p in partitions)
        lost_contact, self._lost_contact = self._lost_contact, False
        if lost_contact and not holds:
            self._lose("leadership lost: the group gave the flow to another driver")
        if holds:
            if lost_contact and self._term.current is not None:
                log.info(
                    "flow %s: this driver still leads it after a loss of contact", self.flow_name
                )
                return
            term = self._term.gain()
            self._announcement, self._unannounced = announcement(self.client_id), True
            with self._lock:
                self._holder, self._problem = None, ""
            self._wake.set()
            log.info(
                "flow %s: this driver (%s) leads it now (term %d, %.1fs after joining)",
                self.flow_name,
                self.client_id,
                term,
                time.monotonic() - self._started_at,
            )

    def _on_revoke(self, _consumer, partitions) -> None:
        if any(p.topic == LEADERSHIP_TOPIC and p.partition == 0 for p in partitions):
            self._lose("leadership handed over")

    def _on_lost(self, _consumer, partitions) -> None:
        """The session expired without contact with the coordinator: the flow is kept until
        the group, once reached again, says who leads.

        The coordinator is a broker of the target cluster, so a driver that cannot
        reach it normally cannot write to the target either, and keeping the flow
        lets replication go on without a restart when the target returns. If the
        group gives the flow to another driver meanwhile, this one stops at the
        next assignment; its progress writes are fenced by the new leader from the
        moment that one starts (see docs/replication.md).
        """
        if any(p.topic == LEADERSHIP_TOPIC and p.partition == 0 for p in partitions):
            self._lost_contact = True
            log.warning(
                "flow %s: lost contact with the group coordinator on %s; keeping the flow "
                "until the group says who leads it",
                self.flow_name,
                self._target,
            )

    def _announce(self, consumer: Consumer, announcement: Announcement) -> None:
        """Commit this driver's announcement; `_on_commit` learns how it went."""
        self._unannounced = False
        try:
            consumer.commit(offsets=[announcement.offset()], asynchronous=True)
        except KafkaException as exc:
            self._on_commit(exc.args[0], [])

    def _on_commit(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """A failed announcement is committed again at the next poll, while this driver leads."""
        failure = error or next((p.error for p in partitions if p.error is not None), None)
        if failure is not None and self._term.current is not None:
            log.debug("flow %s: announcing the leader: %s", self.flow_name, failure.str())
            self._unannounced = True

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            raise RuntimeError(error.str())
        # Transient (a broker down, a timeout): librdkafka retries by itself.
        log.debug("flow %s: leadership group: %s", self.flow_name, error.str())
        self._set_problem(error.str())

    def _lose(self, why: str) -> None:
        if not self._term.end():
            return
        self._wake.set()
        if self._stop.is_set():  # this driver leaves the group: its own stop, not news
            log.info("flow %s: leadership released; this driver stops", self.flow_name)
        else:
            log.warning("flow %s: %s; this driver stops replicating it", self.flow_name, why)

    def _set_problem(self, problem: str) -> None:
        with self._lock:
            self._problem = problem
