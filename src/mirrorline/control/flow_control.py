"""What operators ask of a flow at run time, kept in its target cluster.

The control topic (`mirrorline.control.internal`, compacted, one partition, on
the target of each flow) holds three kinds of records per flow, written by
the operator's commands (`mirrorline topics|groups|pause|resume|stop|start|
restart|positions`) and followed by every driver of the flow
(`engine.control_watch`):

- **list changes**: a pattern added to, or removed from, one of the flow's four
  lists (`topics`, `topics.exclude`, `groups`, `groups.exclude`). The
  effective list is the configuration's list (the file's value or the
  default) without the removed patterns, plus the added ones, in that order
  (`ListChanges.apply`). As in the file, a name is replicated when it matches
  an effective `topics` entry and no effective `topics.exclude` entry.
- **the wanted state**: `running` (the default), `paused` or `stopped`, and a
  restart counter that `restart` increments;
- **a position request**: offsets the flow's next run starts from, written by
  `positions set` while the flow is stopped. The leading driver saves them as
  the flow's progress and then deletes the request.

One record per key, so that concurrent commands about different patterns
never overwrite each other, and compaction keeps the latest word on each.
Format version 1 (JSON, UTF-8, sorted keys):

- list change: key ``{"entry": "orders.*", "flow": "a->b", "kind": "list",
  "list": "topics"}``, value ``{"change": "add"|"remove", "updated_ms": …,
  "version": 1}``; a tombstone withdraws the change;
- state: key ``{"flow": "a->b", "kind": "state"}``, value ``{"restarts": 0,
  "state": "paused", "updated_ms": …, "version": 1}``;
- positions: key ``{"flow": "a->b", "kind": "positions"}``, value ``{"id": …,
  "offsets": [["orders", 0, 42], …], "updated_ms": …, "version": 1}``; a
  tombstone once applied.

This module is what the records mean (`ControlFold` folds them into each flow's
`FlowControl`); `control.control_store` reads and writes them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from confluent_kafka import Message

from mirrorline.config.model import FlowConfig

log = logging.getLogger(__name__)

CONTROL_TOPIC = "mirrorline.control.internal"
FORMAT_VERSION = 1

ListName = Literal["topics", "topics.exclude", "groups", "groups.exclude"]
LISTS: tuple[ListName, ...] = ("topics", "topics.exclude", "groups", "groups.exclude")
State = Literal["running", "paused", "stopped"]
STATES: tuple[State, ...] = ("running", "paused", "stopped")

SourcePartition = tuple[str, int]


@dataclass(frozen=True)
class ListChanges:
    """The run-time changes to one list: patterns added, and configured ones removed."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def apply(self, configured: Iterable[str]) -> tuple[str, ...]:
        """The effective list: `configured` without `removed`, then `added`."""
        kept = [e for e in configured if e not in self.removed]
        return tuple(kept + [e for e in self.added if e not in kept])

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


@dataclass(frozen=True)
class ListView:
    """One list of a flow: as the configuration gives it, as changed at run time, in effect."""

    configured: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    effective: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


@dataclass(frozen=True)
class PositionRequest:
    """Offsets a stopped flow's next run starts from (`positions set`)."""

    id: str
    offsets: Mapping[SourcePartition, int]
    requested_ms: int


