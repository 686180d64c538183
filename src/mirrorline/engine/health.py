"""Whether a flow's source and target clusters answer, asked on the flow's own schedule.

A flow whose target stops answering keeps a batch waiting inside librdkafka
(which retries for minutes) and would otherwise look `running` all along. So
each flow asks both of its clusters for metadata every couple of seconds, with
a short timeout, and keeps the latest verdict with librdkafka's own words for
what is wrong (`Connect to ipv4#10.0.0.7:9092 failed: Connection refused`). The
flow's status shows an unreachable cluster while it lasts, and a flow that
failed during the outage retries as soon as the cluster answers.

The probes run on a small thread of the flow's own (`ClusterHealth.start`), not
on the flow's thread: that thread can wait tens of seconds on the very cluster
that went away (a control loop's request, draining a stuck batch), and a verdict
must not wait for it. The flow's thread only reads verdicts, which never blocks.

A probe is a metadata request for one topic name (on the target the progress
topic; on the source one the flow may describe, so that the broker's authorizer
log shows no denial), so the answer stays small on clusters with many topics.
Topic auto-creation is switched off for the probe's client: on a cluster where
the topic does not exist, the answer "unknown topic" proves the cluster answers
and creates nothing. (DescribeCluster would be the natural request, but
librdkafka 2.16 aborts the process on an assertion when it cannot use a
DescribeCluster answer, one listing no broker for instance.)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException

from mirrorline.admin_client import AdminClient, destroy
from mirrorline.client_errors import ClientErrors, error_text
from mirrorline.flow_context import FlowContext
from mirrorline.kafka import ClientConfig
from mirrorline.permissions import probe_topic

log = logging.getLogger(__name__)

PROBE_INTERVAL_S = 2.0
PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class ClusterVerdict:
    """The latest answer of one cluster to the flow's probe."""

    alias: str
    role: str  # "source" or "target": the cluster's part in the flow
    reachable: bool
    error: str = ""  # librdkafka's reason, when unreachable
    since_ms: int = 0  # wall-clock time this verdict was first reached

    def __str__(self) -> str:
        if self.reachable:
            return f"{self.role} cluster {self.alias} reachable"
        return f"{self.role} cluster {self.alias} unreachable: {self.error}"


class ClusterProbe:
    """Asks one cluster for the metadata of one topic; keeps the verdict."""

    def __init__(
        self,
        alias: str,
        role: str,
        admin_settings: Mapping[str, Any],
        topic: str,
        *,
        timeout: float = PROBE_TIMEOUT_S,
    ) -> None:
        self.alias = alias
        self.role = role
        self._topic = topic
        self._timeout = timeout
        self._lock = threading.Lock()
        # Until the first answer the cluster is presumed reachable: no alarm on a guess.
        self._verdict = ClusterVerdict(alias, role, True, since_ms=_now_ms())
        self._errors = ClientErrors()
        config: ClientConfig = {
            **admin_settings,
            "error_cb": self._errors,
            "allow.auto.create.topics": False,
            # Failures are reported as the verdict; librdkafka's own log lines
            # would repeat them every second for as long as they last.
            "log_level": 0,
        }
        self._admin = AdminClient(config)

    def probe(self) -> ClusterVerdict:
        """Ask the cluster once (waits at most the probe's timeout); the new verdict."""
        self._admin.poll(0)  # serves `error_cb`
        try:
            self._admin.list_topics(self._topic, timeout=self._timeout)
        except KafkaException as exc:
            self._admin.poll(0)
            # librdkafka's last connection error says more than "transport failure".
            reason = self._errors.text() or error_text(exc)
            return self._record(False, reason)
        return self._record(True, "")

    def verdict(self) -> ClusterVerdict:
        with self._lock:
            return self._verdict

    def close(self) -> None:
        """Destroy the probe's client (once no thread probes any more)."""
        destroy(self._admin)

    def _record(self, reachable: bool, error: str) -> ClusterVerdict:
        with self._lock:
            previous = self._verdict
            if reachable:
                self._errors.clear()
            if previous.reachable == reachable and previous.error == error:
                return previous
            since = previous.since_ms if previous.reachable == reachable else _now_ms()
            self._verdict = ClusterVerdict(self.alias, self.role, reachable, error, since)
        if previous.reachable != reachable:
            if reachable:
                log.info("%s cluster %s answers again", self.role, self.alias)
            else:
                log.warning("%s cluster %s unreachable: %s", self.role, self.alias, error)
        return self._verdict


class ClusterHealth:
    """The latest verdicts on a flow's clusters, kept fresh by a thread of its own."""

    def __init__(
        self,
        probes: list[ClusterProbe],
        *,
        interval: float = PROBE_INTERVAL_S,
        name: str = "cluster health",
    ) -> None:
        self._probes = probes
        self._interval = interval
        self._name = name
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_flow(cls, context: FlowContext, topic: str) -> ClusterHealth:
        """Probes of the flow's source and target, with its admin client settings.

        The target is asked about `topic`, the source about a topic its
        principal may describe (`permissions.probe_topic`). The probes have
        admin clients of their own, not the flow's shared ones: their error
        callback and quiet logging are what makes the verdict.
        """
        source, target = context.source, context.target
        source_topic = probe_topic(context.flow)
        return cls(
            [
                ClusterProbe(source.alias, "source", source.admin_settings, source_topic),
                ClusterProbe(target.alias, "target", target.admin_settings, topic),
            ],
            name=f"health {context.name}",
        )

    def start(self) -> None:
        """Start probing every `interval` seconds (once; later calls do nothing)."""
        if self._thread is None and not self._closed.is_set():
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def probe(self) -> None:
        """Probe every cluster once (what the thread does every `interval` seconds)."""
        for probe in self._probes:
            probe.probe()

    def verdicts(self) -> tuple[ClusterVerdict, ...]:
        return tuple(probe.verdict() for probe in self._probes)

    def unreachable(self) -> tuple[ClusterVerdict, ...]:
        return tuple(v for v in self.verdicts() if not v.reachable)

    def close(self) -> None:
        self._closed.set()
        if self._thread is not None:
            self._thread.join(2 * PROBE_TIMEOUT_S * len(self._probes) + 5)
        if self._thread is None or not self._thread.is_alive():
            for probe in self._probes:
                probe.close()

    def _run(self) -> None:
        while not self._closed.is_set():
            try:
                self.probe()
            except Exception:  # noqa: BLE001 - probing must go on; the next round retries
                log.exception("%s: probing failed", self._name)
            self._closed.wait(self._interval)


def _now_ms() -> int:
    return int(time.time() * 1000)
