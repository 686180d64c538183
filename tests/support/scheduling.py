"""How `make test` splits the suite over its pytest-xdist workers, and what happens to
the rest of a worker's tests when the worker dies.

A scope is a test module, or all of SLOWEST: the slowest and most CPU-bound modules
(about half the suite's time) share one worker, so they never compete with each other
for the two cores, and the other worker takes the rest. A module stays in one worker,
so its module fixtures are made once. (Not `--dist loadgroup` with marks: with pytest
9.2 its group names no longer reach the scheduler, and every test is scheduled on its
own.)

When a worker dies (a native library aborting the process), pytest-xdist 3.8 reports
the test it was running as failed and starts a replacement, but its scheduling by
scope then puts every scope the dead worker ever had back in the queue, finished ones
included, and the test it died on as well. A finished scope reaches a worker as an
empty batch that never completes, and a worker holding a single test waits for a
second one that never comes: the run hangs until CI's limit ends it, with the report
of the crash never printed. Here only the dead worker's unfinished tests go back,
without the one it died on, and a worker is told to stop as soon as the queue is
empty, so the run goes on and ends with the crash as one failure. And a replacement
gets work only once its collection is in: pytest-xdist asks every worker it knows
for more whenever one finishes collecting, and a replacement that had not finished
yet (two workers died close together) made its scheduler fail with a KeyError.
"""

from __future__ import annotations

from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

SLOWEST = frozenset(
    {
        "test_chaos",
        "test_crash_safety",
        "test_driver_ha",
        "test_failover_unplanned",
        "test_installed_package",
        "test_many_partitions",
        "test_secret_leaks",
        "test_target_outage",
    }
)


class ByModule(LoadScopeScheduling):
    """pytest-xdist's scheduling by scope, scopes as above, surviving a dead worker."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return "slowest" if Path(module).stem in SLOWEST else module

    def remove_node(self, node) -> str | None:  # type: ignore[no-untyped-def]
        """Forget `node`; if it died with tests left, queue them again, all but the one
        it died on (returned, for pytest-xdist to report as failed)."""
        workload = self.assigned_work.pop(node)
        left = [
            (scope, nodeid)
            for scope, unit in workload.items()
            for nodeid, done in unit.items()
            if not done
        ]
        if not left:
            return None
        scope, crashed = left[0]
        workload[scope][crashed] = True
        for scope, unit in workload.items():
            if not all(unit.values()):
                self.workqueue[scope] = unit
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed

    def _reschedule(self, node) -> None:  # type: ignore[no-untyped-def]
        if node not in self.registered_collections:
            return  # a replacement still collecting: `schedule` serves it once it has
        super()._reschedule(node)
        if not self.workqueue and not node.shutting_down:
            node.shutdown()
