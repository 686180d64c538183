"""Everything the service has read from one target cluster, kept for its answers.

Filled by that cluster's `TargetCollector` (one thread), read by the REST API,
Prometheus and `status` (other threads): every access holds the view's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from mirrorline.engine.health import ClusterVerdict
from mirrorline.formats import Checkpoint
from mirrorline.raw_metrics import Sample
from mirrorline.service.history import FlowHistory
from mirrorline.verification.summary import VerificationSummary

T = TypeVar("T")


@dataclass(frozen=True)
class CheckpointEntry:
    checkpoint: Checkpoint
    written_ms: int  # the checkpoint record's timestamp


class TargetView:
    """What the service knows of one target cluster (see the module)."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self._lock = threading.Lock()
        self.histories: dict[str, FlowHistory] = {}
        self.heartbeats: dict[str, int] = {}  # flow -> newest heartbeat's time (ms)
        self.published: dict[str, dict[str, str]] = {}  # flow -> source topic -> remote topic
        # flow -> (group, remote topic, partition) -> the newest checkpoint.
        self.checkpoints: dict[str, dict[tuple[str, str, int], CheckpointEntry]] = {}
        self.verifications: dict[str, VerificationSummary] = {}  # flow -> its last one
        self.verdict = ClusterVerdict(alias, "target", True)
        self.probed = False  # the verdict is a guess until the first probe
        self.caught_up = False

    def read(self, query: Callable[[TargetView], T]) -> T:
        """Answer `query` with the view held still."""
        with self._lock:
            return query(self)

    # -- what the collector writes -----------------------------------------------------

    def add_sample(self, sample: Sample) -> None:
        o = sample.origin
        with self._lock:
            history = self.histories.get(o.flow)
            if history is None:
                history = self.histories[o.flow] = FlowHistory(o.flow, o.source, o.target)
            history.add(sample)

    def add_heartbeat(self, flow: str, time_ms: int) -> None:
        with self._lock:
            self.heartbeats[flow] = max(self.heartbeats.get(flow, 0), time_ms)

    def set_published(self, flow: str, topic: str, remote: str | None) -> None:
        with self._lock:
            pairs = self.published.setdefault(flow, {})
            if remote is None:
                pairs.pop(topic, None)
            else:
                pairs[topic] = remote

    def set_checkpoint(
        self, flow: str, key: tuple[str, str, int], entry: CheckpointEntry | None
    ) -> None:
        with self._lock:
            by_key = self.checkpoints.setdefault(flow, {})
            if entry is None:
                by_key.pop(key, None)
            else:
                by_key[key] = entry

    def set_verification(self, flow: str, summary: VerificationSummary | None) -> None:
        with self._lock:
            if summary is None:
                self.verifications.pop(flow, None)
            else:
                self.verifications[flow] = summary

    def set_verdict(self, verdict: ClusterVerdict) -> None:
        with self._lock:
            self.verdict = verdict
            self.probed = True

    def evict(self, history_ms: int, now_ms: int) -> None:
        with self._lock:
            for history in self.histories.values():
                history.evict(now_ms - history_ms)

    def mark_caught_up(self) -> None:
        with self._lock:
            self.caught_up = True
