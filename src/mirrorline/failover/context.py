"""What every failover step works with: the flow, its two clusters, its control and status.

One `FailoverContext` per flow `source->target`. The flow's own client
settings reach both clusters (so a failover uses the credentials the flow
uses); requests to the source wait `source_timeout` at most, since an
unplanned failover runs while the source is gone. Control records go to
the target, where the flow's drivers follow them; the flow's status is read
from the target's raw metrics, as `mirrorline status` does
(`operations.flow_reports`).

Progress is shown through a `Reporter`: the command's is a rich progress
bar on stderr, tests use `SilentReporter`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mirrorline.checkpoints import CheckpointKey, read_checkpoints
from mirrorline.cluster_access import ClusterAccess, Unreachable
from mirrorline.config import MirrorConfig
from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.model import FlowConfig
from mirrorline.control.control_store import ControlStore
from mirrorline.control.flow_control import FlowControl, PositionRequest, State
from mirrorline.failover.lag import FlowPositions
from mirrorline.formats import Checkpoint
from mirrorline.kafka import KafkaOperationError
from mirrorline.operations.failure import EXIT_FAILED, Failure
from mirrorline.operations.flow_reports import FlowReports
from mirrorline.service.replications import Replication


@dataclass(frozen=True)
class Options:
    """How a planned failover runs: its state file, and what the operator allowed."""

    state_path: Path
    dry_run: bool = False
    force: bool = False
    timeout: float = 300.0  # for each wait: lag 0, stopped, checkpoints


class FailoverError(Failure):
    """Why a failover or failback stops, with what it found and did before (`report`)."""

    def __init__(
        self,
        message: str,
        code: int,
        details: tuple[str, ...] | list[str] = (),
        *,
        report: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, code, details)
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
        self.reports = FlowReports(config, flow, catch_up_s=self.target.timeout)

    @property
    def name(self) -> str:
        return self.flow.name

    def wanted(self) -> FlowControl:
        """What the control topic asks of the flow now."""
        try:
            return self.control.read(self.name, timeout=self.target.timeout)
        except KafkaOperationError as exc:
            raise self._unreachable(exc) from None

    def set_state(self, state: State, current: FlowControl | None = None) -> None:
        """Ask the flow's drivers for `state` through its control record."""
        try:
            self.control.set_state(self.name, state, current=current, timeout=self.target.timeout)
        except KafkaOperationError as exc:
            raise self._unreachable(exc) from None

    def request_positions(self, offsets: Mapping[tuple[str, int], int]) -> PositionRequest:
        """Ask the flow's leader to start at `offsets` (saved while the flow is stopped)."""
        try:
            return self.control.request_positions(self.name, offsets, timeout=self.target.timeout)
        except KafkaOperationError as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: Exception) -> Unreachable:
        return Unreachable(f"cluster {self.target.alias} ({self.target.servers}): {exc}")

    def effective_flow(self) -> FlowConfig:
        """The flow with its run-time topic and group lists applied."""
        return self.wanted().effective(self.flow)

    def replication(self) -> Replication | None:
        """The flow's state as its drivers last reported it; None if none ever did."""
        return self.reports.replication()

    def checkpoints(self, flow: FlowConfig) -> dict[CheckpointKey, Checkpoint]:
        """The latest checkpoint of each (group, topic, partition) the flow wrote on the target."""
        try:
            return read_checkpoints(
                self.target.consumer_settings,
                flow.checkpoints_topic,
                missing_ok=True,
                timeout=self.target.timeout,
            )
        except KafkaOperationError as exc:
            raise FailoverError(f"{self.target.alias}: {exc}", EXIT_FAILED) from None

    def close(self) -> None:
        self.reports.close()
        self.control.close()
        self.source.close()
        self.target.close()
