"""Waiting for the drivers to act on an operator's change, by their reported status.

A change to a flow's control records (`control.flow_control`) takes effect
when the flow's leading driver reads it, within about a second, and shows in
the status that driver reports to the target's raw metrics on its next
interval. `FlowReports` reads those reports (the same `Monitor` as `mirrorline
status`, limited to the flow's target) and waits until one newer than the
change says what was asked for.

No driver reporting the flow is not an error: the change waits in the control
topic and every driver that starts applies it before replicating anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from mirrorline.config.model import FlowConfig, MirrorConfig
from mirrorline.config.service_settings import ServiceSettings
from mirrorline.service.monitor import Monitor
from mirrorline.service.replications import Replication

POLL_S = 0.25


@dataclass(frozen=True)
class Report:
    """The flow's status as its drivers reported it, or None when nobody did."""

    state: str
    reason: str
    driver: str | None
    time_ms: int | None

    @classmethod
    def of(cls, r: Replication) -> Report:
        return cls(r.state, r.reason, r.active_driver or r.reported_by, r.status_time_ms)


class FlowReports:
    """Reads one flow's reported status from its target (see the module)."""

    def __init__(self, config: MirrorConfig, flow: FlowConfig) -> None:
        self.flow = flow
        settings = replace(ServiceSettings.of(config), clusters=(flow.target,))
        self._monitor = Monitor(config, settings)

    def __enter__(self) -> FlowReports:
        self._monitor.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._monitor.close()

    def current(self, timeout: float = 10.0) -> Report:
        self._monitor.catch_up(timeout)
        return Report.of(self._monitor.replication(self.flow.source, self.flow.target))

    def wait_for(
        self,
        states: Iterable[str],
        *,
        since_ms: int,
        timeout: float,
        on_wait: Callable[[Report], None] | None = None,
    ) -> Report | None:
        """The first report newer than `since_ms` in one of `states`; None at the deadline.

        Reports from before the change are ignored: they describe the flow as it was.
        """
        wanted = set(states)
        deadline = time.monotonic() + timeout
        self._monitor.catch_up(min(timeout, 10.0))
        while True:
            report = Report.of(self._monitor.replication(self.flow.source, self.flow.target))
            fresh = report.time_ms is not None and report.time_ms >= since_ms
            if fresh and report.state in wanted:
                return report
            if time.monotonic() >= deadline:
                return None
            if on_wait is not None:
                on_wait(report)
            time.sleep(POLL_S)
