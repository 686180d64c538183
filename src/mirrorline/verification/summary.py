"""The last verification of a flow, kept in its target cluster for the service to show.

`mirrorline verify` writes one small record per flow into
`mirrorline.metadata.internal` on the flow's target, the compacted topic
where each flow already publishes its remote topics and which the service
already reads (`control.remote_topics`). Its key names a kind of record of
its own, so compaction keeps the newest verification of each flow next to
the flow's topic pairs, and readers of those pairs (whose keys carry a
``topic``) skip it:

- key: ``{"flow":"east->west","kind":"verification","version":1}``
- value: ``{"checked":1000,"different":0,"extra":0,"finished_ms":...,
  "misplaced":0,"missing":0,"not_covered":0,"not_yet_copied":12,"since":null,
  "started_ms":...,"topics":null,"until":null,"verdict":"identical","version":1}``

(UTF-8 JSON, sorted keys, no spaces). ``topics`` is the `--topics` selection
(null: every topic of the flow), ``since``/``until`` as given on the command
line. Readers skip records of other versions.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from mirrorline.control.remote_topics import METADATA_TOPIC
from mirrorline.formats import json_record
from mirrorline.internal_topic import InternalTopic
from mirrorline.kafka import ClusterClients
from mirrorline.verification.report import VerifyReport

KIND = "verification"
FORMAT_VERSION = 1
_TOPIC_CONFIG = {"cleanup.policy": "compact"}  # as the remote-topic metadata creates it


@dataclass(frozen=True)
class VerificationSummary:
    """What the service shows of a flow's last verification."""

    verdict: str  # identical or different
    started_ms: int
    finished_ms: int
    checked: int
    missing: int
    extra: int
    different: int
    misplaced: int
    not_yet_copied: int
    not_covered: int
    since: str | None = None
    until: str | None = None
    topics: str | None = None

    @property
    def differences(self) -> int:
        return self.missing + self.extra + self.different + self.misplaced

    @classmethod
    def of(cls, report: VerifyReport, topics: str | None) -> VerificationSummary:
        totals = report.totals()
        return cls(
            verdict="identical" if report.identical else "different",
            started_ms=report.started_ms,
            finished_ms=report.finished_ms,
            checked=totals["checked"],
            missing=totals["missing"],
            extra=totals["extra"],
            different=totals["different"],
            misplaced=totals["misplaced"],
            not_yet_copied=totals["not_yet_copied"],
            not_covered=totals["not_covered"],
            since=report.since,
            until=report.until,
            topics=topics,
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "differences": self.differences}


def summary_key(flow: str) -> bytes:
    return json_record({"flow": flow, "kind": KIND, "version": FORMAT_VERSION})


def summary_value(summary: VerificationSummary) -> bytes:
    return json_record({**asdict(summary), "version": FORMAT_VERSION})


def decode_summary(
    key: bytes | None, value: bytes | None
) -> tuple[str, VerificationSummary | None] | None:
    """(flow, its last verification or None when deleted), or None: another kind of record."""
    if key is None:
        return None
    try:
        k = json.loads(key)
        if k.get("kind") != KIND or k.get("version") != FORMAT_VERSION:
            return None
        flow = str(k["flow"])
        if value is None:
            return flow, None
        v = json.loads(value)
        if v.pop("version", None) != FORMAT_VERSION:
            return None
        return flow, VerificationSummary(**v)
    except (TypeError, ValueError, KeyError, AttributeError):
        return None  # not a record of this format: ignored, never fatal


def save_summary(
    flow: str,
    target: ClusterClients,
    summary: VerificationSummary,
    *,
    replication_factor: int = -1,
    timeout: float = 30.0,
) -> None:
    """Write `summary` as `flow`'s last verification; `KafkaOperationError` when it fails."""
    topic = InternalTopic(
        METADATA_TOPIC,
        target,
        what=f"flow {flow}: last verification",
        config=_TOPIC_CONFIG,
        replication_factor=replication_factor,
    )
    try:
        topic.ensure(timeout=timeout)
        topic.write([(summary_key(flow), summary_value(summary))], timeout=timeout)
    finally:
        topic.close()
