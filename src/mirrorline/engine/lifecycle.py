"""What operators want of a flow right now: run, pause or stop, its lists, its start.

The flow's control records (`control.flow_control`), followed by a
`ControlWatch`, say what the flow should do; `FlowRunner.tick` asks
`Lifecycle.poll()` once per tick and acts on the answer:

- **running**: the query replicates, every control loop runs;
- **paused**: the query stays (it keeps its Spark resources) but writes no
  batch until resumed: the batch Spark planned waits, nothing is written and
  the saved positions do not move, so the lag grows; resuming writes that
  batch and catches up. Spark's real-time mode has no batch to hold, so there
  a pause stops the query (its long-running tasks are released);
- **stopped**: the query is stopped and its Spark resources released;

In all three states the flow keeps its leadership and keeps translating
consumer groups (checkpoints, group offset sync) up to what it replicated, so
that a group that moves to the target after a planned stop finds its final
checkpoint. Topic discovery, config and ACL sync run only while running.

List changes apply at once: the flow's filters are swapped (`FlowContext.follow`)
and its topic refresh is made due, so a newly allowed topic is replicated
within a tick and a newly denied one is left at the next query restart
(partitions already replicated resume from their progress, never from the
start). A `restart` (its counter moved) stops the query and starts it again
from the saved progress.

A position request (written only for a stopped flow) is applied by the
driver that leads the flow while no query runs, so also before the query of
a flow started in the meantime: the offsets are saved as the flow's progress,
then the request is deleted. Saving twice (a driver dying in between) saves
the same offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrorline.control.control_store import ControlStore
from mirrorline.control.flow_control import FlowControl, State
from mirrorline.engine.control_watch import ControlWatch
from mirrorline.engine.progress import ProgressStore
from mirrorline.flow_context import FlowContext

REASONS: dict[State, str] = {
    "paused": "paused by an operator (`mirrorline resume` continues)",
    "stopped": "stopped by an operator (`mirrorline start` starts it again)",
}


@dataclass(frozen=True)
class Wanted:
    """The answer of one `poll`."""

    control: FlowControl
    lists_changed: bool = False
    restart: bool = False

    @property
    def state(self) -> State:
        return self.control.state


class Lifecycle:
    """One flow's operator controls as the runner applies them (see the module)."""

    def __init__(self, context: FlowContext) -> None:
        self._context = context
        self._store = ControlStore(
            context.target, replication_factor=context.settings.replication_factor
        )
        self.watch = ControlWatch(context, self._store)
        self._restarts: int | None = None
        self._applied: str | None = None  # the last position request saved

    def start(self) -> None:
        self.watch.start()

    def ready(self) -> bool:
        """Whether the flow's control records were read (it must not act before)."""
        return self.watch.ready()

    def problem(self) -> str | None:
        """Why the flow may not see operators' latest changes (its target did not answer)."""
        return self.watch.error()

    def poll(self) -> Wanted:
        """What the flow should do now; list changes are applied to the context here."""
        control = self.watch.current()
        lists_changed = self._context.follow(control)
        restart = self._restarts is not None and control.restarts != self._restarts
        self._restarts = control.restarts
        return Wanted(control, lists_changed, restart)

    def apply_positions(self, control: FlowControl, progress: ProgressStore) -> bool:
        """Save a pending position request as the flow's progress; True if there was one.

        Only while no query runs, by the flow's leader (its progress writes are fenced in).
        """
        request = control.positions
        if request is None or request.id == self._applied:
            return False
        progress.save(request.offsets)
        self._store.positions_applied(self._context.name)
        self._applied = request.id
        return True

    def close(self) -> None:
        self.watch.close()
        self._store.close()
