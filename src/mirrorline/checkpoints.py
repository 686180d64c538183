"""Reading a checkpoints topic (`<source alias>.checkpoints.internal`) whole.

The topic is compacted with one partition, as in MM2, and keyed by (group,
topic, partition): its latest record per key is the group's latest checkpoint
for that partition. Mirrorline's checkpoint loop, the client API and the
`offsets` commands all read it this way, as MM2's `MirrorClient` does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from mirrorline.formats import Checkpoint, FormatError
from mirrorline.kafka import read_to_end

log = logging.getLogger(__name__)

CheckpointKey = tuple[str, str, int]  # (group, topic on the target, partition)


def checkpoint_key(checkpoint: Checkpoint) -> CheckpointKey:
    """The (group, topic, partition) a checkpoint is the latest of."""
    return checkpoint.group, checkpoint.topic, checkpoint.partition


def read_checkpoints(
    consumer_settings: Mapping[str, object],
    topic: str,
    *,
    group: str | None = None,
    missing_ok: bool = False,
    timeout: float = 60.0,
) -> dict[CheckpointKey, Checkpoint]:
    """The latest checkpoint per (group, topic, partition), for one group or all.

    Records that are not checkpoints are skipped with a warning, as MM2 does:
    one bad record must not hide every group's offsets. With `missing_ok`, a
    checkpoints topic that does not exist yet holds no checkpoints.
    """
    latest: dict[CheckpointKey, Checkpoint] = {}
    records = read_to_end(consumer_settings, topic, missing_ok=missing_ok, timeout=timeout)
    for msg in records:
        if msg.value() is None:  # neither MM2 nor Mirrorline deletes checkpoints
            continue
        try:
            checkpoint = Checkpoint.decode(msg.key(), msg.value())
        except FormatError as exc:
            log.warning("%s offset %d is not a checkpoint, skipped: %s", topic, msg.offset(), exc)
            continue
        if group is None or checkpoint.group == group:
            latest[checkpoint_key(checkpoint)] = checkpoint
    return latest
