"""The driver: one Spark application running every enabled flow of a configuration.

For each flow it runs a `FlowRunner` (the data query plus the flow's control
loops). One flow's failure never stops another: each runner reports its own
status with a reason and retries by itself.

Several drivers may run the same configuration: each flow is replicated by the
driver that leads it (`engine.leadership`, decided on the flow's target
cluster); the others stand by and take over when it stops or dies.

Heartbeats (`control.heartbeats`) are emitted by every driver, leader or not,
for the flows into the clusters it serves, disabled flows included.

The flows start before the Spark session exists and take over meanwhile; each
waits for the session only to start its query (`engine.spark_promise`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.model import FlowConfig, MirrorConfig
from mirrorline.control.heartbeats import Heartbeats, HeartbeatStatus
from mirrorline.engine.flow import FlowRunner
from mirrorline.engine.leadership import FlowLeadership, driver_id
from mirrorline.engine.spark_promise import SparkPromise
from mirrorline.engine.status import FlowStatus
from mirrorline.flow_context import FlowContext

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

TICK_S = 0.5


class NoFlowsError(ValueError):
    """The configuration (after `--clusters`) leaves nothing for the driver to do."""


def check_supported(flows: Iterable[FlowConfig]) -> list[str]:
    """Notes on settings that have no effect."""
    notes = []
    for flow in flows:
        settings = FlowSettings.of(flow)
        if settings.dead_letter_topic and not settings.tolerate_refusals:
            origin = flow.setting("errors.deadletterqueue.topic.name").origin
            notes.append(
                f"flow {flow.name}: errors.deadletterqueue.topic.name ({origin}) "
                "is unused: refused records stop the flow unless errors.tolerance = all"
            )
    return notes


def select_flows(config: MirrorConfig, target_clusters: Iterable[str] | None) -> list[FlowConfig]:
    """Enabled flows, limited to those targeting `target_clusters` when given."""
    flows = list(config.enabled_flows())
    if target_clusters is not None:
        wanted = set(target_clusters)
        unknown = sorted(wanted - set(config.clusters))
        if unknown:
            raise NoFlowsError(
                f"--clusters names unknown cluster(s) {', '.join(unknown)}; "
                f"the configuration defines {', '.join(config.clusters)}"
            )
        flows = [f for f in flows if f.target in wanted]
    if not flows:
        raise NoFlowsError(
            "no enabled flow to run: enable one with `A->B.enabled = true`"
            + (" (or widen --clusters)" if target_clusters is not None else "")
        )
    return flows


class Driver:
    def __init__(
        self,
        flows: list[FlowConfig],
        spark: SparkSession | SparkPromise,
        work_dir: Path,
        heartbeat_flows: Iterable[FlowConfig] = (),
    ) -> None:
        """`spark`: the session, or its promise while it starts (`engine.spark_promise`);
        `heartbeat_flows`: the flows whose heartbeats this driver emits
        (`control.heartbeats.heartbeat_flows_for`); none by default."""
        self.flows = flows
        self.driver_id = driver_id()
        promise = spark if isinstance(spark, SparkPromise) else SparkPromise(spark)
        self.runners = []
        for flow in flows:
            context = FlowContext(flow)
            leadership = FlowLeadership.for_flow(context, self.driver_id)
            self.runners.append(FlowRunner(context, promise, work_dir, leadership))
        self.heartbeats = Heartbeats(heartbeat_flows)
        self._threads: list[threading.Thread] = []

    def start(self, stop: threading.Event) -> None:
        """Start every flow and the heartbeats, each on a thread of its own, so a flow
        waiting on an unreachable cluster never delays the others; they end once
        `stop` is set (`join`)."""
        if self._threads:
            return
        self._threads = [
            threading.Thread(
                target=self._run_flow, args=(runner, stop), name=f"flow {runner.flow.name}"
            )
            for runner in self.runners
        ]
        self.heartbeats.start(stop)
        for thread in self._threads:
            thread.start()

    def run(
        self,
        stop: threading.Event,
        on_tick: Callable[[list[FlowStatus]], None] | None = None,
    ) -> None:
        """Replicate until `stop` is set (starting the flows unless `start` did),
        then stop every flow between batches."""
        self.start(stop)
        try:
            while not stop.wait(TICK_S):
                if on_tick is not None:
                    on_tick(self.statuses())
        finally:
            stop.set()
            self.join()

    def join(self) -> None:
        """Wait for the flows, once `stop` is set, to end (between batches)."""
        for thread in self._threads:
            thread.join()
        self.heartbeats.join()

    def _run_flow(self, runner: FlowRunner, stop: threading.Event) -> None:
        try:
            wake = runner.context.wake
            while not stop.is_set():
                wake.clear()  # news during the tick makes the wait below return at once
                self._guarded(runner, runner.tick)
                wake.wait(runner.wait_s(TICK_S))
        finally:
            self._guarded(runner, runner.stop)

    def statuses(self) -> list[FlowStatus]:
        return [runner.status() for runner in self.runners]

    def heartbeat_statuses(self) -> list[HeartbeatStatus]:
        """How the heartbeats of each flow this driver emits for are doing."""
        return self.heartbeats.statuses()

    @staticmethod
    def _guarded(runner: FlowRunner, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - reported in the flow's status, others go on
            log.warning("flow %s: %s", runner.flow.name, exc)
            runner.note_failure(str(exc))
