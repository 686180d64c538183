"""A flow's query in Spark's real-time mode (`data.path.mode = real-time`).

In real-time mode Spark runs one long-running task per source partition for
each batch of `real-time.batch.ms`. A task writes every record as soon as it
reads it (`io.mirrorline.writer.RealTimeWriter`, the same copies, refusals and
dead letters as the micro-batch writer, through one producer shared by the
executor's tasks), so a record's age at the target is a fetch and a produce,
not a micro-batch.

As often as the executors' heartbeats (`spark.executor.heartbeatInterval`,
four a second for a driver with a real-time flow: `engine.session`), each task
makes a report of what the target has settled: for its source partition, the
offset below which every record is acknowledged (or needed no copy), with the
exact offset mapping of those records as runs, and its counters. Reports are
cumulative over the task: the executor's heartbeat carries the latest one to
the driver while the task runs, and Spark hands over the final one when the
task ends (`RealTimeSink.takeResults`). A report may come twice or late; its
sequence number tells, and a lost one is made good by the next. A task whose
copies failed reports that instead, and the flow stops the query at once
(`failure`) rather than when the task's next record comes.

`RealTimeResults` turns the reports into what is new since the last one it
handed over, and gives that to the flow's `BatchCommitter` within `POLL_S` of
its arrival: offset syncs, runs and progress are written as for a micro-batch.
So offset syncs and checkpoints stay about a heartbeat behind the records
however long a batch lasts, and batches can be long: each batch's end still
pauses the copying (the tasks end, Spark saves its logs, new tasks start and
seek), so the fewer the better. Batches are handed over in order: a later
batch's reports wait until every task of the one before has ended.

Guarantees: at-least-once, never exactly-once (Spark's real-time mode gives a
batch no transaction; the configuration refuses the combination). After a
stop, a crash or a lost leadership the flow starts from the saved progress:
what the tasks wrote after their last report reached the driver (under a
second of records) is written again.

Spark needs a task slot for every long-running task at once: a real-time flow
on N source partitions needs N free slots (`--master local[N]` or more, or N
executor cores on a cluster), and refuses to start with fewer.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from mirrorline.engine.batch_writer import PartitionResult, WriteSpec, partition_result

log = logging.getLogger(__name__)

SINK_CLASS = "io.mirrorline.writer.RealTimeSink"


class RealTimeSlotsMissing(RuntimeError):
    """Spark has fewer task slots than the real-time flow has source partitions."""


def start_real_time(
    frame: DataFrame, spec: WriteSpec, *, name: str, checkpoint: str, batch_ms: int, tasks: int
) -> tuple[StreamingQuery, object]:
    """Start `frame` (Spark's Kafka source on `tasks` partitions) in real-time mode.

    Returns the query and the JVM sink whose `takeResults()` gives the tasks' reports.
    """
    spark = frame.sparkSession
    slots = spark.sparkContext.defaultParallelism
    if slots < tasks:
        raise RealTimeSlotsMissing(
            f"flow {spec.flow}: real-time mode needs a task slot per source partition "
            f"({tasks}), and Spark has {slots}: run the driver with --master local[{tasks}] "
            "or more, or give the cluster more executor cores"
        )
    jvm = spark.sparkContext._jvm
    sink = getattr(jvm, SINK_CLASS).start(frame._jdf, spec.to_json(), name, checkpoint, batch_ms)
    return StreamingQuery(sink.query()), sink


# Counters a report holds for the whole task so far: what is new is the difference.
_COUNTERS = (
    "filtered",
    "skipped",
    "dropped",
    "routed",
    "refused",
    "dead_lettered",
    "bytes",
    "latency_count",
    "latency_sum_ms",
)


@dataclass
class _Handed:
    """What was handed over of one task's source partition: up to `next_offset`."""

    attempt: int
    next_offset: int
    counters: dict[str, int]


@dataclass
class _Task:
    """The latest report of one task of a batch, and what was handed over of it."""

    order: tuple[int, int] = (-1, 0)  # (attempt, sequence number) of the latest report
    final: bool = False
    logs: Sequence[Mapping] = ()
    handed: dict[tuple[str, int], _Handed] = field(default_factory=dict)


def new_since(summary: Mapping, attempt: int, handed: _Handed | None) -> dict | None:
    """The part of a cumulative summary not handed over yet, as a summary of its own.

    None while the summary holds nothing past what was handed over (a retried
    task's new attempt starts again from its batch's first offset: its records
    count from where the attempt before had reached).
    """
    start = int(summary["first_seen"]) if handed is None else handed.next_offset
    end = int(summary["next_offset"])
    if end <= start:
        return None
    before = handed.counters if handed is not None and handed.attempt == attempt else {}
    runs = []
    for source, target, count in summary["runs"]:
        skip = max(0, start - int(source))
        if skip < int(count):
            runs.append([int(source) + skip, int(target) + skip, int(count) - skip])
    delta = dict(summary)
    delta.update({name: max(0, int(summary[name]) - before.get(name, 0)) for name in _COUNTERS})
    delta.update(
        first_seen=start,
        records=sum(count for _, _, count in runs),
        runs=runs,
        first_offset=runs[0][0] if runs else None,
        first_target_offset=runs[0][1] if runs else None,
        last_offset=runs[-1][0] + runs[-1][2] - 1 if runs else None,
        last_target_offset=runs[-1][1] + runs[-1][2] - 1 if runs else None,
        refusals=summary["refusals"] if delta["refused"] else [],
    )
    return delta


class RealTimeResults:
    """Collects the tasks' reports and hands over what is new, batch by batch in order.

    `submit(batch_id, results, started)` is the committer's side; once it returns
    False (a stop, a failure, a lost leadership) nothing more is submitted.
    """

    POLL_S = 0.2

    def __init__(
        self,
        sink: object,
        name: str,
        tasks: int,
        lag_max: int,
        submit: Callable[[int, Sequence[PartitionResult], float], bool],
    ) -> None:
        self._sink = sink
        self._name = name
        self._tasks = tasks
        self._lag_max = lag_max
        self._submit = submit
        # Batch -> task (source partition index) -> its latest report.
        self._batches: dict[int, dict[int, _Task]] = {}
        self._ended_below = 0  # every batch below has ended and was handed over
        self._refused = False
        self._failure: str | None = None
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="real-time results", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Stop collecting; what the tasks reported before is still submitted."""
        self._stop.set()
        self._thread.join(timeout)
        try:
            self._sink.close()  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - stopping must not fail the driver
            log.warning("%s: closing the real-time sink: %s", self._name, exc)

    def failure(self) -> str | None:
        """Why a task stopped copying, once its report said so: the query must stop
        (the task itself fails only with its next record or its batch's end)."""
        return self._failure

    def _run(self) -> None:
        while True:
            stopping = self._stop.wait(self.POLL_S)
            try:
                self.collect()
            except Exception as exc:  # noqa: BLE001 - the query's own failure says more
                log.warning("%s: collecting the tasks' reports: %s", self._name, exc)
            if stopping:
                return

    def collect(self) -> None:
        """Take the reports that arrived; hand over what is new, in batch order."""
        rows = json.loads(self._sink.takeResults())  # type: ignore[attr-defined]
        if self._refused:
            return  # taken all the same, so that they do not pile up in the driver
        for row in rows:
            if row.get("failed") and self._failure is None:
                self._failure = str(row["failed"])
            batch_id = int(row["batch"])
            if batch_id < self._ended_below:
                continue  # a late heartbeat of a task that has ended
            task = self._batches.setdefault(batch_id, {}).setdefault(int(row["task"]), _Task())
            order = (int(row["attempt"]), int(row["seq"]))
            if task.final or order <= task.order:
                continue  # an older report
            task.order, task.final, task.logs = order, bool(row["final"]), row["logs"]
        while self._batches:
            batch_id = min(self._batches)
            tasks = self._batches[batch_id]
            results = [r for task in tasks.values() for r in self._new(task)]
            if results:
                started, self._started = self._started, time.monotonic()
                if not self._submit(batch_id, results, started):
                    # Stopping or failed: a later report alone would leave a hole in
                    # the saved progress, so this query submits nothing more.
                    self._refused = True
                    self._batches.clear()
                    return
            if len(tasks) < self._tasks or not all(task.final for task in tasks.values()):
                return  # a later batch waits for this one to end
            del self._batches[batch_id]
            self._ended_below = batch_id + 1

    def _new(self, task: _Task) -> list[PartitionResult]:
        """What the task's latest report adds to what was handed over."""
        attempt = task.order[0]
        out = []
        for summary in task.logs:
            key = (str(summary["topic"]), int(summary["partition"]))
            delta = new_since(summary, attempt, task.handed.get(key))
            if delta is None:
                continue
            counters = {name: int(summary[name]) for name in _COUNTERS}
            task.handed[key] = _Handed(attempt, int(delta["next_offset"]), counters)
            out.append(partition_result(delta, self._lag_max))
        return out
