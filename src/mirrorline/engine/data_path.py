"""A flow's data path: the Spark streaming query that moves its records.

The query plans micro-batches over exactly the source partitions that exist on
the target (`TopicManager.ready()`), with Spark's Kafka source in `assign` mode,
from the offsets the flow gives it (its progress, or its start positions), each
batch sized by time (`engine.batch_pace`). The executors read each batch's
offset ranges and write them (`batch_writer.write_batch`), and its results go to
the flow's `BatchCommitter`, which writes the driver's bookkeeping while the
next batch runs.

The query is stopped between batches: stopping lets the batch in flight end
and its bookkeeping be written (`DRAIN_S` at most; after that both are
abandoned and replayed on the next start), so a stop or a restart on new
partitions duplicates nothing. A batch that starts while the query is
stopping, after the driver lost the flow, or after the committer failed,
writes nothing: the next start replays it. Spark's checkpoint directory is
created fresh for every start and removed after: the progress topic is the
only source of truth, so losing the directory or moving the driver is harmless.

For the same reason Spark's offset and commit logs are written in the
background (`ASYNC_PROGRESS`): written in line they cost each micro-batch two
file writes, about 150 ms of a warm 5,000 records/s batch here, which is record
age at the target. Spark allows asynchronous progress tracking only for sinks
whose replay after a restart from the checkpoint it knows; Mirrorline never
restarts a query from its checkpoint, so the check is lifted for its sink. And
the logs are written once an hour instead of Spark's once a second: Hadoop's
local file system, without its native library, sets each new file's
permissions by starting a `chmod` process, five a second on a steady stream.

With `data.path.mode = real-time` the query runs in Spark's real-time mode
instead (`engine.real_time`): no micro-batches, records written as they are
read, results handed to the same committer once per batch; a stop abandons the
batch in progress.
"""

from __future__ import annotations

import functools
import json
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from mirrorline.engine.batch_commit import BatchCommitter
from mirrorline.engine.batch_pace import PACED_SOURCE, PacedQuery
from mirrorline.engine.batch_writer import PartitionResult, WriteSpec, cancel_batch, write_batch
from mirrorline.engine.provenance import Provenance
from mirrorline.engine.real_time import RealTimeResults, start_real_time
from mirrorline.engine.session import executor_task_slots
from mirrorline.engine.spark_promise import SparkPromise
from mirrorline.engine.status import summarise
from mirrorline.engine.write_specs import with_size_limits, write_spec
from mirrorline.flow_context import FlowContext

log = logging.getLogger(__name__)

# How often Spark looks for new records when there are none (each look lists offsets).
TRIGGER_INTERVAL = "200 milliseconds"
# How often a batch held by a pause checks whether the query is stopping.
PAUSE_CHECK_S = 0.2
# Spark's checkpoint logs written off the batch's path, and rarely (see the module's
# docstring): nothing reads them.
ASYNC_PROGRESS = {
    "asyncProgressTrackingEnabled": "true",
    "_asyncProgressTrackingOverrideSinkSupportCheck": "true",
    "asyncProgressTrackingCheckpointIntervalMs": str(60 * 60 * 1000),
}


@dataclass(frozen=True)
class _Run:
    """What one start of the query was given, fixed for all of its batches."""

    spec: WriteSpec
    term: int | None  # the term of leadership it started in
    generation: int  # the committer's generation it started in


