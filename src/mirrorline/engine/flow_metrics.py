"""A flow's raw metrics, written into its target cluster for the service to aggregate.

The flow's parts hand their samples over as they happen, without waiting:

- the batch committer, once a batch's bookkeeping is written (`batch_committed`);
- the checkpointer, once a round's checkpoints are acknowledged (`checkpoints_written`);
- and every `emit.metrics.interval.seconds` this reporter itself takes the
  flow's status and computes its lag per source partition (the source's log
  end offsets, one request per broker, minus the flow's committed next offsets);
  also within half a second of a change of the flow's state, so that readers
  of the status (the service, `status`, a failover's checks) never act on a
  state the flow has left an interval ago.

A thread of the reporter's own writes them to `mirrorline.metrics.internal` on
the target (format: `raw_metrics`), so that neither the data path nor the
control loops ever wait for it. Its producer retries for as long as it takes
(`message.timeout.ms = 0`, idempotent, so neither lost nor duplicated nor out of
order): samples taken while the target does not answer are written when it
answers again, and the service then shows the outage in the history too. What
waits is bounded (`BUFFER_KBYTES`, `WAITING_MAX`); beyond it samples are dropped
and counted, never the flow's work.

A driver that stops writes a last status, `stopped`, and waits a few seconds
for it to be acknowledged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence

from confluent_kafka import KafkaError, Producer

from mirrorline.engine.batch_writer import PartitionResult
from mirrorline.engine.progress import SourcePartition
from mirrorline.engine.status import FlowStatus
from mirrorline.flow_context import FlowContext
from mirrorline.kafka import ensure_topic, partition_offsets
from mirrorline.raw_metrics import (
    METRICS_TOPIC,
    METRICS_TOPIC_CONFIG,
    BatchSample,
    CheckpointLatency,
    CheckpointSample,
    Origin,
    PartitionBatch,
    PartitionLag,
    Sample,
    StatusSample,
    encode,
)

log = logging.getLogger(__name__)

# What may wait for a target that does not answer, at most (librdkafka's queue),
# and samples waiting for the topic to exist.
BUFFER_KBYTES = 16 * 1024
WAITING_MAX = 10_000
_TIMEOUT_S = 10.0
_CLOSE_S = 5.0


class MetricsReporter:
    """Writes one flow's raw metrics on a thread of its own (see the module)."""

    def __init__(
        self,
        context: FlowContext,
        driver: str,
        *,
        interval: float,
        status: Callable[[], FlowStatus],
        positions: Callable[[], Mapping[SourcePartition, int]],
        topic: str = METRICS_TOPIC,
    ) -> None:
        """`status`: the flow's status now; `positions`: its committed next offsets."""
        self._context = context
        self._flow = context.flow
        self._driver = driver
        self._interval = interval
        self._status = status
        self._positions = positions
        self.topic = topic
        producer = {
            k: v
            for k, v in context.target.producer_settings.items()
            if k not in ("delivery.timeout.ms", "transactional.id")
        }
        self._producer_settings = {
            **producer,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 50,
            "message.timeout.ms": 0,  # retried until the target answers (see the module)
            "queue.buffering.max.kbytes": BUFFER_KBYTES,
            "allow.auto.create.topics": False,
            "log_level": 0,  # the flow's status says when its target does not answer
        }
        self._lock = threading.Lock()
        # Handed over, not yet given to the producer (the topic may not exist yet).
        self._waiting: deque[Sample] = deque()
        self._producer: Producer | None = None
        self._topic_ready = threading.Event()
        self._dropped = 0
        self._state_sent: str | None = None  # the state of the latest status sample
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the flow's parts call ----------------------------------------------------

    def start(self) -> None:
        """Start the thread (once; later calls do nothing)."""
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(
                target=self._run, name=f"metrics {self._context.name}", daemon=True
            )
            self._thread.start()

    def ensure_topic(self) -> None:
        """Create the metrics topic unless it exists: the flow does it when it starts, with
        its other topics (a driver standing by leaves it to the reporter's thread)."""
        ensure_topic(
            self._context.target.admin,
            self.topic,
            replication_factor=self._context.settings.replication_factor,
            config=METRICS_TOPIC_CONFIG,
            timeout=_TIMEOUT_S,
        )
        self._topic_ready.set()

    def batch_committed(self, batch_id: int, results: Sequence[PartitionResult]) -> None:
        """A batch's bookkeeping is written: sample what it replicated, per partition."""
        partitions = self._partition_batches(results)
        if partitions:
            self._hand_over(BatchSample(self._origin(), batch_id, partitions))

    def checkpoints_written(self, latencies: Sequence[CheckpointLatency]) -> None:
        if latencies:
            self._hand_over(CheckpointSample(self._origin(), tuple(latencies)))

    def close(self) -> None:
        """Write the flow's last status (it is stopping) and end the thread.

        Without the topic (a target that has not answered yet) there is nowhere to write
        that status to, so a thread still creating it is not waited for.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(_TIMEOUT_S + _CLOSE_S if self._topic_ready.is_set() else _CLOSE_S)

    # -- samples -----------------------------------------------------------------------

    def _partition_batches(self, results: Iterable[PartitionResult]) -> tuple[PartitionBatch, ...]:
        """One entry per source partition (several tasks may have written one)."""
        merged: dict[SourcePartition, PartitionBatch] = {}
        for r in results:
            if not r.records:
                continue
            entry = PartitionBatch(
                r.topic,
                self._flow.remote_topic(r.topic),
                r.partition,
                r.records,
                r.bytes,
                r.latency_count,
                r.latency_sum_ms,
                r.latency_min_ms,
                r.latency_max_ms,
            )
            before = merged.get(r.source_partition)
            merged[r.source_partition] = entry if before is None else _merge(before, entry)
        return tuple(merged[tp] for tp in sorted(merged))

    def status_sample(self) -> StatusSample:
        """The flow's status now, with its lag when the flow leads and the source answers."""
        status = self._status()
        lag: tuple[PartitionLag, ...] = ()
        if status.state not in ("standby", "stopped") and status.topics:
            lag = self._lag(status.topics)
        return StatusSample(
            self._origin(),
            state=status.state,
            reason=status.reason,
            active_driver=status.active_driver,
            exactly_once=status.exactly_once,
            interval_ms=int(self._interval * 1000),
            topics={t: self._flow.remote_topic(t) for t in status.topics},
            problems=status.problems,
            lag=lag,
        )

    def _lag(self, topics: Iterable[str]) -> tuple[PartitionLag, ...]:
        wanted = set(topics)
        positions = {tp: o for tp, o in self._positions().items() if tp[0] in wanted and o >= 0}
        try:
            ends = partition_offsets(
                self._context.source.admin,
                positions,
                "latest",
                timeout=_TIMEOUT_S,
                what=f"flow {self._context.name}: source cluster {self._flow.source}",
            )
        except Exception as exc:  # noqa: BLE001 - the status says the source does not answer
            log.debug("flow %s: no lag this time: %s", self._context.name, exc)
            return ()
        return tuple(
            PartitionLag(t, p, max(0, ends[(t, p)] - positions[(t, p)])) for t, p in sorted(ends)
        )

    def _origin(self) -> Origin:
        flow = self._flow
        return Origin(flow.name, flow.source, flow.target, self._driver, int(time.time() * 1000))

    def _hand_over(self, sample: Sample) -> None:
        with self._lock:
            if len(self._waiting) >= WAITING_MAX:
                self._waiting.popleft()
                self._drop()
            self._waiting.append(sample)

    # -- the thread --------------------------------------------------------------------

    def _run(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            if time.monotonic() >= due or self._status().state != self._state_sent:
                due = time.monotonic() + self._interval
                self._guarded(self._sample_status)
            self._guarded(self._send_waiting)
            self._stop.wait(min(0.5, max(0.0, due - time.monotonic())))
        self._guarded(lambda: self._hand_over(self.status_sample()))
        self._guarded(self._send_waiting)
        if self._producer is not None:
            left = self._producer.flush(_CLOSE_S)
            if left:
                log.warning(
                    "flow %s: %d raw metrics records not written to %s (the target does not "
                    "answer)",
                    self._context.name,
                    left,
                    self._flow.target,
                )
            # Its last reference: the client and its threads end here, in this thread,
            # not whenever the stopped flow's parts are dropped.
            self._producer = None

    def _sample_status(self) -> None:
        sample = self.status_sample()
        self._state_sent = sample.state
        self._hand_over(sample)

    def _send_waiting(self) -> None:
        producer = self._open()
        if producer is None:
            return
        with self._lock:
            waiting, self._waiting = self._waiting, deque()
        for sample in waiting:
            for key, value in encode(sample):
                try:
                    producer.produce(
                        self.topic,
                        key=key,
                        value=value,
                        partition=0,
                        timestamp=sample.origin.time_ms,
                        on_delivery=self._delivered,
                    )
                except BufferError:
                    self._drop()
        producer.poll(0)

    def _open(self) -> Producer | None:
        """The producer, once the topic exists (created here; retried every round)."""
        if self._producer is None:
            if not self._topic_ready.is_set():
                try:
                    self.ensure_topic()
                except Exception as exc:  # noqa: BLE001 - retried; samples wait meanwhile
                    log.debug("flow %s: raw metrics topic not ready: %s", self._context.name, exc)
                    return None
            self._producer = Producer(self._producer_settings)
        return self._producer

    def _delivered(self, error: KafkaError | None, _msg) -> None:
        if error is not None:  # only fatal errors: the producer retries everything else
            log.warning("flow %s: raw metrics not written: %s", self._context.name, error.str())

    def _drop(self) -> None:
        self._dropped += 1
        if self._dropped == 1 or self._dropped % 1000 == 0:
            log.warning(
                "flow %s: %d raw metrics samples dropped: too many wait for %s",
                self._context.name,
                self._dropped,
                self._flow.target,
            )

    def _guarded(self, action: Callable[[], object]) -> None:
        try:
            action()
        except Exception:  # noqa: BLE001 - metrics never stop the flow; the next round retries
            log.exception("flow %s: raw metrics", self._context.name)


def _merge(a: PartitionBatch, b: PartitionBatch) -> PartitionBatch:
    if not a.latency_count:
        lowest = b.latency_min_ms
    elif not b.latency_count:
        lowest = a.latency_min_ms
    else:
        lowest = min(a.latency_min_ms, b.latency_min_ms)
    return PartitionBatch(
        a.topic,
        a.remote_topic,
        a.partition,
        a.records + b.records,
        a.bytes + b.bytes,
        a.latency_count + b.latency_count,
        a.latency_sum_ms + b.latency_sum_ms,
        lowest,
        max(a.latency_max_ms, b.latency_max_ms),
    )
