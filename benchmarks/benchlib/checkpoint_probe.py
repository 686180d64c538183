"""Checkpoint age under a steady load: how far behind a group's checkpoints trail it.

A child process plays a consumer group that keeps up with the stream: about
every COMMIT_INTERVAL_S it commits the source topic's end offsets for its group
(GROUP and the topic, so that interleaved runs keep apart; a group without members
takes commits from any client) and notes when. Meanwhile it reads
the contender's checkpoints topic on the target (`<source>.checkpoints.internal`,
MM2's format, which both write) and notes when each checkpoint of that group first
appears. Every tuned contender checkpoints and lists groups every second
(CHECKPOINT_LINES).

At every commit the probe asks: where would the group resume on the target if it
failed over now? At its partition's latest checkpoint, whose upstream offset the
group committed at some earlier time C. The checkpoint's age is now - C: the
stretch of the stream the group would read again (MM2 translates an offset ahead
of its newest offset sync to that sync's position; Mirrorline checkpoints only
offsets it can translate exactly, and keeps the previous checkpoint meanwhile).

The commits come at irregular moments (COMMIT_JITTER: each interval drawn between
half and one and a half times COMMIT_INTERVAL_S, the same draws for every
contender). A contender reads the group's offsets on its own once-a-second
schedule; commits on a grid of exactly one second would keep one phase against
that schedule for the whole run, and the run's ages would all fall near one
second or all near two, whichever phase the start-up happened to leave (a
600-s run of Mirrorline gave a median of 1,970 ms, the runs before it 1,001).
At irregular moments every phase is sampled, as a group's own commits would.
"""

from __future__ import annotations

import random
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from benchlib.common import percentile
from benchlib.turns import Slot, window_of
from mirrorline.formats import Checkpoint, FormatError

GROUP = "mirrorline-bench-checkpointed"
COMMIT_INTERVAL_S = 1.0
# How far an interval between commits strays from COMMIT_INTERVAL_S, as a share of it.
COMMIT_JITTER = 0.5
# The draws of the intervals: the same for every contender and run.
COMMIT_SEED = 20261204
# For every tuned contender of a steady workload: both checkpoint as often as they can.
CHECKPOINT_LINES = (
    "emit.checkpoints.interval.seconds = 1",
    "refresh.groups.interval.seconds = 1",
)


def _now_ms() -> int:
    return int(time.time() * 1000)


def probe(source, target, topic, remote, checkpoints_topic, partitions, stop, results) -> None:
    """Child process: commit and watch until `stop`, then put the raw observations on
    `results`: {"commits": [(partition, offset, ms)], "checkpoints": [(partition,
    upstream offset, first seen ms)], "errors": [...]}."""
    group = f"{GROUP}-{topic}"
    committer = Consumer({"bootstrap.servers": source, "group.id": group})
    reader = Consumer(
        {
            "bootstrap.servers": target,
            "group.id": f"mirrorline-bench-checkpoint-reader-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    reader.subscribe([checkpoints_topic])
    commits: list[tuple[int, int, int]] = []
    seen: dict[tuple[int, int], int] = {}
    errors: list[str] = []
    intervals = random.Random(COMMIT_SEED)
    next_commit = time.monotonic()
    try:
        while not stop.is_set():
            if time.monotonic() >= next_commit:
                stray = intervals.uniform(-COMMIT_JITTER, COMMIT_JITTER)
                next_commit += COMMIT_INTERVAL_S * (1 + stray)
                try:
                    ends = [
                        TopicPartition(topic, p, _end(committer, topic, p))
                        for p in range(partitions)
                    ]
                    committer.commit(offsets=ends, asynchronous=False)
                    at = _now_ms()
                    commits += [(tp.partition, tp.offset, at) for tp in ends]
                except KafkaException as exc:
                    errors.append(str(exc))
            msg = reader.poll(0.05)
            if msg is None or msg.error() or msg.value() is None:
                continue
            try:
                checkpoint = Checkpoint.decode(msg.key(), msg.value())
            except FormatError:
                continue
            if checkpoint.group == group and checkpoint.topic == remote:
                seen.setdefault((checkpoint.partition, checkpoint.upstream_offset), _now_ms())
    finally:
        committer.close()
        reader.close()
    results.put(
        {
            "commits": commits,
            "checkpoints": [(p, offset, at) for (p, offset), at in seen.items()],
            "errors": errors[:3],
        }
    )


def _end(consumer: Consumer, topic: str, partition: int) -> int:
    return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=5)[1]


def checkpoint_age(observed: dict, windows: list[Slot]) -> dict:
    """The checkpoint's age at every commit made in `windows` (see the module docstring)."""
    committed_at: dict[tuple[int, int], int] = {}
    for partition, offset, at in observed["commits"]:
        committed_at.setdefault((partition, offset), at)  # the first commit of an offset
    # Per partition, the checkpoints in the order they appeared.
    appeared: dict[int, list[tuple[int, int]]] = {}
    for partition, offset, at in sorted(observed["checkpoints"], key=lambda c: c[2]):
        appeared.setdefault(partition, []).append((at, offset))
    ages, without = [], 0
    for partition, _, now in observed["commits"]:
        if window_of(windows, now) is None:
            continue
        latest = [offset for at, offset in appeared.get(partition, []) if at <= now]
        if not latest or (partition, latest[-1]) not in committed_at:
            without += 1
            continue
        ages.append(now - committed_at[(partition, latest[-1])])
    ages.sort()
    return {
        "samples": len(ages) + without,
        "without_checkpoint": without,
        "checkpoints": len(observed["checkpoints"]),
        "age_p50_ms": percentile(ages, 50) if ages else None,
        "age_p99_ms": percentile(ages, 99) if ages else None,
        "age_max_ms": ages[-1] if ages else None,
        "errors": observed["errors"],
    }