class DataPath:
    """Starts, stops and watches one flow's streaming query."""

    DRAIN_S = 30.0

    def __init__(
        self,
        context: FlowContext,
        spark: SparkPromise,
        work_dir: Path,
        committer: BatchCommitter,
        *,
        size_limits: Callable[[], Mapping[str, int]],
        term: Callable[[], int | None],
    ) -> None:
        """`spark`: the driver's session, which `start` waits for (`engine.spark_promise`);
        `size_limits`: the remote topics' `max.message.bytes` as last seen; `term`:
        the driver's current term of leadership of the flow."""
        self._context = context
        self._spark = spark
        self._work_dir = work_dir
        self._committer = committer
        self._size_limits = size_limits
        self._current_term = term
        # The Spark job group of the flow's batches (see `batch_writer.cancel_batch`).
        self._job_group = f"mirrorline {context.name} {uuid.uuid4().hex[:8]}"
        # A batch in progress holds `_batch_idle` clear; stopping sets `_draining`
        # so that no new batch starts writing (see `stop`).
        self._gate = threading.Lock()
        self._batch_idle = threading.Event()
        self._batch_idle.set()
        self._draining = False
        # Clear while the flow is paused: a batch waits for it before writing (see `pause`).
        self._resumed = threading.Event()
        self._resumed.set()
        # Held while a batch writes and hands over its results (see `between_batches`).
        self._batch_lock = threading.Lock()
        self._query: StreamingQuery | None = None
        self._results: RealTimeResults | None = None  # in real-time mode
        self._pace: PacedQuery | None = None  # in micro-batch mode
        self._checkpoint: Path | None = None

    @property
    def running(self) -> bool:
        return self._query is not None

    def start(
        self,
        ready: Mapping[str, int],
        starting: Mapping[str, Mapping[str, int]],
        provenance: Provenance | None,
        term: int | None,
    ) -> None:
        """Start the query on `ready` (source topic -> partitions) at `starting` offsets.

        `starting` is Spark's `startingOffsets` ({topic: {partition: offset}});
        `term` the term of leadership the flow starts it in. The query must be
        stopped (`stop`) first.
        """
        if self._query is not None:
            raise RuntimeError(f"flow {self._context.name}: the query is already running")
        settings = self._context.settings
        spark = self._spark.get()
        spec = write_spec(self._context, ready, provenance, executor_task_slots(spark))
        run = _Run(spec, term, self._committer.generation())
        # Only the driver writes there, even on a cluster: the query is stateless, so
        # executors keep no state store in it (see `engine.session`).
        self._checkpoint = (
            self._work_dir / "checkpoints" / self._context.name.replace(">", "") / uuid.uuid4().hex
        )
        name = f"mirrorline {self._context.name} {uuid.uuid4().hex[:6]}"
        partitions = sum(ready.values())
        real_time = settings.real_time_batch_ms is not None
        reader = spark.readStream.format("kafka" if real_time else PACED_SOURCE)
        options = {
            **self._context.spark_source_options(),
            "assign": json.dumps({t: list(range(n)) for t, n in ready.items()}),
            "startingOffsets": json.dumps(starting),
            "failOnDataLoss": "false",
            "includeHeaders": "true",
        }
        if real_time:
            self._start_real_time(run, reader.options(**options).load(), name, partitions)
            return
        self._pace = PacedQuery(spark, name, settings.micro_batch, partitions)
        frame = reader.options(**options, **self._pace.options()).load()
        self._query = (
            frame.writeStream.queryName(name)
            .foreachBatch(functools.partial(self._on_batch, run))
            .option("checkpointLocation", str(self._checkpoint))
            .options(**ASYNC_PROGRESS)
            .trigger(processingTime=TRIGGER_INTERVAL)
            .start()
        )

    def _start_real_time(self, run: _Run, frame: DataFrame, name: str, tasks: int) -> None:
        """Start the query in Spark's real-time mode (see `engine.real_time`)."""
        batch_ms = self._context.settings.real_time_batch_ms
        assert batch_ms is not None
        spec = with_size_limits(run.spec, self._size_limits())
        self._query, sink = start_real_time(
            frame, spec, name=name, checkpoint=str(self._checkpoint), batch_ms=batch_ms, tasks=tasks
        )
        self._results = RealTimeResults(
            sink,
            self._context.name,
            tasks,
            self._context.settings.offset_lag_max,
            functools.partial(self._submit_real_time, run),
        )
        self._results.start()

    def _submit_real_time(
        self, run: _Run, batch_id: int, results: Sequence[PartitionResult], started: float
    ) -> bool:
        if self._current_term() != run.term:
            return False  # no longer the leader: the next leader replays the batch
        with self._batch_lock:
            return self._hand_over(run, batch_id, results, started)

    def pause(self) -> None:
        """Hold the batches: the next one waits, unwritten, until `resume` (or a stop).

        The query keeps its Spark resources and nothing moves: no record is
        written, no progress saved. Real-time mode has no batch to hold: the
        flow stops its query instead (`engine.lifecycle`).
        """
        self._resumed.clear()

    def resume(self) -> None:
        if self._pace is not None:
            self._pace.paused()
        self._resumed.set()

    def failure(self) -> str | None:
        """Why the query ended on its own, or why a real-time task stopped copying (its
        report says so before the task itself fails); None while it runs, or never ran."""
        query = self._query
        if query is None:
            return None
        if self._results is not None and (failed := self._results.failure()) is not None:
            return summarise(failed)
        if query.isActive:
            return None
        error = query.exception()
        return summarise(str(error)) if error is not None else "the query stopped"

    def stop(self) -> None:
        """Stop the query after its in-flight batch and that batch's bookkeeping.

        What is still running after `DRAIN_S` (a target that stopped answering)
        is abandoned: nothing more of it is written, and what it wrote without
        saving progress is replayed on the next start.
        """
        query, self._query = self._query, None
        results, self._results = self._results, None
        if query is not None and results is not None:
            self._stop_real_time(query, results)
        elif query is not None:
            with self._gate:
                self._draining = True
            deadline = time.monotonic() + self.DRAIN_S
            batch_done = self._batch_idle.wait(self.DRAIN_S)
            commits_done = self._committer.drain(max(0.0, deadline - time.monotonic()))
            if not (batch_done and commits_done):
                if not batch_done:  # free the executors now (see batch_writer.cancel_batch)
                    cancel_batch(self._spark.get(), self._job_group)
                dropped = self._committer.abandon()
                log.warning(
                    "flow %s: abandoning %s after %ss",
                    self._context.name,
                    "a batch still running" if not batch_done else f"{dropped} pending commits",
                    self.DRAIN_S,
                )
            try:
                query.stop()
            except Exception as exc:  # noqa: BLE001 - stopping must not fail the driver
                log.warning("flow %s: stopping its query: %s", self._context.name, exc)
            finally:
                with self._gate:
                    self._draining = False
        if self._pace is not None:
            self._pace.close()
            self._pace = None
        if self._checkpoint is not None:
            shutil.rmtree(self._checkpoint, ignore_errors=True)
            self._checkpoint = None

    def _stop_real_time(self, query: StreamingQuery, results: RealTimeResults) -> None:
        """Stop at once: the batch in progress is abandoned (written again from the
        saved progress on the next start); the batches finished before are saved."""
        try:
            query.stop()
        except Exception as exc:  # noqa: BLE001 - stopping must not fail the driver
            log.warning("flow %s: stopping its query: %s", self._context.name, exc)
        results.stop(self.DRAIN_S)
        if not self._committer.drain(self.DRAIN_S):
            dropped = self._committer.abandon()
            log.warning(
                "flow %s: abandoning %s pending commits after %ss",
                self._context.name,
                dropped,
                self.DRAIN_S,
            )

    @contextmanager
    def between_batches(self) -> Iterator[bool]:
        """Keep batches from handing over results while the flow moves offsets itself.

        Yields False, holding nothing, while a batch runs: that batch may be
        replicating the very records, and the check is for another time.
        """
        if not self._batch_lock.acquire(blocking=False):
            yield False
            return
        try:
            yield True
        finally:
            self._batch_lock.release()

    def _on_batch(self, run: _Run, frame: DataFrame, batch_id: int) -> None:
        while not self._resumed.wait(PAUSE_CHECK_S):
            if self._draining or self._current_term() != run.term:
                return  # stopping while paused: the next start replays the batch
        with self._gate:
            if (
                self._draining
                or self._current_term() != run.term
                or self._committer.failure() is not None
            ):
                # Stopping, no longer the leader, or the bookkeeping failed: the
                # next start replays it (progress is unchanged).
                return
            self._batch_idle.clear()
        try:
            with self._batch_lock:
                self._write(run, frame, batch_id)
        finally:
            self._batch_idle.set()

    def _write(self, run: _Run, frame: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        spec = with_size_limits(run.spec, self._size_limits())
        results = write_batch(frame, spec, self._job_group)
        written = time.monotonic()
        if (pace := self._pace) is not None:
            pace.batch_done(sum(r.next_offset - r.first_seen for r in results), started)
        self._hand_over(run, batch_id, results, started)
        log.debug(
            "flow %s batch %d: written in %.0f ms, handed over in %.0f ms",
            self._context.name,
            batch_id,
            (written - started) * 1000,
            (time.monotonic() - written) * 1000,
        )

    def _hand_over(
        self, run: _Run, batch_id: int, results: Sequence[PartitionResult], started: float
    ) -> bool:
        """Give a written batch to the committer (under the batch lock); False: dropped."""
        return self._committer.submit_batch(
            batch_id,
            results,
            exactly_once=self._context.settings.exactly_once,
            started=started,
            generation=run.generation,
            term=run.term,
        )
