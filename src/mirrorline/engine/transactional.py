"""Exactly-once mode: one Kafka transaction per source partition and task.

With `exactly.once.source.support = enabled`, the writer's tasks
(`jvm/writer`, `ExactlyOnceWriter`) write, for each source partition of their
input, in one transaction of the target cluster:

1. the partition's records: the producer's transactional id is
   `mirrorline.<flow>.<topic>.<partition>` (`transactional_id`), and
   initialising a producer with it fences every earlier one (a retried task, a
   task of a driver that lost the flow) and completes or aborts whatever it left
   open. Executors keep initialised producers between batches; one that another
   producer has fenced since fails at its first request and is replaced;
2. the partition's new progress record (`progress.PROGRESS_TOPIC`, with the
   batch's offset mapping as runs, so that a driver that dies before publishing
   the batch's offset syncs leaves them to the next one);
3. its committed position: the committed offset of the consumer group
   `mirrorline.position.<flow>` (`position_group`) on the remote
   topic-partition, an index that answers "how far has this partition been
   committed" with one request. The offset is the target offset after the
   flow's last copy in the partition (so `kafka-consumer-groups` shows something
   meaningful); its metadata holds the source position as JSON,
   ``{"next_offset": 1234, "version": 1}``.

Before writing, a task reads the partition's committed position (stable: no
transaction is open on it any more) and skips every record before it, so a
replayed batch writes nothing twice. The mapping of the skipped records is read
back from the progress record that committed them (the partition's latest) and
reported as the task's own: the driver may not have seen the attempt that wrote
them (its task failed after the commit, or its transaction was still open when a
taking-over driver read the progress). A record the target refuses fails the whole
transaction: under `errors.tolerance = all` the task aborts it and writes the
partition again, sending the refused records to the dead-letter topic in the
same transaction instead.

The driver saves no progress for such flows; it publishes the offset syncs and
runs after each batch, and at start republishes those kept in progress records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

POSITION_VERSION = 1


@dataclass(frozen=True)
class ExactlyOnceSpec:
    """Where exactly-once tasks keep their progress."""

    progress_topic: str
    # The consumer group whose committed offsets index each partition's progress.
    position_group: str
    # The target consumer's settings (Java names) for reading positions.
    consumer_settings: Mapping[str, str]


def transactional_id(flow: str, topic: str, partition: int) -> str:
    return f"mirrorline.{flow}.{topic}.{partition}"


def position_group(flow: str) -> str:
    return f"mirrorline.position.{flow}"
