"""The translation store's runs, kept in the target cluster so that a restart is fast.

MM2's offset-syncs topic holds syncs in time order, and a store rebuilt from it
has to read all of it: with one sync per `offset.lag.max` records, that is
millions of records for a busy flow. Mirrorline keeps the same knowledge as
runs (`control.translation`) in `mirrorline.offset-runs.internal`, a compacted
topic on the target with **one record per run**: a run that grows is
rewritten under the same key, and compaction keeps the newest. A stream without
discontinuities is one run per partition however long it gets; every
compaction gap, aborted transaction or (exactly-once) transaction marker adds
one. Runs are deleted (tombstones) once the source log start has passed them,
so what a restart reads is bounded by the runs whose source records still
exist, plus what the log cleaner has not compacted yet (the topic rolls a
segment every minute so that it can).

Record format, version 1 (JSON, UTF-8, sorted keys, no spaces):

- key: ``{"flow": "east->west", "partition": 0, "run": 1200, "topic": "orders"}``
  (``run`` is the run's first source offset);
- value: ``{"downstream": 1180, "records": 500, "upstream": 1200, "version": 1}``:
  source offsets 1200 to 1699 were written at target offsets 1180 to 1679;
- a null value deletes the run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping

from confluent_kafka import Message

from mirrorline.control.translation import Changes, Run, SourcePartition
from mirrorline.formats import json_record
from mirrorline.internal_topic import COMPACTED, InternalTopic
from mirrorline.kafka import ClusterClients, read_to_end

log = logging.getLogger(__name__)

RUNS_TOPIC = "mirrorline.offset-runs.internal"
FORMAT_VERSION = 1

_TOPIC_CONFIG = {
    **COMPACTED,
    "min.cleanable.dirty.ratio": "0.1",
    "segment.ms": "60000",
}


class RunLog:
    """Writes one flow's run changes to the runs topic and reads them back at start."""

    def __init__(self, flow: str, target: ClusterClients, *, replication_factor: int = -1) -> None:
        self.flow = flow
        self._topic = InternalTopic(
            RUNS_TOPIC,
            target,
            what=f"flow {flow}: offset runs",
            config=_TOPIC_CONFIG,
            replication_factor=replication_factor,
        )

    def ensure_topic(self) -> None:
        self._topic.ensure()

    def load(self, timeout: float = 60.0) -> list[tuple[SourcePartition, Run]]:
        return runs_of(self.flow, self._topic.read(timeout=timeout))

    def persist(self, changes: Changes, timeout: float = 60.0) -> None:
        """Write the runs that changed and delete the removed ones; waits for the acks."""
        if not changes:
            return
        records: list[tuple[bytes, bytes | None]] = [
            (_key(self.flow, p, start), None) for p, start in sorted(changes.deletes)
        ]
        records += [
            (_key(self.flow, p, start), _value(run)) for (p, start), run in changes.upserts.items()
        ]
        self._topic.write(records, timeout=timeout)

    def close(self) -> None:
        self._topic.close()


def read_runs(
    consumer_settings: Mapping[str, object],
    flow: str,
    *,
    missing_ok: bool = False,
    timeout: float = 60.0,
) -> list[tuple[SourcePartition, Run]]:
    """The runs of `flow` kept on the cluster that `consumer_settings` reach.

    The latest record of each run, in the order they were written, which is the
    order `TranslationStore.load` expects. With `missing_ok`, a cluster without
    a runs topic has no runs.
    """
    records = read_to_end(consumer_settings, RUNS_TOPIC, missing_ok=missing_ok, timeout=timeout)
    return runs_of(flow, records)


def runs_of(flow: str, records: Iterable[Message]) -> list[tuple[SourcePartition, Run]]:
    """The latest record of each run of `flow` among the runs topic's `records`, in order."""
    runs: dict[tuple[SourcePartition, int], tuple[int, Run]] = {}
    for msg in records:
        offset = msg.offset() or 0
        try:
            key = json.loads(msg.key() or b"")
            if key["flow"] != flow:
                continue
            slot = ((key["topic"], int(key["partition"])), int(key["run"]))
            if msg.value() is None:
                runs.pop(slot, None)
                continue
            value = json.loads(msg.value() or b"")
            if value.get("version") != FORMAT_VERSION:
                continue
            run = Run(int(value["upstream"]), int(value["downstream"]), int(value["records"]))
            runs[slot] = (offset, run)
        except (TypeError, ValueError, KeyError, AttributeError):
            log.warning("%s offset %d is not an offset run, skipped", RUNS_TOPIC, offset)
    ordered = sorted(runs.items(), key=lambda item: item[1][0])
    return [(partition, run) for (partition, _), (_, run) in ordered]


def _key(flow: str, partition: SourcePartition, start: int) -> bytes:
    topic, number = partition
    return json_record({"flow": flow, "partition": number, "run": start, "topic": topic})


def _value(run: Run) -> bytes:
    return json_record(
        {
            "downstream": run.downstream,
            "records": run.records,
            "upstream": run.upstream,
            "version": FORMAT_VERSION,
        }
    )
