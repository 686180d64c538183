"""A flow's replication progress, kept in the target cluster.

The progress topic (`mirrorline.progress.internal`, compacted, one partition)
holds, per flow and source partition, the next source offset to replicate. It is
written once the target holds a batch's records (at-least-once: by the driver
after the batch; exactly-once: by each task, in the transaction that writes the
records), and it is what a flow resumes from: Spark's checkpoint directory is
never the source of truth, so a flow continues correctly when its driver moves
to another host.

Every write is transactional, with one transactional id per flow for the
driver's writes: a driver that takes a flow over fences the previous one, whose
later progress writes then fail instead of moving the flow back.

Record format, version 1 (JSON, UTF-8):

- key: ``{"flow": "east->west", "partition": 0, "topic": "orders"}`` (sorted keys,
  no spaces, so that compaction keeps one record per flow and partition);
- value: ``{"next_offset": 1234, "updated_ms": 1700000000000, "version": 1}``,
  with, when written by an exactly-once task, ``"runs": [[source start, target
  start, records], ...]``: the exact offset mapping of the batch it completes,
  from which the offset syncs are chosen (`sync_points`). The driver publishes
  those syncs after the batch; if it dies before, the next driver publishes them
  from here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mirrorline.engine.sync_points import Run
from mirrorline.formats import json_record
from mirrorline.internal_topic import COMPACTED, InternalTopic
from mirrorline.kafka import ClusterClients

PROGRESS_TOPIC = "mirrorline.progress.internal"
FORMAT_VERSION = 1

SourcePartition = tuple[str, int]  # (source topic, partition)


@dataclass
class SavedProgress:
    """What the progress topic says about one flow."""

    next_offsets: dict[SourcePartition, int] = field(default_factory=dict)
    # The offset mapping stored with each partition's latest progress (exactly-once mode).
    last_runs: dict[SourcePartition, list[Run]] = field(default_factory=dict)


def progress_record(
    flow: str,
    topic: str,
    partition: int,
    next_offset: int,
    runs: Iterable[Run] = (),
) -> tuple[bytes, bytes]:
    """The (key, value) of one progress entry, in format version 1."""
    value: dict[str, object] = {
        "next_offset": next_offset,
        "updated_ms": int(time.time() * 1000),
        "version": FORMAT_VERSION,
    }
    mapping = [list(run) for run in runs]
    if mapping:
        value["runs"] = mapping
    return _key(flow, topic, partition), json_record(value)


def driver_transactional_id(flow: str) -> str:
    """The transactional id of the driver's progress writes for `flow`."""
    return f"mirrorline.progress.{flow}"


class ProgressStore:
    """Reads and writes one flow's progress in the target cluster."""

    def __init__(
        self,
        flow: str,
        target: ClusterClients,
        *,
        topic: str = PROGRESS_TOPIC,
        replication_factor: int = -1,
    ) -> None:
        self.flow = flow
        self.topic = topic
        self._topic = InternalTopic(
            topic,
            target,
            what=f"flow {flow}: progress",
            config=COMPACTED,
            replication_factor=replication_factor,
            transactional_id=driver_transactional_id(flow),
            read_committed=True,
        )

    def ensure_topic(self) -> None:
        self._topic.ensure()

    def fence(self) -> None:
        """Take over the flow's progress: earlier drivers' progress writes fail from now on."""
        self._topic.open()

    def load(
        self, timeout: float = 60.0, *, missing_ok: bool = False
    ) -> dict[SourcePartition, int]:
        """The flow's next source offset per partition, read up to the topic's end."""
        return self.load_state(timeout, missing_ok=missing_ok).next_offsets

    def load_state(self, timeout: float = 60.0, *, missing_ok: bool = False) -> SavedProgress:
        """The flow's saved progress, read up to the last committed record.

        Read committed: a transaction left open by a killed writer ends the read
        where it starts (its records are not progress), instead of stalling it.
        With `missing_ok`, a cluster without a progress topic has no progress.
        """
        saved = SavedProgress()
        for msg in self._topic.read(missing_ok=missing_ok, timeout=timeout):
            entry = _decode(msg.key(), msg.value())
            if entry is None or entry[0] != self.flow:
                continue
            _, source_partition, value = entry
            if value is None:
                saved.next_offsets.pop(source_partition, None)
                saved.last_runs.pop(source_partition, None)
            else:
                saved.next_offsets[source_partition] = int(value["next_offset"])
                saved.last_runs[source_partition] = [
                    (int(s), int(t), int(n)) for s, t, n in value.get("runs", ())
                ]
        return saved

    def save(self, progress: Mapping[SourcePartition, int], timeout: float = 60.0) -> None:
        """Write the given partitions' next offsets and wait until they are committed."""
        self._topic.write(
            (
                progress_record(self.flow, topic, partition, offset)
                for (topic, partition), offset in progress.items()
            ),
            timeout=timeout,
        )

    def close(self) -> None:
        self._topic.close()


def _key(flow: str, topic: str, partition: int) -> bytes:
    return json_record({"flow": flow, "partition": partition, "topic": topic})


def _decode(
    key: bytes | None, value: bytes | None
) -> tuple[str, SourcePartition, dict[str, Any] | None] | None:
    """(flow, (topic, partition), value dict or None for a deleted entry), or None."""
    if key is None:
        return None
    try:
        k = json.loads(key)
        source_partition = (k["topic"], int(k["partition"]))
        if value is None:
            return k["flow"], source_partition, None
        v = json.loads(value)
        if v.get("version") != FORMAT_VERSION or "next_offset" not in v:
            return None
        return k["flow"], source_partition, v
    except (TypeError, ValueError, KeyError, AttributeError):
        return None  # not a record of this format: ignored, never fatal
