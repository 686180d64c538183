"""A flow's query in Spark's real-time mode (`data.path.mode = real-time`).

In real-time mode Spark runs one long-running task per source partition for
each batch of `real-time.batch.ms`. A task writes every record as soon as it
reads it (`io.mirrorline.writer.RealTimeWriter`, the same copies, refusals and
dead letters as the micro-batch writer, through one producer shared by the
executor's tasks), so a record's age at the target is a
fetch and a produce, not a micro-batch. At the end of a batch each task waits
for its acknowledgements and reports what it wrote, one row per task, through a
Spark accumulator (`RealTimeSink.takeResults`).

`RealTimeResults` hands each batch to the flow's `BatchCommitter` once every
task of the batch has reported, in batch order: offset syncs, runs and progress
are written as for a micro-batch, only once per batch instead of every few
hundred milliseconds. Checkpoints therefore translate at most one batch behind.

Guarantees: at-least-once, never exactly-once (Spark's real-time mode gives a
batch no transaction; the configuration refuses the combination). What a batch
wrote before a stop, a crash or a lost leadership is written again from the
saved progress: a restart duplicates up to one batch of records, where a
micro-batch flow's orderly stop duplicates none.

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


class RealTimeResults:
    """Collects the tasks' reports and submits whole batches, in order.

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
        # Batch -> task (source partition index) -> the task's summaries.
        self._pending: dict[int, dict[int, list[Mapping]]] = {}
        self._refused = False
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="real-time results", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Stop collecting; what finished before is still submitted."""
        self._stop.set()
        self._thread.join(timeout)

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
        """Take the reports that arrived; submit every batch all of whose tasks reported."""
        rows = json.loads(self._sink.takeResults())  # type: ignore[attr-defined]
        if self._refused:
            return  # taken all the same, so that they do not pile up in the driver
        for row in rows:
            self._pending.setdefault(int(row["batch"]), {})[int(row["task"])] = row["logs"]
        for batch_id in sorted(self._pending):
            if len(self._pending[batch_id]) < self._tasks:
                break  # batches end in order: a later one waits for this one
            tasks = self._pending.pop(batch_id)
            results = [
                partition_result(summary, self._lag_max)
                for summaries in tasks.values()
                for summary in summaries
            ]
            started, self._started = self._started, time.monotonic()
            if not self._submit(batch_id, results, started):
                # Stopping or failed: a later batch alone would leave a hole in the
                # saved progress, so this query submits nothing more.
                self._refused = True
                self._pending.clear()
                return
