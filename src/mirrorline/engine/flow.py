"""One replication flow at run time: leadership, retries and the schedule of its loops.

The work is done by the flow's collaborators (`FlowParts`, built by
`flow_parts` on one `FlowContext`: its typed settings and shared clients):

- `DataPath`: the Spark query moving records, on the partitions that exist on
  the target (`TopicManager.ready()`), restarted between batches when they
  change;
- `BatchCommitter`: the driver's bookkeeping after each batch (offset syncs,
  runs, progress, gaps), written in batch order while the next batch runs;
- the control loops' parts: `TopicManager`, `RemoteTopicPublisher`,
  `Checkpointer`, `GapFinder`; `ClusterHealth` says whether the clusters answer;
- `MetricsReporter`: the flow's raw metrics (batches, status, lag, checkpoint
  latency), written to its target on a thread of its own, leader or not;
- `Lifecycle`: what operators want of the flow (running, paused or stopped,
  run-time lists, positions), from its control records.

The runner decides when. `tick()` follows this driver's leadership of the
flow (a new term takes the flow over and reloads its progress), runs the
control loops that are due (`FlowLoops`), keeps the query on the ready
partitions, and turns any failure into the state `failed` with its reason and
a retry after a backoff, or as soon as a cluster that did not answer does
again. Source records deleted before the flow read them are reported with
their exact offsets (`gaps`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from mirrorline.engine.flow_parts import build_parts
from mirrorline.engine.leadership import FlowLeadership
from mirrorline.engine.lifecycle import REASONS, Wanted
from mirrorline.engine.loops import CHECKPOINTS, QUERY, TOPICS
from mirrorline.engine.provenance import Provenance
from mirrorline.engine.spark_promise import SparkPromise
from mirrorline.engine.start_offsets import starting_offsets
from mirrorline.engine.startup import (
    LEADS,
    QUERY_STARTED,
    TAKEN_OVER,
    TOPICS_READY,
)
from mirrorline.engine.status import FlowStatus, summarise, with_outages
from mirrorline.engine.takeover import take_over
from mirrorline.flow_context import FlowContext

log = logging.getLogger(__name__)


class FlowRunner:
    """Runs one flow on a Spark session; `tick()` drives it."""

    RESTART_BACKOFF_S = (2.0, 5.0, 10.0, 30.0, 60.0)

    def __init__(
        self,
        context: FlowContext,
        spark: SparkPromise,
        work_dir: Path,
        leadership: FlowLeadership,
    ) -> None:
        self.context = context
        self.flow = context.flow
        self.leadership = leadership
        self.parts = build_parts(
            context,
            spark,
            work_dir,
            leadership,
            status=self.status,
            term=lambda: self._term,
            assigned=lambda: self._assigned or {},
        )
        self._lock = threading.Lock()  # the state and reason, read by `status`
        self._state = "starting"
        self._reason = ""
        # Partitions the running query reads; None until the first decision.
        self._assigned: dict[str, int] | None = None
        self._prepared = False
        self._provenance: Provenance | None = None
        self._translation_load_ms: int | None = None
        self._retry_at: float | None = None
        self._failures = 0
        self._batches_seen = 0  # committed batches at the last tick (a success resets backoff)
        # The period of leadership the flow acts on (see `_leads`); None: standing by.
        self._term: int | None = None
        # Set when the flow failed while a cluster did not answer: retried on its return.
        self._failed_in_outage = False
        # Set while an operator's stop (or a real-time pause) keeps the query stopped.
        self._held = False

    # -- lifecycle -------------------------------------------------------------------

    def tick(self) -> None:
        """Advance the flow: take it over, run due control loops, keep the query right.

        Called every fraction of a second by the driver; the first call starts the
        flow. Any failure puts the flow in `failed` with the reason, and the next
        attempt follows after a backoff, or as soon as the cluster answers again
        when it failed during an outage.
        """
        now = time.monotonic()
        if self.parts.metrics is not None:
            self.parts.metrics.start()
        self.parts.lifecycle.start()
        if not self._leads():
            return
        if not self.parts.lifecycle.ready():
            self._set_state("starting", "reading the flow's control records")
            return
        self.parts.health.start()
        wanted = self.parts.lifecycle.poll()
        if wanted.lists_changed:
            self.parts.loops.lists_changed()
        held = self._holds_query(wanted)
        if held:
            # An operator's stop applies at once, also to a flow that failed or waits
            # for a cluster (an unplanned failover stops a flow whose source is gone).
            self._retry_at = None
            self._hold(wanted)
            if self.parts.health.unreachable():
                return  # its checkpoints and positions wait for the clusters
        elif self._retry_at is not None:
            down = bool(self.parts.health.unreachable())
            self._failed_in_outage |= down
            if not retry_due(now, self._retry_at, self._failed_in_outage, down):
                return
        self._retry_at = None
        self._failed_in_outage = False
        try:
            batches = self.parts.committer.totals().batches
            if batches != self._batches_seen:
                self._batches_seen, self._failures = batches, 0
            if not self._prepared:
                self._prepare()
            if wanted.restart:
                self._prepared = False  # the query stops and starts from the saved progress
                return
            # Positions an operator set are saved while no query runs, before one starts.
            if not self.parts.data_path.running and self.parts.lifecycle.apply_positions(
                wanted.control, self.parts.progress
            ):
                log.info("flow %s: positions set by an operator saved", self.flow.name)
                self._prepared = False  # reload the progress just saved
                return
            # Loops wait while a cluster does not answer, rather than each failing
            # after its timeout (the status already says why); they run on its return.
            reachable = not self.parts.health.unreachable()
            if held:
                if not self._assigned:  # checkpoints go on for the partitions with progress
                    self._assigned = partition_counts(self.parts.committer.next_offsets())
            else:
                self._replicate(wanted, reachable, now)
            # Once the query ran on its partitions: checkpoints translate through them.
            if reachable and self._assigned is not None:
                self.parts.loops.run(CHECKPOINTS, now)
        except Exception as exc:  # noqa: BLE001 - reported in the status, retried later
            self._fail(summarise(str(exc)), now)

    def _replicate(self, wanted: Wanted, reachable: bool, now: float) -> None:
        """Keep the query on the ready partitions; hold its batches while paused."""
        if self._held:  # stopped until now: the query starts again
            self._held, self._assigned = False, None
        paused = wanted.state == "paused"
        if paused:
            self.parts.data_path.pause()
        else:
            self.parts.data_path.resume()
        if reachable:
            self.parts.loops.run(TOPICS, now)
        self._check_data_path()
        if reachable and self.parts.data_path.running:
            self.parts.loops.run(QUERY, now)
        ready = self.parts.topics.ready()
        if ready != self._assigned:
            self._restart(ready)
        if paused:
            self._set_state("paused", REASONS["paused"])
        elif self._state == "paused":
            self._set_state("running", "")

    def _holds_query(self, wanted: Wanted) -> bool:
        """Stopped, or paused in real-time mode (which has no batch to hold)."""
        real_time = self.context.settings.real_time_batch_ms is not None
        return wanted.state == "stopped" or (wanted.state == "paused" and real_time)

    def _hold(self, wanted: Wanted) -> None:
        """No query (checkpoints go on)."""
        if self.parts.data_path.running:
            self.parts.data_path.stop()
        self._held = True
        self._set_state(wanted.state, REASONS[wanted.state])

    def stop(self) -> None:
        """Stop between batches if possible; an interrupted batch is replayed on start."""
        self.parts.data_path.stop()
        self.parts.committer.close()  # nothing is written once the flow is given up
        self.leadership.close()  # after the query: the next leader starts once this one stopped
        self._set_state("stopped", "the driver stopped")
        self.parts.close()
        self.context.close()

    def wait_s(self, longest: float) -> float:
        """How long the driver may wait before the next tick: `longest`, or less when a
        control loop falls due sooner (a checkpoint round runs on time)."""
        return self.parts.loops.wait_s(time.monotonic(), longest)

    def status(self) -> FlowStatus:
        clusters = self.parts.health.verdicts()
        totals = self.parts.committer.totals()
        assigned = self._assigned or {}
        checkpointer = self.parts.checkpointer
        with self._lock:
            state, reason = with_outages(self._state, self._reason, clusters)
        return FlowStatus(
            flow=self.flow.name,
            state=state,
            reason=reason,
            topics=tuple(sorted(assigned)),
            partitions=sum(assigned.values()),
            records=totals.records,
            bytes=totals.bytes,
            problems=tuple(str(p) for p in self.parts.topics.problems())
            + tuple(f"{loop} failed: {error}" for loop, error in self.parts.loops.errors().items())
            + tuple(p for p in (self.parts.lifecycle.problem(),) if p),
            last_batch=totals.last_batch,
            exactly_once=self.context.settings.exactly_once,
            clusters=clusters,
            gaps=self.parts.lost.recent(),
            counters={**totals.counters(), **self.parts.lost.counters()},
            refusals=totals.refusals,
            checkpoints=checkpointer.stats() if checkpointer is not None else None,
            translation_runs=self.parts.committer.translation.run_count(),
            translation_load_ms=self._translation_load_ms,
            active_driver=self.leadership.active_driver(),
        )

    def note_failure(self, reason: str) -> None:
        """Record a failure raised outside the flow's own loops."""
        self._fail(reason, time.monotonic())

    def _leads(self) -> bool:
        """Follow this driver's leadership of the flow; True while it leads.

        Losing it stops the query between batches (the data path already refuses
        new ones, the committer writes nothing more) and stands by: no query, no
        control loops. Gaining it reloads the progress, which the previous
        leader moved, and starts again.
        """
        self.leadership.start()
        term = self.leadership.term()
        if term != self._term:
            self.parts.data_path.stop()
            self._assigned = None
            self._term = term
            if term is not None:
                self.parts.startup.reached(LEADS)
                self._prepared = False
                self._retry_at = None
                self._set_state("starting", "this driver leads the flow now")
        if term is None:
            self._set_state("standby", self.leadership.describe())
        return term is not None

    def _prepare(self) -> None:
        """Take the flow over (`engine.takeover`) and start from what it saved."""
        if self.parts.data_path.running:  # its batches belong to the state being replaced
            self.parts.data_path.stop()
            self._assigned = {}
        self._translation_load_ms = take_over(
            self.context,
            progress=self.parts.progress,
            runs=self.parts.runs,
            committer=self.parts.committer,
            own_topics=(self.parts.syncs, self.parts.metrics),
            term=self._term,
        )
        if self.parts.checkpointer is not None:
            self.parts.checkpointer.forget()
        self._provenance = self._provenance_for_policy()
        self._prepared = True
        self.parts.startup.reached(TAKEN_OVER)

    def _fail(self, reason: str, now: float) -> None:
        backoff = self.RESTART_BACKOFF_S[min(self._failures, len(self.RESTART_BACKOFF_S) - 1)]
        self._failures += 1
        self._retry_at = now + backoff
        self._failed_in_outage = bool(self.parts.health.unreachable())
        if not self._failed_in_outage:
            reason = self.parts.loops.explain(reason)
        if self.parts.committer.failure() is not None:
            self._prepared = False  # start again from what is saved
        self._set_state("failed", f"{reason} (retrying in {backoff:.0f}s)")
        log.warning("flow %s failed: %s", self.flow.name, reason)

    # -- the query -------------------------------------------------------------------

    def _restart(self, ready: Mapping[str, int]) -> None:
        self.parts.data_path.stop()
        self._assigned = {}
        if not ready:
            self._set_state("running", "no source topic matches the flow's filter yet")
            return
        self.parts.startup.reached(TOPICS_READY)
        self.parts.loops.check_gaps(ready)
        self.parts.data_path.start(
            ready, self._starting_offsets(ready), self._provenance, self._term
        )
        self.parts.startup.reached(QUERY_STARTED)
        self._assigned = dict(ready)  # only once the query runs, so a failed start is retried
        self._set_state("running", "")
        log.info(
            "flow %s replicating %d partitions of %s",
            self.flow.name,
            sum(ready.values()),
            ", ".join(sorted(ready)),
        )

    def _check_data_path(self) -> None:
        """Raise the reason if the query died or its bookkeeping failed (the caller
        schedules the retry), after stopping the query."""
        reason = self.parts.data_path.failure() or self.parts.committer.failure()
        if reason is None:
            return
        self.parts.data_path.stop()
        self._assigned = {}
        # Start again from the saved progress: some tasks of the failed batch may
        # have committed (exactly-once), and the flow's view is reloaded anyway.
        self._prepared = False
        raise DataPathFailed(reason)

    def _starting_offsets(self, ready: Mapping[str, int]) -> dict[str, dict[str, int]]:
        return starting_offsets(
            self.context,
            ready,
            committer=self.parts.committer,
            runs=self.parts.runs,
            term=self._term,
        )

    def _provenance_for_policy(self) -> Provenance | None:
        """Provenance headers, for policies whose topic names cannot reveal loops."""
        if self.flow.policy.detects_cycles_by_name:
            return None
        return Provenance(
            source_cluster_id=self.parts.topics.source_cluster_id(),
            target_cluster_id=self.parts.topics.target_cluster_id(),
            by_cluster=self.flow.policy.provenance_by_cluster,
        )

    def _set_state(self, state: str, reason: str) -> None:
        with self._lock:
            self._state = state
            self._reason = reason


def retry_due(now: float, retry_at: float, failed_in_outage: bool, clusters_down: bool) -> bool:
    """Whether a failed flow tries again: at the end of its backoff, or at once when it
    failed while a cluster did not answer and every cluster answers again."""
    if clusters_down:
        return now >= retry_at
    return failed_in_outage or now >= retry_at


class DataPathFailed(RuntimeError):
    """The data query ended with an error, or its bookkeeping failed; the message says why."""


def partition_counts(offsets: Mapping[tuple[str, int], int]) -> dict[str, int]:
    """Source topic -> partition count, from the partitions `offsets` has."""
    counts: dict[str, int] = {}
    for topic, partition in offsets:
        counts[topic] = max(counts.get(topic, 0), partition + 1)
    return counts
