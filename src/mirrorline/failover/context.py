"""What every failover step works with: the flow, its two clusters, its control and status.

One `FailoverContext` per flow `source->target`. The flow's own client
settings reach both clusters (so a failover uses the credentials the flow
uses); requests to the source wait `source_timeout` at most, since an
unplanned failover runs while the source is gone. Control records go to
the target, where the flow's drivers follow them; the flow's status is read
from the target's raw metrics, as `mirrorline status` does, with a `Monitor`
that reads the target alone.

Progress is shown through a `Reporter`: the command's is a rich progress
bar on stderr, tests use `SilentReporter`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from typing import Any, Protocol

from mirrorline.config import MirrorConfig
from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.model import FlowConfig
from mirrorline.config.service_settings import ServiceSettings
from mirrorline.control.flow_control import ControlStore, FlowControl, State
from mirrorline.failover.clusters import ClusterAccess, Unreachable
from mirrorline.failover.lag import FlowPositions
from mirrorline.kafka import KafkaOperationError
from mirrorline.service.monitor import Monitor, NotFound
from mirrorline.service.replications import Replication


class FailoverError(Exception):
    """Why a failover or failback stops: a message, an exit code and one line per problem."""

    def __init__(
        self,
        message: str,
        code: int,
        details: tuple[str, ...] | list[str] = (),
        *,
        report: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.details = tuple(details)
        self.report = report  # what was found and done before it stopped, for --json


class Waiting(Protocol):
    """A wait in progress: how far it is (`completed` of `total`) and what it waits on."""

    def update(
        self, *, completed: int | None = None, total: int | None = None, detail: str = ""
    ) -> None: ...


class Reporter(Protocol):
    """Where a long operation says what it does (stderr for the command)."""

    def say(self, text: str, style: str = "") -> None: ...

    def waiting(self, what: str, total: int | None = None) -> AbstractContextManager[Waiting]: ...


class SilentReporter:
    """A reporter that keeps what it was told (tests)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str, style: str = "") -> None:
        self.lines.append(text)

    @contextmanager
    def waiting(self, what: str, total: int | None = None) -> Iterator[_SilentWait]:
        self.lines.append(what)
        yield _SilentWait()


class _SilentWait:
    def update(
        self, *, completed: int | None = None, total: int | None = None, detail: str = ""
    ) -> None:
        return None


class FailoverContext:
    """The flow `source->target` of `config` and what reaches it (see the module)."""

    def __init__(
        self,
        config: MirrorConfig,
        source: str,
        target: str,
        *,
        request_timeout: float,
        source_timeout: float,
    ) -> None:
        self.config = config
        self.flow: FlowConfig = config.flow(source, target)
        flow = self.flow
        self.source = ClusterAccess(
            source,
            admin=flow.client_settings("source", "admin"),
            consumer=flow.client_settings("source", "consumer"),
            producer=flow.client_settings("source", "producer"),
            timeout=source_timeout,
        )
        self.target = ClusterAccess(
            target,
            admin=flow.client_settings("target", "admin"),
            consumer=flow.client_settings("target", "consumer"),
            producer=flow.client_settings("target", "producer"),
            timeout=request_timeout,
        )
        self.settings = FlowSettings.of(flow)
        self.control = ControlStore(
            self.target.clients(), replication_factor=self.settings.replication_factor
        )
        self.positions = FlowPositions(flow, self.source, self.target)
        self._monitor: Monitor | None = None

    @property
    def name(self) -> str:
        return self.flow.name

    def wanted(self) -> FlowControl:
        """What the control topic asks of the flow now."""
        try:
            return self.control.read(self.name, timeout=self.target.timeout)
        except KafkaOperationError as exc:
            raise self._unreachable(exc) from None

    def set_state(self, state: State) -> None:
        """Ask the flow's drivers for `state` through its control record."""
        try:
            self.control.set_state(self.name, state, timeout=self.target.timeout)
        except KafkaOperationError as exc:
            raise self._unreachable(exc) from None

    def request_positions(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Ask the flow's leader to start at `offsets` (saved while the flow is stopped)."""
        try:
            self.control.request_positions(self.name, offsets, timeout=self.target.timeout)
        except KafkaOperationError as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: Exception) -> Unreachable:
        return Unreachable(f"cluster {self.target.alias} ({self.target.servers}): {exc}")

    def effective_flow(self) -> FlowConfig:
        """The flow with its run-time topic and group lists applied."""
        return self.wanted().effective(self.flow)

    def replication(self) -> Replication | None:
        """The flow's state as its drivers last reported it; None if none ever did."""
        monitor = self._status_reader()
        try:
            replication = monitor.replication(self.flow.source, self.flow.target)
        except NotFound:
            return None
        if replication.reported_by is None:
            return None
        return replication

    def close(self) -> None:
        if self._monitor is not None:
            self._monitor.close()
        self.control.close()
        self.positions.close()
        self.source.close()
        self.target.close()

    def _status_reader(self) -> Monitor:
        if self._monitor is None:
            settings = replace(ServiceSettings.of(self.config), clusters=(self.flow.target,))
            monitor = Monitor(self.config, settings)
            monitor.start()
            monitor.catch_up(self.target.timeout)
            self._monitor = monitor
        return self._monitor