@dataclass(frozen=True)
class FlowControl:
    """Everything the control topic says about one flow."""

    flow: str
    state: State = "running"
    restarts: int = 0
    state_changed_ms: int | None = None
    lists: Mapping[ListName, ListChanges] = field(default_factory=dict)
    positions: PositionRequest | None = None

    def changes(self, name: ListName) -> ListChanges:
        return self.lists.get(name, ListChanges())

    def view(self, flow: FlowConfig, name: ListName) -> ListView:
        """`flow`'s list `name` in the file, as changed here, and in effect."""
        configured = configured_list(flow, name)
        changes = self.changes(name)
        return ListView(configured, changes.added, changes.removed, changes.apply(configured))

    def effective(self, flow: FlowConfig) -> FlowConfig:
        """`flow` with its topic and group filters as changed at run time."""
        if not any(self.lists.values()):
            return flow
        topics = flow.topic_filter
        groups = flow.group_filter
        return replace(
            flow,
            topic_filter=replace(
                topics,
                include=self.changes("topics").apply(topics.include),
                exclude=self.changes("topics.exclude").apply(topics.exclude),
            ),
            group_filter=replace(
                groups,
                include=self.changes("groups").apply(groups.include),
                exclude=self.changes("groups.exclude").apply(groups.exclude),
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "restarts": self.restarts,
            "state_changed_ms": self.state_changed_ms,
            "lists": {
                name: {"added": list(c.added), "removed": list(c.removed)}
                for name, c in self.lists.items()
                if c
            },
            "pending_positions": None
            if self.positions is None
            else {
                "id": self.positions.id,
                "requested_ms": self.positions.requested_ms,
                "offsets": [[t, p, o] for (t, p), o in sorted(self.positions.offsets.items())],
            },
        }


class ControlFold:
    """Folds control records, in topic order, into each flow's `FlowControl`."""

    def __init__(self) -> None:
        self._states: dict[str, tuple[State, int, int]] = {}
        self._entries: dict[tuple[str, ListName, str], tuple[str, int]] = {}
        self._positions: dict[str, PositionRequest] = {}

    def add(self, msg: Message) -> None:
        try:
            key = json.loads(msg.key() or b"")
            flow, kind = key["flow"], key["kind"]
            value = None if msg.value() is None else json.loads(msg.value() or b"")
            if value is not None and value.get("version") != FORMAT_VERSION:
                return
            if kind == "list" and key["list"] in LISTS:
                slot = (flow, key["list"], str(key["entry"]))
                if value is None:
                    self._entries.pop(slot, None)
                elif value["change"] in ("add", "remove"):
                    self._entries[slot] = (value["change"], msg.offset() or 0)
            elif kind == "state":
                if value is None:
                    self._states.pop(flow, None)
                elif value["state"] in STATES:
                    state: State = value["state"]
                    self._states[flow] = (
                        state,
                        int(value.get("restarts", 0)),
                        int(value["updated_ms"]),
                    )
            elif kind == "positions":
                if value is None:
                    self._positions.pop(flow, None)
                else:
                    self._positions[flow] = PositionRequest(
                        id=str(value["id"]),
                        offsets={(str(t), int(p)): int(o) for t, p, o in value["offsets"]},
                        requested_ms=int(value["updated_ms"]),
                    )
        except (TypeError, ValueError, KeyError, AttributeError):
            log.warning(
                "%s offset %s is not a control record, skipped", CONTROL_TOPIC, msg.offset()
            )

    def flow(self, name: str) -> FlowControl:
        state: State = "running"
        restarts, changed = 0, None
        if name in self._states:
            state, restarts, when = self._states[name]
            changed = when
        added: dict[str, list[tuple[int, str]]] = {}
        removed: dict[str, list[tuple[int, str]]] = {}
        for (flow, list_name, entry), (change, offset) in self._entries.items():
            if flow == name:
                (added if change == "add" else removed).setdefault(list_name, []).append(
                    (offset, entry)
                )
        lists = {
            n: ListChanges(
                added=tuple(e for _, e in sorted(added.get(n, []))),
                removed=tuple(e for _, e in sorted(removed.get(n, []))),
            )
            for n in LISTS
        }
        return FlowControl(
            flow=name,
            state=state,
            restarts=restarts,
            state_changed_ms=changed,
            lists={n: c for n, c in lists.items() if c},
            positions=self._positions.get(name),
        )


def configured_list(flow: FlowConfig, name: ListName) -> tuple[str, ...]:
    """The list as the configuration gives it (the file's value or the default)."""
    filt = flow.topic_filter if name.startswith("topics") else flow.group_filter
    return filt.exclude if name.endswith(".exclude") else filt.include
