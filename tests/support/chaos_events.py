"""What a chaos run does to the clusters and the replicators, one event at a time.

A schedule is a list of events, written `kind[:cluster[:seconds]]` and joined
by commas, e.g. `rolling-restart,leader-kill:east,outage:west:60,driver-kill`:

- `rolling-restart[:ALIAS]`: every node of the cluster (both clusters when no
  alias is given; their nodes `i` together), one node number after the other,
  is stopped cleanly and started again, and the next waits until no partition
  is under-replicated, as an operator's rolling restart does;
- `broker-restart:ALIAS`: one node of the cluster (the next in turn: node 1
  first, then 2, ...) stopped cleanly and started again, until no partition is
  under-replicated;
- `leader-kill:ALIAS`: SIGKILL to the node leading partition 0 of the flow's
  topic there (its source topic, or on the target its copy), then started
  again once another node leads it;
- `controller-kill:ALIAS`: SIGKILL to the active KRaft controller, started
  again once another node is the controller;
- `outage:ALIAS:SECONDS`: every node stopped, the cluster away for that long,
  then started again;
- `driver-kill`: SIGKILL to the replicators (Mirrorline's driver with its
  Spark JVM, and MirrorMaker 2 when it runs beside), started again at once.

Every broker event ends as an operator's procedure does: once no partition
is under-replicated, leadership is moved back to the preferred replicas
(`DevClusters.settle`). Left to the brokers, it would move
up to 5 minutes later, and the stall every client feels then would fall
outside the event. The harness (`chaos_harness`) measures around each event;
this module only does it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from mirrorline.devcluster import DevClusterError, DevClusters
from support.wait import wait_until

Say = Callable[[str], None]

KINDS = (
    "rolling-restart",
    "broker-restart",
    "leader-kill",
    "controller-kill",
    "outage",
    "driver-kill",
)
IN_SYNC_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Event:
    kind: str
    cluster: str = ""  # the alias a broker event acts on; "" for driver-kill (and both clusters)
    seconds: float = 0.0  # how long an outage lasts
    at_s: float = 0.0  # not before this many seconds into the run (a timed schedule)

    def __str__(self) -> str:
        parts = [self.kind] + ([self.cluster] if self.cluster else [])
        return ":".join(parts + ([f"{self.seconds:g}"] if self.kind == "outage" else []))


def parse_schedule(text: str, aliases: tuple[str, ...]) -> list[Event]:
    """Events of `kind[:cluster[:seconds]],...`; ValueError naming the first wrong one."""
    events = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, _, rest = item.partition(":")
        cluster, _, seconds = rest.partition(":")
        if kind not in KINDS:
            raise ValueError(f"unknown chaos event {item!r}: choose from {', '.join(KINDS)}")
        if cluster and cluster not in aliases:
            raise ValueError(f"chaos event {item!r}: no cluster {cluster!r} ({', '.join(aliases)})")
        needs_cluster = kind in ("broker-restart", "leader-kill", "controller-kill", "outage")
        if needs_cluster and not cluster:
            raise ValueError(f"chaos event {item!r} needs a cluster: {kind}:ALIAS")
        if kind == "driver-kill" and cluster:
            raise ValueError(f"chaos event {item!r}: driver-kill takes no cluster")
        if kind == "outage":
            try:
                length = float(seconds)
            except ValueError:
                raise ValueError(
                    f"chaos event {item!r} needs its length: outage:ALIAS:SECONDS"
                ) from None
            events.append(Event(kind, cluster, length))
        else:
            events.append(Event(kind, cluster))
    return events


class BrokerChaos:
    """The broker events, on the dev clusters of `dev` (started with `die_with_parent`)."""

    def __init__(self, dev: DevClusters, say: Say) -> None:
        self.dev = dev
        self.say = say
        self._turns: dict[str, int] = {}  # per alias: the last node broker-restart took

    def broker_restart(self, alias: str) -> None:
        node = self._turns.get(alias, 0) % len(self.dev.get(alias).nodes) + 1
        self._turns[alias] = node
        self.say(f"    restarting node {node} of {alias}")
        self.dev.stop(alias, node)
        self.dev.start(alias, node, die_with_parent=True)
        self._in_sync([alias])

    def rolling_restart(self, aliases: list[str]) -> None:
        nodes = max(len(self.dev.get(alias).nodes) for alias in aliases)
        for node in range(1, nodes + 1):
            present = [a for a in aliases if node <= len(self.dev.get(a).nodes)]
            began = time.monotonic()
            self.dev.stop_nodes([(alias, node) for alias in present])
            stopped = time.monotonic()
            self.dev.start_nodes([(alias, node) for alias in present], die_with_parent=True)
            started = time.monotonic()
            self._in_sync(present)
            self.say(
                f"    node {node} of {', '.join(present)}: stopped in {stopped - began:.1f} s, "
                f"started in {started - stopped:.1f} s, "
                f"in sync after {time.monotonic() - started:.1f} s"
            )

    def leader_kill(self, alias: str, topic: str) -> None:
        victim = self.dev.leader_of(alias, topic, 0)
        self.say(f"    SIGKILL to node {victim} of {alias}, leader of {topic}[0]")
        self._kill(alias, victim)
        wait_until(
            lambda: _or_none(self.dev.leader_of, alias, topic, 0) not in (None, victim),
            timeout=60,
            what=f"a new leader of {alias}/{topic}[0] after node {victim} was killed",
        )
        self.dev.start(alias, victim, die_with_parent=True)
        self._in_sync([alias])

    def controller_kill(self, alias: str) -> None:
        victim = self.dev.active_controller(alias)
        self.say(f"    SIGKILL to node {victim} of {alias}, the active controller")
        self._kill(alias, victim)
        wait_until(
            lambda: _or_none(self.dev.active_controller, alias) not in (None, victim),
            timeout=60,
            what=f"a new active controller of {alias} after node {victim} was killed",
        )
        self.dev.start(alias, victim, die_with_parent=True)
        self._in_sync([alias])

    def outage(self, alias: str, seconds: float) -> None:
        self.say(f"    {alias} stops for {seconds:g} s")
        self.dev.stop(alias)
        time.sleep(seconds)  # the outage itself, not a synchronisation
        self.dev.start(alias, die_with_parent=True)
        self._in_sync([alias])

    def _kill(self, alias: str, node: int) -> None:
        pid = self.dev.get(alias).node(node).pid
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        self.dev.stop(alias, node)  # reaps it, waits for its ports, marks it stopped

    def _in_sync(self, aliases: list[str]) -> None:
        """Wait until no partition is under-replicated, then move leadership back to the
        preferred replicas, so that the event's effects end with it (the brokers would
        otherwise move it up to 5 minutes later, in a window without an event)."""
        deadline = time.monotonic() + IN_SYNC_TIMEOUT_S
        for alias in aliases:
            try:
                moved = self.dev.settle(alias, deadline, self.say)
            except DevClusterError as exc:
                raise AssertionError(
                    f"{exc} ({IN_SYNC_TIMEOUT_S:.0f} s after a node came back)"
                ) from None
            self.say(f"    {alias}: leadership of {len(moved)} partition(s) moved back")


def _or_none(ask: Callable[..., int], *args: object) -> int | None:
    """`ask(*args)`, or None while the cluster has no answer (an election is under way)."""
    try:
        return ask(*args)
    except DevClusterError:
        return None
