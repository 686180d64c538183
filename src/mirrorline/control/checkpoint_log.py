"""A flow's checkpoints topic: what was written there, and how long it took.

The checkpointer (`control.checkpointing`) decides which checkpoint each group
partition gets; this writes them to `<source>.checkpoints.internal` on the
target (created at the first round, so that a topic that cannot be created is
a problem of the checkpoint loop, not of the flow's replication), remembers the
last one written per group, topic and partition (read back from the topic at
the first round, and again after another driver wrote it: `forget`), and keeps
the checkpoint latencies the flow's status and raw metrics report: from reading
a group's committed offsets on the source to the target's acknowledgement.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from mirrorline.checkpoints import CheckpointKey, checkpoint_key, read_checkpoints
from mirrorline.flow_context import FlowContext
from mirrorline.formats import Checkpoint
from mirrorline.internal_topic import InternalTopic
from mirrorline.raw_metrics import CheckpointLatency

# How many recent checkpoint latencies the percentiles are computed over.
LATENCY_WINDOW = 2000

# A checkpoint to write, its source topic, and when its group's offset was read
# (`time.monotonic()`).
Pending = tuple[Checkpoint, str, float]


class CheckpointLog:
    """One flow's checkpoints topic, what it holds, and the latencies of writing it."""

    def __init__(
        self,
        context: FlowContext,
        on_written: Callable[[Sequence[CheckpointLatency]], None] | None = None,
    ) -> None:
        """`on_written` is told the latencies of each write (it must not block)."""
        flow = context.flow
        self.topic = flow.checkpoints_topic
        self._on_written = on_written
        self._target_consumer = context.target.consumer_settings
        self._topic = InternalTopic(
            self.topic,
            context.target,
            what=f"flow {flow.name}: checkpoints",
            config={"cleanup.policy": "compact"},
            replication_factor=context.settings.checkpoints_replication_factor,
        )
        self._emitted: dict[CheckpointKey, Checkpoint] | None = None  # None: not read yet
        self._lock = threading.Lock()  # the status is read from another thread
        self._latencies_ms: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self.count = 0

    def forget(self) -> None:
        """Read the topic again before the next write (another driver wrote it)."""
        self._emitted = None

    def emitted(self) -> dict[CheckpointKey, Checkpoint]:
        """The last checkpoint written per group, topic and partition (see the module)."""
        if self._emitted is None:
            self._topic.ensure()
            self._emitted = read_checkpoints(self._target_consumer, self.topic)
        return self._emitted

    def write(self, checkpoints: Sequence[Pending]) -> int:
        """Write the checkpoints that differ from the last one written for their group
        partition, and count how long each took since its offset was read; how many
        were written. The first call creates the topic, even with nothing to write."""
        emitted = self.emitted()
        pending = [p for p in checkpoints if emitted.get(checkpoint_key(p[0])) != p[0]]
        if not pending:
            return 0
        self._topic.write((c.key(), c.value()) for c, _, _ in pending)
        acknowledged = time.monotonic()
        for checkpoint, _, _ in pending:
            emitted[checkpoint_key(checkpoint)] = checkpoint
        latencies = [
            CheckpointLatency(
                c.group, topic, c.topic, c.partition, int((acknowledged - read_at) * 1000)
            )
            for c, topic, read_at in pending
        ]
        with self._lock:
            self._latencies_ms.extend(entry.latency_ms for entry in latencies)
        self.count += len(pending)
        if self._on_written is not None:
            self._on_written(latencies)
        return len(pending)

    def latency_percentiles(self) -> tuple[float | None, float | None]:
        """p50 and p99 of the recent latencies in ms (None before the first write)."""
        with self._lock:
            ordered = sorted(self._latencies_ms)
        return _percentile(ordered, 0.50), _percentile(ordered, 0.99)

    def close(self) -> None:
        self._topic.close()


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
