"""Waiting for the drivers to act on an operator's change, by their reported status.

A change to a flow's control records (`control.flow_control`) takes effect
when the flow's leading driver reads it, within about a second, and shows in
the status that driver reports to the target's raw metrics on its next
interval. `FlowReports` reads those reports (the same `Monitor` as `mirrorline
status`, limited to the flow's target) and waits until one newer than the
change says what was asked for. The lifecycle commands and the failover
steps wait this way.

No driver reporting the flow is not an error: the change waits in the control
topic and every driver that starts applies it before replicating anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from mirrorline.config.model import FlowConfig, MirrorConfig
from mirrorline.config.service_settings import ServiceSettings
from mirrorline.service.monitor import Monitor, NotFound
from mirrorline.service.replications import Replication

POLL_S = 0.25


class FlowReports:
    """Reads one flow's reported status from its target (see the module).

    The target's metrics are read from the first question on, after catching
    up with them for `catch_up_s` at most.
    """

    def __init__(self, config: MirrorConfig, flow: FlowConfig, *, catch_up_s: float = 10.0) -> None:
        self.flow = flow
        self._config = config
        self._catch_up_s = catch_up_s
        self._monitor: Monitor | None = None

    def __enter__(self) -> FlowReports:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def replication(self) -> Replication | None:
        """The flow as its drivers last reported it; None when no driver ever did."""
        try:
            found = self._reader().replication(self.flow.source, self.flow.target)
        except NotFound:
            return None
        return found if found.reported_by is not None else None

    def wait_for(
        self,
        states: Iterable[str],
        *,
        since_ms: int | None,
        timeout: float,
        on_wait: Callable[[Replication | None], None] | None = None,
    ) -> Replication | None:
        """The first report in one of `states` (newer than `since_ms`, when given); None at
        the deadline.

        Reports from before the change are ignored: they describe the flow as it was.
        """
        wanted = set(states)
        deadline = time.monotonic() + timeout
        while True:
            found = self.replication()
            if found is not None and found.state in wanted and _newer(found, since_ms):
                return found
            if time.monotonic() >= deadline:
                return None
            if on_wait is not None:
                on_wait(found)
            time.sleep(POLL_S)

    def close(self) -> None:
        if self._monitor is not None:
            self._monitor.close()
            self._monitor = None

    def _reader(self) -> Monitor:
        if self._monitor is None:
            settings = replace(ServiceSettings.of(self._config), clusters=(self.flow.target,))
            self._monitor = Monitor(self._config, settings)
            self._monitor.start()
            self._monitor.catch_up(self._catch_up_s)
        return self._monitor


def _newer(found: Replication, since_ms: int | None) -> bool:
    if since_ms is None:
        return True
    return found.status_time_ms is not None and found.status_time_ms >= since_ms
